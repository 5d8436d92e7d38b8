"""A question about a speaker, put in that speaker's own voice.

People speak of themselves in the first person: "I'm from Houston", "my favourite sport
is skiing". A question about one of them names her in the third person ("What country
does Elise live in?", "What are Kate's hobbies?"), and an embedding of the question sits
closer to other turns that name her than to her own words about herself. Read in her
voice ("What country do I live in?", "What are my hobbies?") the question meets those
words. :func:`in_voice` makes that reading with English function words only: the name
becomes "I", "me" or "my", and the verb next to it agrees. A question about two people
at once ("Which cities have both Kate and Elise been to?") is read in each voice after
:func:`apart` leaves the one person in the pair ("Which cities have Kate been to?").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: a verb before the name that asks about it ("does Elise ..."), and its first-person form
_ASKING = {
    "does": "do",
    "is": "am",
    "are": "am",  # a pair narrowed to one ("are Kate and Elise" -> "are Kate")
    "was": "was",
    "were": "was",
    "has": "have",
    "did": "did",
}
#: a verb after the name ("Elise is ..."), and its first-person form
_STATING = {"is": "am", "was": "was", "has": "have", "does": "do", "doesn't": "don't"}
#: words after which the name is an object ("to Elise", "with Kate")
_OBJECT_AFTER = frozenset(
    "to with for about of from at by on like than and or between among tell told ask asked "
    "give gave meet met call called help helped see saw visit visited".split()
)
_TOKEN = re.compile(r"[\w’'-]+|[^\w\s]")
#: what joins two names into a pair ("Kate and Elise", "Kate & Elise", "Kate, Elise")
_JOIN = frozenset({"and", "&", ","})


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
        bare = _bare(low)
        if bare != low and bare in wanted:  # "Kate's", "Lucas'"
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


def apart(question: str, names: Iterable[str], others: Iterable[str]) -> str | None:
    """The question with a pair of people, one named by ``names`` and the other by
    ``others`` ("both Kate and Elise", "Elise and Kate's"), narrowed to the first one;
    None when it holds no such pair."""
    mine = {n.lower() for n in names if n}
    theirs = {n.lower() for n in others if n}
    tokens = _TOKEN.findall(question)
    for i, token in enumerate(tokens):
        j = i + 1
        while j < len(tokens) - 1 and tokens[j].lower() in _JOIN:
            j += 1
        if j == i + 1:  # no joining word after this token
            continue
        first, second = _bare(token), _bare(tokens[j])
        pair = {first.lower(), second.lower()}
        if len(pair) < 2 or not pair & mine or not pair & theirs:
            continue
        kept = first if first.lower() in mine else second
        if second != tokens[j]:  # "Elise and Kate's hobbies": the pair's
            kept += "'s"
        start, end, comma = i, j + 1, False
        if start and tokens[start - 1] == ",":
            start, comma = start - 1, True
        if start and tokens[start - 1].lower() == "both":
            start -= 1
        elif end < len(tokens) and tokens[end].lower() == "both":
            end += 1
        if comma and end < len(tokens) and tokens[end] == ",":
            end += 1
        return _join([*tokens[:start], kept, *tokens[end:]])
    return None


def _bare(token: str) -> str:
    """A name without its possessive ending ("Kate's", "Lucas'")."""
    if token.lower().endswith(("'s", "’s")):
        return token[:-2]
    if token.lower().endswith(("s'", "s’")):
        return token[:-1]
    return token
