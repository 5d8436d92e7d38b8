"""What a free-text reply answers: the line it ends on, not the reasoning before it.

A model asked for JSON sometimes writes prose instead ("Let me think ... Final answer:
Porto"), and the reasoning may itself say "answer:" or quote a brace. The answer is what
follows the reply's *last* "Answer:" line (a "Final answer:" or a markdown-bold one
too); without one, the reply's last non-empty line.
"""

from __future__ import annotations

import re

#: a line that starts with "Answer:" or "Final answer:" (markdown marks before it allowed)
ANSWER_LINE = re.compile(r"(?:^|\n)[ \t*#]*(?:final\s+)?answer\s*\**\s*:\**", re.IGNORECASE)


def final_answer(text: str) -> str:
    """The answer of a free-text reply: after its last answer line, else its last
    non-empty line; "" for a blank reply or an answer line with nothing after it."""
    marks = list(ANSWER_LINE.finditer(text))
    if marks:  # an answer line with nothing after it answers nothing
        return text[marks[-1].end() :].strip().strip("* ").strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
