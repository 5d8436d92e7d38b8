"""Names in many languages and scripts, the turns that mention them, and what every
design's heuristic build must find in them (issue 59: text is Unicode everywhere)."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

from memstrata.memory import Memory

#: names by language or script: Latin with diacritics, Greek, Cyrillic, Arabic, Hebrew,
#: Devanagari, Chinese, Japanese, Korean and Thai; a hyphenated name
NAMES: dict[str, tuple[str, ...]] = {
    "french/german": ("Zoë", "Zürich", "Café Noir", "Jean-Luc"),
    "spanish": ("José",),
    "polish": ("Łukasz",),
    "czech": ("Škoda", "Mladá Boleslav", "Plzeň"),
    "danish": ("Århus",),
    "turkish": ("İzmir",),
    "greek": ("Γιώργος", "Αθήνα"),
    "russian": ("Дмитрий", "Москва"),
    "arabic": ("محمد", "القاهرة"),
    "hebrew": ("ירושלים", "דוד"),
    "hindi": ("प्रिया", "दिल्ली"),
    "chinese": ("北京", "王芳"),
    "japanese": ("田中", "東京"),
    "korean": ("서울", "김민준"),
    "thai": ("กรุงเทพ", "สมชาย"),
}
ALL_NAMES = tuple(n for group in NAMES.values() for n in group)
#: English sentences a name stands in: after a preposition, as an object before a date
#: phrase, with a possessive
FRAMES = (
    "Last week I went to {n} with my sister.",
    "I really miss {n} these days.",
    "We talked about {n}'s plans for hours.",
)
#: the issue's own sentences and sentences written in other scripts, with the names each
#: holds (as written)
SAID = {
    "Zoë moved to Zürich and ate crème brûlée at Café Noir with José": (
        "Zoë",
        "Zürich",
        "Café Noir",
        "José",
    ),
    "Łukasz works at Škoda in Mladá Boleslav": ("Łukasz", "Škoda", "Mladá Boleslav"),
    "Дмитрий переехал в Москву в прошлом году.": ("Дмитрий", "Москву"),
    "Ο Γιώργος πήγε χθες στην Αθήνα.": ("Γιώργος", "Αθήνα"),
    "田中さんは東京に住んでいます。": ("田中", "東京"),
}
#: what an ASCII-only tokenizer made of the issue's names ("Caf", "Jos", "Z", "Mlad")
FRAGMENTS = frozenset({"caf", "jos", "z", "mlad", "rich", "ukasz", "koda", "rhus", "zmir"})


def turns() -> list[dict[str, str]]:
    """One turn per name and frame, then the sentences of :data:`SAID`, two speakers."""
    texts = [f.format(n=n) for n in ALL_NAMES for f in FRAMES] + list(SAID)
    return [
        {"id": f"t{i:03d}", "speaker": ("Anna", "Ben")[i % 2], "text": t}
        for i, t in enumerate(texts)
    ]


def expected() -> set[str]:
    """Every name the turns hold, as written."""
    return set(ALL_NAMES) | {n for names in SAID.values() for n in names}


def typed(name: str) -> str:
    """A name as another keyboard types it: decomposed (``u`` and a combining
    diaeresis), in upper case where its script has one."""
    return unicodedata.normalize("NFD", name.upper())


def shown_text(nodes: list[Any]) -> str:
    """Every line of a ``show`` tree."""
    return "\n".join(f"{n.text}\n{shown_text(n.children)}" for n in nodes)


def names_everywhere(
    path: Path, embedder: Any, recipe: str, kind: str, attr: str | None = None
) -> list[Any]:
    """Build ``recipe`` (heuristic tier) over :func:`turns`; with ``attr``, its records of
    ``kind`` hold every expected name exactly (no fragment); ``show`` finds each name as
    written and as another keyboard types it. The records of ``kind`` are returned."""
    with Memory.open(path / "m.db", embedder=embedder, recipe=recipe) as m:
        m.add_many(turns())
        records = m.store.get_records("default", kind, builder=None)
        if attr is not None:
            held = {getattr(r, attr) for r in records}
            assert not expected() - held, sorted(expected() - held)
            assert not {unicodedata.normalize("NFC", h).casefold() for h in held} & FRAGMENTS
        for name in sorted(expected()):
            for asked in (name, typed(name)):
                shown = m.show(asked)
                assert name in shown_text(shown), (asked, shown_text(shown))
        return records
