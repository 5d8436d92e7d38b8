"""A chat of two friends full of greetings, interjections and fillers, with the places,
people and things a structure should hold (issue 59, item 5), and the bundled sample."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from memstrata.importers import jsonl
from memstrata.memory import Memory

LINES = (
    ("Zoë", "Hi Jonas! How's Cardiff treating you?"),
    ("Jonas", "Wow, hi! Cardiff is great. Now I live near Roath Park, ten minutes from the bay."),
    ("Zoë", "Yes! Please send photos of the flat."),
    ("Jonas", "Haha okay. Hey, did you hear that Priya moved to Leeds?"),
    ("Zoë", "No way. Now I owe her a visit. Is she still at the hospital?"),
    ("Jonas", "Yeah, she's a nurse at St James's now. Cool, right?"),
    ("Zoë", "Awesome. Thanks for telling me. Oh, and I sold my old van in Bristol."),
    ("Jonas", "Hahaha finally. Well, what do you drive now?"),
    ("Zoë", "A second-hand Škoda from a dealer in Plzeň, believe it or not."),
    ("Jonas", "Hmm, nice. Please tell me you kept the cello at least."),
    ("Zoë", "Nope, I play the viola now. Lessons with Mrs Okafor every Tuesday."),
    ("Jonas", "Okay wow. Sorry, I have to run. Bye Zoë!"),
    ("Zoë", "Bye! Say hi to Mateo and the dog."),
    ("Jonas", "Hey Zoë, good morning! Mateo says hello from Lisbon."),
    ("Zoë", "Morning! Is he working in Lisbon or on holiday?"),
    ("Jonas", "Working, he joined Vattenfall as an engineer in May."),
    ("Zoë", "Yay, congrats to him! Ugh, my train to Manchester is late again."),
    (
        "Jonas",
        "Oops. Yes, the trains are awful. Thanks for the recipe by the way, the curry was great.",
    ),
)


def turns() -> list[dict[str, str]]:
    """The bundled sample conversation, then :data:`LINES`."""
    path = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    sample = [item for _, item in jsonl.read(Path(str(path))) if isinstance(item, dict)]
    chat = [{"id": f"c{i:02d}", "speaker": s, "text": t} for i, (s, t) in enumerate(LINES)]
    return sample + chat


def built(path: Path, embedder: Any, recipe: str, kinds: tuple[str, ...]) -> dict[str, list[Any]]:
    """The records of ``kinds`` after ``recipe``'s heuristic build of :func:`turns`, and
    the texts of the turns (under "texts")."""
    with Memory.open(path / "m.db", embedder=embedder, recipe=recipe) as m:
        m.add_many(turns())
        out: dict[str, list[Any]] = {
            k: m.store.get_records("default", k, builder=None) for k in kinds
        }
        out["texts"] = [e.text for e in m.get([t["id"] for t in turns()])]
        return out
