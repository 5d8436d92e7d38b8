"""The heuristic tier's construction: objects, triplets and theses from text, no LLM.

The paper has an LLM write theses and triplets (appendix A). Without one, a dependency
parser would be the natural tool, but the usual English model (spaCy's
``en_core_web_sm``) is not published on PyPI as a wheel, and memstrata downloads nothing
at run time. So this module uses surface rules, measured through the retrieval figures
in docs/personalai.md:

* **objects**: runs of capitalised words (inner ``of``, ``the``, ``de``, ``&`` ... kept,
  sentence-initial function words dropped) and quoted titles; a run goes on over an
  initial ("Jon L. Luther") and a quoted nickname (Richard Elmer "Dick" Humbert), and a
  sentence that ends with an initial is joined to the next; a sentence with fewer than
  two such names also contributes its content words that do not look like verbs or
  adverbs. A sentence that opens with a personal pronoun gets the passage's first name as
  its subject (``He`` in a biography), a first-person one the episode's speaker, as does
  a sentence with an "I" in it (at that place);
* **triplets**: the sentence's subject with each later object, the relation being the
  words between them (at most ``MAX_RELATION`` words, the ones nearest the object), and
  each pair of neighbouring objects joined by a short run of words; a relation of
  function words only ("the", "a in") makes none, but for one preposition;
* **theses**: each sentence with at least one object is a thesis over its objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memstrata.retrieval.text import STOPWORDS, sentences

MAX_RELATION = 6
_NAME_WORD = re.compile(r"[A-Z][\w'’.\-]*|[0-9]+[A-Za-z]*")
_WORD = re.compile(r"[\w'’\-]+")
_CONNECT = frozenset("of the de da del di du la le van von der den and & for on upon".split())
_ENDS_WITH_INITIAL = re.compile(r"(?:^|\s)[A-Z]\.$")
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
_PRONOUN_3RD = frozenset("he she it they his her its their him them".split())
_PRONOUN_1ST = frozenset("i my me we our us".split())
# Words after which the next word is a verb, not an object: personal pronouns, and the
# adverbs that sit between a subject and its verb.
_SUBJECTS = frozenset(
    "i you we they he she it who now also still just really never always often finally "
    "recently".split()
)
# A relation of function words only says nothing ("Priya the break", "Daniel a room"),
# but for one preposition joining two neighbouring objects ("room in Carlisle").
_PREPOSITIONS = frozenset("in at of from to with for on by near".split())
# Words that read as verbs, adverbs or fillers rather than objects (lowercase tier only).
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


_OPENERS = frozenset(
    """
    hey hi hello wow oh ah yes yeah no nope thanks thank sure okay ok well so but and or
    however although though after before during since while when where what who why how
    note neither either both today yesterday tomorrow tonight now then also still just
    please congrats congratulations great awesome cool nice sorry lol haha omg good bad
    there here this that these those it its they we you he she i my our your his her
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


def _initial(text: str, tok: re.Match[str], following: str) -> bool:
    """``tok`` is a name's initial: one capital letter after a space, a full stop and a
    space after it ("Jon L. Luther"; not "U.S."), the next word a name, not an opener."""
    a, b = tok.start(), tok.end()
    return (
        b - a == 1
        and tok.group().isupper()
        and (a == 0 or text[a - 1].isspace())
        and re.match(r"\.\s", text[b : b + 2]) is not None
        and following.lower() not in _OPENERS
        and following.lower() not in STOPWORDS
    )


def _nickname(
    text: str, tokens: list[re.Match[str]], j: int, quoted: list[Mention]
) -> tuple[Mention, int] | None:
    """A quoted nickname inside a name (Richard Elmer "Dick" Humbert): the quoted
    mention right after token ``j``, of at most three capitalised words, and the index of
    the name word right after it; None if there is none."""
    rest = text[tokens[j].end() :]
    lead = len(rest) - len(rest.lstrip())
    q = next((m for m in quoted if m.start == tokens[j].end() + lead + 1), None)
    if q is None or not lead or rest[lead] not in '"“':
        return None
    words = q.name.split()
    if len(words) > 3 or not all(_NAME_WORD.fullmatch(w) for w in words):
        return None
    k = next((n for n in range(j + 1, len(tokens)) if tokens[n].start() >= q.end), None)
    if k is None:
        return None
    gap = text[q.end : tokens[k].start()]
    if gap[:1] not in ('"', "”") or gap[1:].strip() or len(gap) < 2:
        return None
    if not _NAME_WORD.fullmatch(tokens[k].group()) or tokens[k].group().lower() in STOPWORDS:
        return None
    return q, k


def name_mentions(text: str, start: int, end: int) -> list[Mention]:
    """Capitalised runs and quoted titles inside ``text[start:end]``."""
    found: list[Mention] = []
    for m in _QUOTED.finditer(text, start, end):
        found.append(Mention(m.group(1).strip(), m.start(1), m.end(1)))
    taken = [(m.start, m.end) for m in found]
    tokens = list(_WORD.finditer(text, start, end))
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if any(a <= tok.start() < b for a, b in taken) or not _NAME_WORD.fullmatch(tok.group()):
            i += 1
            continue
        if tok.group().lower() in STOPWORDS or tok.group().lower() in _PRONOUN_1ST:
            i += 1
            continue
        j = i
        last = i
        while j + 1 < len(tokens):
            nxt = tokens[j + 1]
            nick = _nickname(text, tokens, j, found)
            if nick is not None:
                found.remove(nick[0])
                last = j = nick[1]
                continue
            gap = text[tokens[j].end() : nxt.start()]
            if gap.strip() not in ("", "-", "&") and not _initial(text, tokens[j], nxt.group()):
                break
            if _NAME_WORD.fullmatch(nxt.group()):
                last = j = j + 1
            elif nxt.group().lower() in _CONNECT and j + 2 < len(tokens):
                j += 1
            else:
                break
        if last > i and tokens[i].group().lower() in _OPENERS:
            # "Hey Priya", "Thanks Daniel": a greeting and the person addressed, no object
            # of what is said; "Well New York" keeps the name after the opener
            while i < last and tokens[i].group().lower() in _OPENERS:
                i += 1
            tok = tokens[i]
            if i == last:
                i = last + 1
                continue
        a, b = tok.start(), tokens[last].end()
        name = text[a:b].rstrip(".'’-")
        # A lone capitalised word opening the sentence is no name when it reads like a
        # common word: an opener, a verb or adverb form, or written lower-case elsewhere.
        low = name.lower()
        if (
            last == i
            and not text[start:a].strip()
            and (
                low in _OPENERS
                or low in _NOT_OBJECT
                or low.endswith(("ly", "ing", "ed"))
                or re.search(r"\b" + re.escape(low) + r"\b", text) is not None
            )
        ):
            i = last + 1
            continue
        if name and not name.isdigit():
            found.append(Mention(name, a, a + len(name)))
        i = last + 1
    return sorted(found, key=lambda m: m.start)


def _concepts(text: str, start: int, end: int, taken: list[Mention]) -> list[Mention]:
    """Head nouns, roughly: content words followed by a function word or punctuation."""
    out = []
    toks = list(_WORD.finditer(text, start, end))
    for n, tok in enumerate(toks):
        w = tok.group().lower()
        after = toks[n + 1] if n + 1 < len(toks) else None
        head = (
            after is None
            or after.group().lower() in STOPWORDS
            or bool(text[tok.end() : after.start()].strip())
        )
        before = toks[n - 1].group().lower() if n else ""
        if (
            not head
            or len(w) < 4
            or not w.isalpha()
            or w in STOPWORDS
            or w in _NOT_OBJECT
            or w.endswith(("ly", "ing", "ed"))
            or before in _SUBJECTS  # "I found", "she now works": a verb's place
            or (before in _OPENERS and tok.group()[:1].isupper())  # "Hey Daniel": addressed
            or any(m.start <= tok.start() < m.end for m in taken)
        ):
            continue
        out.append(Mention(w, tok.start(), tok.end()))
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
    for s, e in sentences(text):
        first = _WORD.match(text, s)
        if (
            out
            and _ENDS_WITH_INITIAL.search(text[out[-1][0] : out[-1][1]])
            and first is not None
            and _NAME_WORD.fullmatch(first.group())
            and first.group().lower() not in _OPENERS
            and first.group().lower() not in STOPWORDS
        ):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def extract(text: str, speaker: str | None = None) -> list[Draft]:
    """Objects, triplets and thesis spans of one episode, sentence by sentence."""
    drafts: list[Draft] = []
    topic: str | None = None
    for s, e in _sentences(text):
        names = name_mentions(text, s, e)
        mentions = list(names)
        if len(names) < 2:
            mentions = sorted(names + _concepts(text, s, e, names), key=lambda m: m.start)
        first = _WORD.search(text, s, e)
        head = first.group().lower() if first else ""
        me = next((t for t in _WORD.finditer(text, s, e) if t.group() == "I"), None)
        subject: int | None = None
        if first is not None and head in _PRONOUN_3RD and topic is not None:
            mentions.insert(0, Mention(topic, first.start(), first.end()))
            subject = 0
        elif first is not None and head in _PRONOUN_1ST and speaker:
            mentions.insert(0, Mention(speaker, first.start(), first.end()))
            subject = 0
        elif me is not None and speaker:
            # "Big news: I got posted to Lancaster": the speaker is the subject
            subject = sum(1 for m in mentions if m.start < me.start())
            mentions.insert(subject, Mention(speaker, me.start(), me.end()))
        elif mentions:
            subject = 0
        if topic is None and names:
            topic = names[0].name
        if not mentions:
            continue
        draft = Draft(s, e, text[s:e], mentions)
        pairs: dict[tuple[int, int], str] = {}
        if subject is not None:
            for j in range(subject + 1, len(mentions)):
                rel = _relation(text, mentions[subject].end, mentions[j].start)
                if rel and mentions[j].name.casefold() != mentions[subject].name.casefold():
                    pairs[(subject, j)] = rel
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
