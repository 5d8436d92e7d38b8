"""Whether names with diacritics are kept whole by the heuristic structures::

    python -m studies.names ../shared/data/ku/ku-dev.json --format qaset

The set's names are found without memstrata's own name rules (that would be circular):
maximal runs of capitalised words (first letter upper case, any script) joined by single
spaces or hyphens, of which at least one word has a letter outside ASCII. A run's first
word is dropped when it opens a sentence and the set also writes it in lower case ("Does
Raphaël") or the rest of the run stands alone elsewhere (a greeting or a title before a
name: "Ahoj Tomáš", "Captain Ayşe"). Runs that a reader judged no names (``NOT_NAMES``:
a greeting, a currency sign) are left out; both lists are printed to be audited.
Each sample is built by the
``mnemis``, ``personalai`` and ``mindgraph`` recipes (heuristic tier, as in
studies/structures.py) and, for each of its names and each design, the study asks:

* **show**: ``show(name)`` returns a node of the design that spells the name (as in
  records, below), also with the name typed NFD-decomposed and upper-cased;
* **records**: an entity record of the design (Mnemis entities and categories,
  PersonalAI objects, MindGraph entity nodes) is called the name (NFC, casefolded) or
  holds it as a run of whole words.

It reads only ``show`` and the stores' records, so it measures any version of the
library: put that version's ``src`` first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from studies.structures import built, label, records

DESIGNS = ("mnemis", "personalai", "mindgraph")
_WORD = re.compile(r"[^\W\d_]+")
_TERM = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")  # combining marks stay in a word
_OPENS = re.compile(r"(?:^|[.!?…:]\s*)[\"'“‘(]*$")  # text before a sentence's first word


def key(text: str) -> list[str]:
    """A name's words as compared: NFC, casefolded, split at anything not a letter."""
    return _TERM.findall(unicodedata.normalize("NFC", text).casefold())


def runs(text: str) -> Iterable[tuple[list[str], bool]]:
    """Maximal runs of capitalised words joined by one space or hyphen: (words, whether
    the run opens a sentence)."""
    run: list[str] = []
    opens = False
    end = 0
    for m in _WORD.finditer(text):
        word, gap = m.group(), text[end : m.start()]
        joined = bool(run) and gap in (" ", "-")
        if run and not (joined and word[0].isupper()):
            yield run, opens
            run = []
        if word[0].isupper():
            if not run:
                opens = bool(_OPENS.search(text[: m.start()]))
            run.append((gap if run else "") + word)
        end = m.end()
    if run:
        yield run, opens


#: runs this study's reader judged not to be names of this set (printed with the list)
NOT_NAMES = {
    "Grüezi": "a Swiss greeting, quoted",
    "Kč": "the Czech crown's symbol",
    "Veselé Vánoce": "a season's greeting",
    "Auntie Zoë": "a title before Zoë, who is in the list",
}


def names(samples: dict[str, list[str]]) -> dict[str, list[str]]:
    """The names with diacritics of each sample's texts (see the module), in order."""
    texts = [t for ts in samples.values() for t in ts]
    lower = {w for t in texts for w in _WORD.findall(t) if w.islower()}
    whole = {"".join(r) for t in texts for r, _ in runs(t)}
    out: dict[str, list[str]] = {}
    for ns, ts in samples.items():
        found: dict[str, None] = {}
        for words, opens in (r for t in ts for r in runs(t)):
            rest = "".join(words[1:]).lstrip(" -")
            if opens and (words[0].lower() in lower or rest in whole):
                words = [rest]
            name = "".join(words)
            if name and not name.isascii() and name not in NOT_NAMES:
                found[name] = None
        out[ns] = list(found)
    return out


def held(name: str, labels: Iterable[str]) -> bool:
    """Whether a label is the name or holds it as a run of whole words."""
    want = key(name)
    n = len(want)
    return any(
        any(words[i : i + n] == want for i in range(len(words) - n + 1))
        for words in map(key, labels)
    )


async def shown(m: Any, ns: str, name: str) -> list[set[str]]:
    """The designs whose ``show`` finds the name as typed, NFD-decomposed and upper-cased:
    a top node of the design that spells the name (not an id it was folded into)."""
    typed = (name, unicodedata.normalize("NFD", name), name.upper())
    nodes = [await m.show(t, namespace=ns) for t in typed]
    return [{n.design for n in found if held(name, [n.text])} for found in nodes]


@dataclass
class Found:
    """Per design: names asked, found by show, found in records, and what missed."""

    names: int = 0
    show: int = 0
    records: int = 0
    equal: int = 0  # of ``records``: a record called the name, not only holding it
    typed: list[int] = field(default_factory=lambda: [0, 0, 0])  # show: as typed/NFD/UPPER
    misses: list[str] = field(default_factory=list)


async def measure(path: str, fmt: str) -> tuple[dict[str, list[str]], dict[str, Found]]:
    """(each sample's names, per design: names found by show, in records, and misses)."""
    from memstrata.eval.qa.formats import load

    per_sample = names({s.id: [t.text for t in s.turns] for s in load(path, fmt)})
    result = {d: Found() for d in DESIGNS}
    async for m, sample in built(path, fmt):
        ns = sample.id
        recs = records(m, ns)
        labels = {
            "mnemis": [label(r) for r in recs["mnemis entities"] + recs["mnemis categories"]],
            "personalai": [label(r) for r in recs["personalai"]],
            "mindgraph": [label(r) for r in recs["mindgraph"] if r.node_type == "entity"],
        }
        for name in per_sample[ns]:
            typed = await shown(m, ns, name)
            for d in DESIGNS:
                r = result[d]
                r.names += 1
                ok = [all(d in t for t in typed), held(name, labels[d])]
                r.show += ok[0]
                r.typed = [n + (d in t) for n, t in zip(r.typed, typed, strict=True)]
                r.records += ok[1]
                r.equal += any(key(x) == key(name) for x in labels[d])
                if not all(ok):
                    how = "".join("+" if d in t else "-" for t in typed)
                    near = sorted({x for x in labels[d] if set(key(x)) & set(key(name))})
                    where = f"show {how} (typed/NFD/UPPER), records {near[:6]}"
                    r.misses.append(f"{ns} {name!r}: {where}")
    return per_sample, result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--format", default="locomo")
    args = parser.parse_args(argv)
    per_sample, result = asyncio.run(measure(args.file, args.format))
    print("not names:", "; ".join(f"{k} ({v})" for k, v in NOT_NAMES.items()))
    for ns, found in per_sample.items():
        print(f"{ns}: {len(found)} names: {', '.join(found)}")
    for d, r in result.items():
        each = "/".join(map(str, r.typed))
        print(
            f"{d}: {r.names} names, show {r.show} (as typed/NFD/UPPER {each}),"
            f" exact in records {r.records} ({r.equal} a record's whole name)"
        )
        for miss in r.misses:
            print(f"  {miss}")


if __name__ == "__main__":
    main()
