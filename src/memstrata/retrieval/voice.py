"""A question about a speaker, put in that speaker's own voice.

People speak of themselves in the first person: "I'm from Houston", "my favourite sport
is skiing". A question about one of them names her in the third person ("What country
does Elise live in?", "What are Kate's hobbies?"), and an embedding of the question sits
closer to other turns that name her than to her own words about herself. Read in her
voice ("What country do I live in?", "What are my hobbies?") the question meets those
words. :func:`in_voice` makes that reading with English function words only: the name
becomes "I", "me" or "my", and the verb next to it agrees.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: a verb before the name that asks about it ("does Elise ..."), and its first-person form
_ASKING = {"does": "do", "is": "am", "was": "was", "has": "have", "did": "did"}
#: a verb after the name ("Elise is ..."), and its first-person form
_STATING = {"is": "am", "was": "was", "has": "have", "does": "do", "doesn't": "don't"}
#: words after which the name is an object ("to Elise", "with Kate")
_OBJECT_AFTER = frozenset(
    "to with for about of from at by on like than and or between among tell told ask asked "
    "give gave meet met call called help helped see saw visit visited".split()
)
_TOKEN = re.compile(r"[\w’'-]+|[^\w\s]")


def in_voice(question: str, names: Iterable[str]) -> str | None:
    """The question with each of ``names`` (one person's names, lowercase) read as the
    first person; None when the question uses none of them."""
    wanted = {n.lower() for n in names if n}
    tokens = _TOKEN.findall(question)
    out: list[str] = []
    changed = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        low = token.lower()
        possessive = low.endswith(("'s", "’s")) and low[:-2] in wanted
        if possessive or low.endswith(("s'", "s’")) and low[:-1] in wanted:
            out.append("my")
            changed = True
        elif low in wanted:
            before = out[-1].lower() if out else ""
            if before in _ASKING:
                out[-1] = _match_case(out[-1], _ASKING[before])
                out.append("I")
            elif before in _OBJECT_AFTER:
                out.append("me")
            else:
                out.append("I")
                after = tokens[i + 1].lower() if i + 1 < len(tokens) else ""
                if after in _STATING:
                    out.append(_STATING[after])
                    i += 1
            changed = True
        else:
            out.append(token)
        i += 1
    if not changed:
        return None
    return _join(out)


def _match_case(original: str, word: str) -> str:
    return word.capitalize() if original[:1].isupper() else word


def _join(tokens: list[str]) -> str:
    text = ""
    for token in tokens:
        if text and (token[:1].isalnum() or token[:1] in "\"'(") and text[-1] not in "(\"'":
            text += " "
        text += token
    return text
