"""The heuristic tier's supersession: a later statement of a new value of a relation that
holds one value at a time makes the earlier fact invalid (Graphiti's edge invalidation,
which the paper's llm tier does with its contradiction prompt).

Without a model the relations are read off the sentence by a small lexicon of phrases
that hold one value per person at a time:

* ``lives in``: live(s/d) in, moved / relocated / posted / transferred to, settled in,
  found or rented or bought a room / flat / apartment / house / place in;
* ``works at``: work(s/ed) at or for, joined, employed at or by, got or started a job at
  or with, hired by.

The subject is the mention just before the phrase (a first-person "I" is the speaker);
the object, the first mention after it in the same sentence. Questions and negated
statements ("I don't live in Leeds any more") state no value. A fact with a relation
read this way supersedes the valid facts of the same subject and relation with another
object that were stated before it (by the facts' times; without times, by order of
arrival); stated before an existing one, it is superseded by it. The superseded fact
keeps its row: ``invalid_at`` is the new fact's time and ``replaced_by`` names it.
"""

from __future__ import annotations

import re
from datetime import datetime

from memstrata.designs.mnemis.extract import Mention
from memstrata.models import Fact

RELATIONS: dict[str, re.Pattern[str]] = {
    "lives in": re.compile(
        r"\b(?:(?:live|lives|lived|living)\s+in|(?:moved|moving|move|relocated|relocating|"
        r"posted|transferred)\s+(?:back\s+)?to|(?:settled|settling)\s+(?:down\s+)?in|"
        r"(?:found|rented|renting|bought)\s+(?:a|an|my|our)\s+(?:new\s+)?(?:room|flat|"
        r"apartment|house|place|home)\s+in)\b",
        re.IGNORECASE,
    ),
    "works at": re.compile(
        r"\b(?:(?:work|works|worked|working)\s+(?:at|for)|joined|(?:employed|hired)\s+"
        r"(?:at|by)|(?:got|started|took|landed)\s+(?:a|an|the)?\s*(?:new\s+)?job\s+"
        r"(?:at|with))\b",
        re.IGNORECASE,
    ),
}
_NEGATION = re.compile(r"\b(?:not|never|no longer|n't|don't|didn't|won't|can't)\b[^.!?]{0,20}$")


def read_relation(
    text: str, start: int, end: int, mentions: list[Mention], ids: dict[int, str]
) -> tuple[str, str, str] | None:
    """(relation, subject id, object id) stated by the sentence ``text[start:end]``;
    ``ids`` maps a mention's position in ``mentions`` to its entity. None when the
    sentence states none (or asks, or denies)."""
    sentence = text[start:end]
    if sentence.rstrip().endswith("?"):
        return None
    for relation, pattern in RELATIONS.items():
        for match in pattern.finditer(sentence):
            at, to = start + match.start(), start + match.end()
            if _NEGATION.search(text[start:at]):
                continue
            before = [i for i, m in enumerate(mentions) if m.end <= at]
            after = [i for i, m in enumerate(mentions) if m.start >= to]
            if not before or not after:
                continue
            subject, obj = ids.get(before[-1]), ids.get(after[0])
            if subject and obj and subject != obj:
                return relation, subject, obj
    return None


def supersede(new: Fact, facts: list[Fact]) -> list[Fact]:
    """Apply the rule above between ``new`` and ``facts`` (the same subject's facts);
    returns the facts changed (``new`` among them when it is the one superseded)."""
    changed: list[Fact] = []
    for old in facts:
        if (
            old.id == new.id
            or old.relation != new.relation
            or old.subject_id != new.subject_id
            or old.object_id == new.object_id
            or old.invalid_at is not None
        ):
            continue
        later, earlier = (new, old) if _when(new) >= _when(old) else (old, new)
        if earlier.invalid_at is None:
            earlier.invalid_at = later.valid_at or datetime.now().astimezone()
            earlier.replaced_by = [*earlier.replaced_by, later.id]
            changed.append(earlier)
        if earlier is new:
            break
    return changed


def _when(fact: Fact) -> float:
    return fact.valid_at.timestamp() if fact.valid_at else float("inf")
