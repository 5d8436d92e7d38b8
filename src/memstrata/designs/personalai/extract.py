"""The heuristic tier's construction: objects, triplets and theses from text, no LLM.

The paper has an LLM write theses and triplets (appendix A). Without one, this module
reads the shared parse (:mod:`memstrata.nlp`, spaCy's small English pipeline), measured
through the retrieval figures in docs/personalai.md:

* **objects**: the parse's names (:func:`memstrata.nlp.names`: named entities and proper
  nouns, in any script, possessive and greetings off), names next to each other over a
  connecting word joined ("Kiss and Tell", "Bank of America"; two known objects joined
  by "and" are split again when stored), and quoted titles; a sentence with fewer than
  two names also contributes the heads of its noun phrases. A sentence that opens with a
  personal pronoun gets the passage's first name as its subject (``He`` in a
  biography), a first-person one the episode's speaker, as does a sentence with an "I"
  in it (at that place);
* **triplets**: each clause of the dependency parse (:func:`memstrata.nlp.clauses`:
  subject, predicate, object) whose subject and object are objects of the sentence, the
  relation being the words between them as written (at most ``MAX_RELATION`` words, the
  ones nearest the object; the predicate's lemma when the object comes first); and each
  pair of neighbouring objects joined by a short run of words; a relation of function
  words only ("the", "a in") makes none, but for one preposition;
* **theses**: each sentence with at least one object is a thesis over its objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memstrata import nlp
from memstrata.retrieval.text import STOPWORDS

MAX_RELATION = 6
_WORD = re.compile(r"[\w'’\-]+")
_CONNECT = frozenset("of the de da del di du la le van von der den and & for on upon".split())
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
_PRONOUN_3RD = frozenset("he she it they his her its their him them".split())
_PRONOUN_1ST = frozenset("i my me we our us".split())
# A relation of function words only says nothing ("Priya the break", "Daniel a room"),
# but for one preposition joining two neighbouring objects ("room in Carlisle").
_PREPOSITIONS = frozenset("in at of from to with for on by near".split())
# Words that read as verbs, adverbs or fillers rather than objects (noun phrase heads).
_NOT_OBJECT = frozenset(
    """
    went got get gets make made makes said say says love loved think thought know knew
    really great good nice well going want wanted feel felt look looked looking take took
    come came give gave tell told keep kept seem seems seemed still even though always
    never sometimes maybe actually totally pretty quite right sure thanks thank yeah okay
    awesome amazing glad happy sounds sound lot lots way time times today yesterday
    tomorrow week year years day days later first last next also known became become
    became including include includes used using use based called named born died
    """.split()
)


@dataclass
class Mention:
    name: str
    start: int
    end: int


@dataclass
class Draft:
    """A sentence's objects, triplets (mention indexes and relation) and its span."""

    start: int
    end: int
    text: str
    mentions: list[Mention] = field(default_factory=list)
    triplets: list[tuple[int, str, int]] = field(default_factory=list)


def name_mentions(text: str, start: int, end: int) -> list[Mention]:
    """The names and quoted titles inside ``text[start:end]`` (see the module)."""
    quoted = [
        Mention(m.group(1).strip(), m.start(1), m.start(1) + len(m.group(1).strip()))
        for m in _QUOTED.finditer(text, start, end)
    ]
    names = [
        Mention(n.text, n.start, n.end)
        for n in nlp.names(text)
        if start <= n.start and n.end <= end and not n.text.isdigit()
    ]
    names = _connected(text, names)
    # a quoted title stands for the names inside it; a nickname stays inside its name
    kept = [q for q in quoted if not any(n.start < q.start and q.end < n.end for n in names)]
    names = [n for n in names if not any(q.start <= n.start and n.end <= q.end for q in kept)]
    return sorted(kept + names, key=lambda m: m.start)


def _connected(text: str, names: list[Mention]) -> list[Mention]:
    """Names with one connecting word between them as one ("Kiss and Tell")."""
    out: list[Mention] = []
    for m in names:
        if out:
            gap = text[out[-1].end : m.start]
            if gap.startswith(" ") and gap.endswith(" ") and gap.strip().lower() in _CONNECT:
                prev = out.pop()
                m = Mention(text[prev.start : m.end], prev.start, m.end)
        out.append(m)
    return out


def _concepts(text: str, start: int, end: int, taken: list[Mention]) -> list[Mention]:
    """The heads of the sentence's noun phrases (the last word of each, lower case)."""
    out = []
    for p in nlp.noun_phrases(text):
        if not (start <= p.start and p.end <= end):
            continue
        spans = nlp.word_spans(text[p.start : p.end])
        if not spans:
            continue
        a, b = p.start + spans[-1][0], p.start + spans[-1][1]
        w = text[a:b].lower()
        if (
            len(w) < 4
            or not w.isalpha()
            or w in STOPWORDS
            or w in _NOT_OBJECT
            or any(m.start < b and a < m.end for m in taken)
        ):
            continue
        out.append(Mention(w, a, b))
    return out


def _relation(text: str, a: int, b: int) -> str:
    """The words of ``text[a:b]``, mentions of other objects included ("Daniel found a
    room in Carlisle", not "Daniel found a in Carlisle"); a long run keeps its first two
    words (the verb, usually) and its last ``MAX_RELATION - 2`` (next to the object)."""
    ws = [m.group() for m in _WORD.finditer(text, a, b)]
    if len(ws) > MAX_RELATION:
        ws = ws[:2] + ws[-(MAX_RELATION - 2) :]
    return " ".join(ws) if says_something(ws) else ""


def says_something(ws: list[str]) -> bool:
    """A relation needs a content word, or is a single preposition."""
    low = [w.lower() for w in ws]
    return any(w not in STOPWORDS for w in low) or (len(low) == 1 and low[0] in _PREPOSITIONS)


def _sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans, a sentence that ends with an initial ("Jon L.", "E. B.") joined to
    the next: the initial is part of a name, not a full stop."""
    out: list[tuple[int, int]] = []
    for s, e in nlp.sentences(text):
        first = _WORD.match(text, s)
        initial = _INITIAL.search(text, out[-1][0], out[-1][1]) if out else None
        if (
            initial is not None
            and initial.group(1).isupper()
            and first is not None
            and first.group()[:1].isupper()
            and first.group().lower() not in STOPWORDS
            and nlp.fold(first.group()) not in nlp.GREETINGS
        ):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


_INITIAL = re.compile(r"(?:^|(?<=\s))([^\W\d_])\.$")


def extract(text: str, speaker: str | None = None) -> list[Draft]:
    """Objects, triplets and thesis spans of one episode, sentence by sentence."""
    drafts: list[Draft] = []
    topic: str | None = None
    said = [c for c in nlp.clauses(text, speaker) if c.object_span is not None]
    for s, e in _sentences(text):
        names = name_mentions(text, s, e)
        mentions = list(names)
        if len(names) < 2:
            mentions = sorted(names + _concepts(text, s, e, names), key=lambda m: m.start)
        first = _WORD.search(text, s, e)
        head = first.group().lower() if first else ""
        me = next((t for t in _WORD.finditer(text, s, e) if t.group() == "I"), None)
        if first is not None and head in _PRONOUN_3RD and topic is not None:
            mentions.insert(0, Mention(topic, first.start(), first.end()))
        elif first is not None and head in _PRONOUN_1ST and speaker:
            mentions.insert(0, Mention(speaker, first.start(), first.end()))
        elif me is not None and speaker:
            # "Big news: I got posted to Lancaster": the speaker, where "I" stands
            at = sum(1 for m in mentions if m.start < me.start())
            mentions.insert(at, Mention(speaker, me.start(), me.end()))
        if topic is None and names:
            topic = names[0].name
        if not mentions:
            continue
        draft = Draft(s, e, text[s:e], mentions)
        pairs: dict[tuple[int, int], str] = {}
        for c in (c for c in said if s <= c.verb_span[0] < e):
            assert c.object_span is not None
            i = _at(mentions, c.subject_span)
            if i is None and speaker and c.subject == speaker:
                i = next((n for n, m in enumerate(mentions) if m.name == speaker), None)
            j = _at(mentions, c.object_span)
            if i is None or j is None or i == j:
                continue
            if mentions[i].name.casefold() == mentions[j].name.casefold():
                continue
            rel = _relation(text, mentions[i].end, mentions[j].start) if i < j else c.predicate
            if rel:
                pairs[(i, j)] = rel
        for j in range(1, len(mentions)):
            a, b = mentions[j - 1], mentions[j]
            between = _WORD.findall(text[a.end : b.start])
            if (
                0 < len(between) <= MAX_RELATION
                and says_something(between)
                and (j - 1, j) not in pairs
                and a.name.casefold() != b.name.casefold()
            ):
                pairs[(j - 1, j)] = " ".join(between)
        draft.triplets = [(a, rel, b) for (a, b), rel in pairs.items()]
        drafts.append(draft)
    return drafts


def _at(mentions: list[Mention], span: tuple[int, int]) -> int | None:
    """The first mention that overlaps ``span``."""
    a, b = span
    return next((n for n, m in enumerate(mentions) if m.start < b and a < m.end), None)
