"""LLM-free extraction for the ``heuristic`` tier: sentences, entity mentions, facts.

Method (no tagger, no model, a few microseconds per turn):

* **speakers** are entities; first-person words ("I", "I'm", "me", "my", "we") in a turn
  are mentions of its speaker;
* **names**: runs of capitalised words with only spaces between them (a comma ends a
  name: "Woah, Jon"; so does "I'm"), except a single capitalised word that opens a
  sentence ("Hey", "Keep", "Looks"), unless it is a known speaker's name; a word opening
  a sentence before a speaker's name is a greeting, not part of it ("Woohoo Melanie");
* **activities**: an "-ing" word after a cue such as "went", "love", "into" ("went
  *camping*", "into *hiking*");
* **noun phrases**: up to three content words right after a determiner or possessive
  ("my *pottery class*", "the *beach*", "a *painting*"), stopping at punctuation or a
  function word; a short list of empty nouns ("time", "lot", "way") is skipped;
* **keys**: a mention's identity is its lower-cased words, leading determiners dropped and
  the last word singularised, so "the Beach" and "beaches" meet.

A sentence that mentions two or more entities becomes a fact; ``docs/benchmarks.md``
reports what this extraction yields on LoCoMo.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from memstrata.retrieval.text import STOPWORDS, sentences

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’\-]*|\d+")

DETERMINERS = frozenset(
    "a an the my your his her our their this that these those some any another every "
    "each its new first last".split()
)
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours"})
INTERJECTIONS = frozenset(
    """hey hi hello thanks thank wow yeah yes yep oh ah sure congrats congratulations great
    awesome haha lol omg ok okay cool nice sounds good glad sorry love definitely absolutely
    totally really well so right true exactly aw aww bye see take enjoy hope agreed amazing
    no not please what how why when where who which whoa hmm um yay btw anyway also""".split()
)
ACTIVITY_CUES = frozenset(
    """went go goes going love loves loved enjoy enjoys enjoyed like likes liked started
    start starts tried try into about of for doing did do does done took take""".split()
)
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
_OPENERS = STOPWORDS | INTERJECTIONS | DETERMINERS


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
    """Identity of a name for de-duplication: case-folded, determiners off, singular.
    Cached: a long episode repeats the same few names thousands of times."""
    toks = [t.replace("’", "'") for t in _TOKEN.findall(name.casefold())]
    while toks and toks[0] in DETERMINERS:
        toks = toks[1:]
    toks = [t[:-2] if t.endswith("'s") else t for t in toks]
    if toks:
        toks[-1] = singular(toks[-1])
    return " ".join(toks)


@dataclass
class Mention:
    name: str
    start: int
    end: int
    speaker: bool = False

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
    even where they open a sentence.
    """
    known = names | ({speaker.lower()} if speaker else set())
    out = []
    for s_start, s_end in sentences(text):
        found: list[Mention] = []
        toks = [
            (m.group(), m.start() + s_start, m.end() + s_start)
            for m in _TOKEN.finditer(text[s_start:s_end])
        ]
        if speaker and any(_first_person(t.lower()) for t, _, _ in toks):
            first = next(t for t in toks if _first_person(t[0].lower()))
            found.append(Mention(speaker, first[1], first[2], speaker=True))
        i = 0
        while i < len(toks):
            word, start, _ = toks[i]
            low = word.lower()
            if (
                low.endswith("ing")
                and len(low) >= 6
                and i > 0
                and toks[i - 1][0].lower() in ACTIVITY_CUES
                and low not in STOPWORDS
                and low not in VAGUE_VERBS
            ):
                found.append(Mention(word, start, toks[i][2]))
                i += 1
                continue
            if word[0].isupper() and not _first_person(low) and low not in DETERMINERS:
                j = i + 1
                while (
                    j < len(toks)
                    and toks[j][0][0].isupper()
                    and not _first_person(toks[j][0].lower())
                    and _adjacent(text, toks[j - 1][2], toks[j][1])
                ):
                    j += 1
                run = toks[i:j]
                if i == 0 and low not in known:
                    if len(run) == 1:
                        run = []  # "Keep", "Looks", "Seeing": a capital opening a sentence
                    elif run[1][0].lower() in known:
                        run = run[1:]  # "Woohoo Melanie", "Go Jon": a speaker greeted
                while run and run[0][0].lower() in _OPENERS:
                    run = run[1:]
                if run:
                    found.append(Mention(text[run[0][1] : run[-1][2]], run[0][1], run[-1][2]))
                i = max(j, i + 1)
                continue
            if low in DETERMINERS:
                j = i + 1
                while (
                    j < len(toks)
                    and j - i <= 3
                    and toks[j][0].lower() not in STOPWORDS
                    and toks[j][0].lower() not in DETERMINERS
                    and not toks[j][0][0].isupper()
                    and not toks[j][0].isdigit()
                    and _adjacent(text, toks[j - 1][2], toks[j][1])
                    and not (j > i + 1 and toks[j][0].lower().endswith(("ed", "ly")))
                ):
                    j += 1
                run = [t for t in toks[i + 1 : j]]
                while run and run[-1][0].lower() in EMPTY_NOUNS:
                    run = run[:-1]
                while run and run[0][0].lower() in EMPTY_NOUNS | INTERJECTIONS:
                    run = run[1:]
                if run and len(run[-1][0]) > 2:
                    found.append(Mention(text[run[0][1] : run[-1][2]], run[0][1], run[-1][2]))
                i = max(j, i + 1)
                continue
            i += 1
        seen: set[str] = set()
        unique = []
        for m in found:
            if m.key and m.key not in seen:
                seen.add(m.key)
                unique.append(m)
        out.append(SentenceMentions(s_start, s_end, unique))
    return out


def _first_person(low: str) -> bool:
    """ "I", "me", ... and the contractions "I'm", "I've", "I'll", "I'd"."""
    return low in FIRST_PERSON or low.startswith(("i'", "i’"))


def _adjacent(text: str, end: int, start: int) -> bool:
    """Only whitespace between two tokens: a comma or dash ends a noun phrase."""
    return text[end:start].strip() == ""
