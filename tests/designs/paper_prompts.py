"""Diffing a rendered prompt against the text a paper prints.

A design's tests keep the paper's appendix prompts as text (facts from the paper), render
the design's prompt with each placeholder's own name as its value, and count what
differs. A difference is allowed only where the test names it with its reason.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from memstrata.llm.fence import FENCE_NOTE, unfence


@dataclass(frozen=True)
class Difference:
    ours: str
    paper: str


def as_sent(rendered: str) -> str:
    """A rendered user prompt without the data fences every prompt of the library adds
    (the tags around stored text, and the note saying what they mean): the text the
    paper's prompt would have been with the same values."""
    text = unfence(rendered)
    for note in (f"{FENCE_NOTE}\n\n", f"\n{FENCE_NOTE}"):
        text = text.replace(note, "")
    return text


def differences(ours: str, paper: str) -> list[Difference]:
    """The stretches where ``ours`` and ``paper`` differ, in order."""
    matcher = difflib.SequenceMatcher(a=ours, b=paper, autojunk=False)
    return [
        Difference(ours[i1:i2], paper[j1:j2])
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op != "equal"
    ]


def differing_chars(diffs: list[Difference]) -> int:
    """Characters differing: for each stretch, the longer of the two sides."""
    return sum(max(len(d.ours), len(d.paper)) for d in diffs)
