"""LLM-free extraction for the ``heuristic`` tier: sentences, entity mentions, facts.

Read off the shared parse (:mod:`memstrata.nlp`; no hand-written capitalisation rule):

* **speakers** are entities; first-person words ("I", "I'm", "me", "my") in a turn are
  mentions of its speaker;
* **names**: :func:`memstrata.nlp.names` (named entities and proper nouns, possessive,
  determiners and greetings off: "Hey Jonas" is Jonas, "Evan's" is Evan; names in any
  script, "Zürich", "Škoda", "Mladá Boleslav", "東京"); the namespace's speakers are
  names wherever they stand;
* **activities**: a verb's "-ing" form after a cue such as "go", "love", "into"
  ("went *camping*", "into *hiking*"), read by lemma;
* **noun phrases**: the parse's noun chunks that follow a determiner or possessive, up
  to three words ("my *pottery class*", "the *beach*"), headed by a noun that is not
  empty ("time", "lot", "way" are skipped), no interjection or number leading;
* **keys**: a mention's identity is its folded words (NFC, case-folded, possessive
  off), leading determiners dropped and the last word singularised, so "the Beach" and
  "beaches" meet.

A sentence that mentions two or more entities becomes a fact; ``docs/benchmarks.md``
reports what this extraction yields on LoCoMo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from memstrata import nlp

DETERMINERS = frozenset(
    "a an the my your his her our their this that these those some any another every "
    "each its new first last".split()
)
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours"})
#: lemmas after which an "-ing" form is an activity ("went camping", "into hiking")
ACTIVITY_CUES = frozenset("go love enjoy like start try into about of for do take".split())
VAGUE_VERBS = frozenset(
    """making doing going having getting trying saying thinking looking feeling being
    seeing telling giving taking coming keeping putting working something anything
    everything nothing""".split()
)
EMPTY_NOUNS = frozenset(
    """time times lot lots way ways bit thing things day days week weeks year years month
    months moment moments one ones kind sort part today tomorrow yesterday while end idea
    ideas other others same rest stuff much many few more most best least whole fun""".split()
)


def singular(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "'s")):
        return word[:-1]
    return word


@lru_cache(maxsize=1 << 16)
def name_key(name: str) -> str:
    """Identity of a name for de-duplication: folded words, determiners off, singular.
    Cached: a long episode repeats the same few names thousands of times."""
    toks = nlp.words(name)
    while toks and toks[0] in DETERMINERS:
        toks = toks[1:]
    if toks:
        toks[-1] = singular(toks[-1])
    return " ".join(toks)


@dataclass
class Mention:
    name: str
    start: int
    end: int
    speaker: bool = False
    #: "speaker", "name", "activity" or "thing" (a noun phrase)
    kind: str = "thing"

    @property
    def key(self) -> str:
        return name_key(self.name)


@dataclass
class SentenceMentions:
    start: int
    end: int
    mentions: list[Mention] = field(default_factory=list)


def mentions(
    text: str, speaker: str | None = None, names: frozenset[str] = frozenset()
) -> list[SentenceMentions]:
    """Entity mentions of ``text``, sentence by sentence, with character spans.

    ``names`` (lower-cased) are known names, such as the speakers of the namespace, kept
    wherever they stand."""
    known = set(names) | ({speaker} if speaker else set())
    (doc,) = nlp.analyse([text])
    found_names = nlp.names(text, known)
    phrases = [p for p in nlp.noun_phrases(text) if p.determined]
    out = []
    for s_start, s_end in nlp.sentences(text):
        found: list[Mention] = []
        if speaker:
            for a, b in nlp.word_spans(text[s_start:s_end]):
                if _first_person(nlp.fold(text[s_start + a : s_start + b])):
                    found.append(Mention(speaker, s_start + a, s_start + b, True, "speaker"))
                    break
        inside = [n for n in found_names if s_start <= n.start and n.end <= s_end]
        found += [Mention(n.text, n.start, n.end, kind="name") for n in inside]
        taken = [(n.start, n.end) for n in inside]
        if doc.has_annotation("DEP"):
            found += _activities(doc, s_start, s_end)
        for p in phrases:
            if s_start <= p.start and p.end <= s_end and not _overlaps(p.start, p.end, taken):
                m = _phrase(text, p.start, p.end, p.head)
                if m is not None:
                    found.append(m)
        seen: set[str] = set()
        unique = []
        for m in sorted(found, key=lambda m: (not m.speaker, m.start)):
            if m.key and m.key not in seen:
                seen.add(m.key)
                unique.append(m)
        out.append(SentenceMentions(s_start, s_end, unique))
    return out


def _activities(doc: object, start: int, end: int) -> list[Mention]:
    """ "-ing" forms after a cue lemma, inside ``[start, end)``."""
    out = []
    toks = [t for t in doc if start <= t.idx < end]  # type: ignore[attr-defined]
    for prev, t in zip(toks, toks[1:], strict=False):
        low = t.lower_
        if (
            low.endswith("ing")
            and len(low) >= 6
            and t.pos_ in ("VERB", "NOUN")
            and prev.lemma_.lower() in ACTIVITY_CUES
            and low not in VAGUE_VERBS
            and not t.is_stop
        ):
            out.append(Mention(t.text, t.idx, t.idx + len(t.text), kind="activity"))
    return out


def _phrase(text: str, start: int, end: int, head: str) -> Mention | None:
    """A noun phrase as a mention: at most its last three words, no number, empty noun or
    interjection leading, a head that is not an empty noun."""
    if head in EMPTY_NOUNS:
        return None
    spans = [(start + a, start + b) for a, b in nlp.word_spans(text[start:end])]
    while spans and (
        text[spans[0][0] : spans[0][1]].isdigit()
        or nlp.fold(text[spans[0][0] : spans[0][1]]) in EMPTY_NOUNS | nlp.GREETINGS
    ):
        spans = spans[1:]
    spans = spans[-3:]
    if not spans or spans[-1][1] - spans[-1][0] <= 2:
        return None
    return Mention(text[spans[0][0] : spans[-1][1]], spans[0][0], spans[-1][1])


def _overlaps(a: int, b: int, spans: list[tuple[int, int]]) -> bool:
    return any(a < y and x < b for x, y in spans)


def _first_person(low: str) -> bool:
    """ "I", "me", ... and the contractions "I'm", "I've", "I'll", "I'd"."""
    return low in FIRST_PERSON or low.startswith("i'")
