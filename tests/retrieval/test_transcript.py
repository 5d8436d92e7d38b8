"""Turns found in a transcript read as plain text (``retrieval/transcript.py``)."""

from __future__ import annotations

from datetime import datetime

from memstrata.retrieval.transcript import turns

CHAT = (
    "Exported chat, two people.\n"
    "[2024-03-15 09:30] Ana Lima: Morning! Did you get the plans?\n"
    "Bob: Yes. Here is what I think:\n"
    "Note: the roof needs work.\n"
    "Step 1: fix the gutters.\n"
    "Step 2: paint.\n"
    "\n"
    "[2024-03-16 10:00] Ana Lima: Great, thanks.\n"
    "Bob: Any time.\n"
    "[not a time] Ana Lima: One more thing.\n"
)


def test_turns_run_from_one_speaker_line_to_the_next() -> None:
    found = turns(CHAT)
    assert found is not None
    assert [t.speaker for t in found] == [None, "Ana Lima", "Bob", "Ana Lima", "Bob", "Ana Lima"]
    # the preamble, then each turn whole: its own lines ("Note:", "Step 1:") stay in it
    assert CHAT[found[0].start : found[0].end] == "Exported chat, two people."
    bob = found[2]
    assert CHAT[bob.start : bob.end] == (
        "Bob: Yes. Here is what I think:\nNote: the roof needs work.\n"
        "Step 1: fix the gutters.\nStep 2: paint."
    )
    assert CHAT[bob.body : bob.end].startswith("Yes. Here")
    assert CHAT[found[1].body : found[1].end] == "Morning! Did you get the plans?"
    # a turn without a time of its own has the time before it; a bad time is no time
    assert [t.at for t in found[1:]] == [
        datetime(2024, 3, 15, 9, 30),
        datetime(2024, 3, 15, 9, 30),
        datetime(2024, 3, 16, 10, 0),
        datetime(2024, 3, 16, 10, 0),
        datetime(2024, 3, 16, 10, 0),
    ]
    assert found[-1].end == len(CHAT.rstrip())


def test_text_that_is_no_transcript_has_no_turns() -> None:
    prose = (
        "The bridge opened in 1932. Engineers: a team of forty.\n"
        "Its span is 503 metres.\nNote: tolls were dropped in 1960.\n"
    )
    assert turns(prose) is None
    assert turns("") is None
    # two speaker lines are a quote, not a conversation
    assert turns("Ana: hi\nBob: hello\n") is None
    # a label that starts lines rarely beside busy speakers is text, not a speaker
    chat = "".join(f"Ana: line {i}\nBob: reply {i}\n" for i in range(20)) + "Where: here\n" * 3
    found = turns(chat)
    assert found is not None and {t.speaker for t in found} == {"Ana", "Bob"}
    assert chat[found[-1].start : found[-1].end].endswith("Where: here")
