"""The heuristic tier's build: no LLM, spans exact by construction.

A text is parsed once, question-agnostically (:func:`parse`): its sentences with their
content terms, the entity mentions (the names of the shared parse,
:func:`memstrata.nlp.names`: named entities and proper nouns in any script, possessives
and greetings off) and the numbers in them.
From that parse:

* **reader** (:func:`question_graph`): the sentences that share the question's terms,
  weighted by how rare each term is in the document (IDF), best first, with their
  neighbours (``context`` sentences either side, for the answer that follows a
  mention), up to ``max_claims`` in all with the few sentences of the whole document
  closest to the question by cosine (an answer in other words than the question's); each
  becomes a ``claim`` node, with ``entity`` nodes for the names and ``stat`` nodes for
  the numbers in them (one node per distinct name or value, linked to every kept claim
  that has it; a date with its time, ``2023-07-15 13:51``, is one value). Edges: entity
  ``mentioned_in`` claim, stat ``stated_in`` claim (claims that share a mention meet at
  its entity), and claim ``followed_by`` the next kept claim (sentence order).
* **memory** (:func:`episode_parts`): every sentence of an episode, question-agnostic.

The operations go through :meth:`ConceptGraph.apply` with the sentence itself as the
``src`` quote, so the same validation runs as on the llm tier and every span is exact.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from memstrata import nlp
from memstrata.designs.mindgraph.graph import ConceptGraph, snake
from memstrata.retrieval.text import content_terms, sentences

_NUMBER = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?(?!\d)"  # a date (and time) is one value
    r"|(?:[$€£]\s?)?\b\d(?:[\d,.:/]*\d)?(?:\s?(?:%|percent|years?|months?|weeks?|days?|hours?|"
    r"minutes?|km|miles?|kg|million|billion|thousand))?"
)
_CLAIM_CHARS = 240
#: part of a stored heuristic graph's key: a change to how the tier builds bumps it, so
#: a graph built by an earlier version is rebuilt rather than read back
VERSION = 3


@dataclass
class Sentence:
    start: int
    end: int
    terms: set[str]
    entities: list[tuple[str, int, int]] = field(default_factory=list)
    numbers: list[tuple[str, int, int]] = field(default_factory=list)


def parse(text: str) -> list[Sentence]:
    """Sentences of ``text`` with terms, entity mentions and numbers (offsets in text)."""
    names = nlp.names(text)
    out = []
    n = 0
    for s, e in sentences(text):
        body = text[s:e]
        sent = Sentence(s, e, set(content_terms(body)))
        while n < len(names) and names[n].start < s:
            n += 1
        while n < len(names) and names[n].end <= e:
            name = names[n]
            n += 1
            if len(name.text) < 2 or (len(name.text) < 3 and nlp.is_latin(name.text[0])):
                continue  # an initial, "Al": too short to stand for anything (in Latin
                # letters; "서울" and "北京" are two syllables)
            sent.entities.append((name.text, name.start, name.end))
        for m in _NUMBER.finditer(body):
            sent.numbers.append((m.group().strip(), s + m.start(), s + m.start() + len(m.group())))
        out.append(sent)
    return out


def idf(parsed: list[Sentence]) -> dict[str, float]:
    df: Counter[str] = Counter(t for s in parsed for t in s.terms)
    n = max(1, len(parsed))
    return {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}


def select(
    parsed: list[Sentence],
    question: str,
    max_claims: int,
    context: int,
    dense: Sequence[int] = (),
) -> list[int]:
    """Indexes of the sentences kept for ``question``, in document order.

    ``dense``: sentence indexes a semantic search of the whole document ranked for the
    question, best first: they take ``len(dense)`` of the ``max_claims`` places, so a
    sentence that answers in other words ("left" for "leave") is in the graph too; the
    other places go by shared words, weighted by rarity (IDF), with their neighbours."""
    terms = set(content_terms(question))
    weights = idf(parsed)
    scores = [sum(weights.get(t, 0.0) for t in terms & s.terms) for s in parsed]
    ranked = sorted((i for i, v in enumerate(scores) if v > 0), key=lambda i: (-scores[i], i))
    extra = [i for i in dict.fromkeys(dense) if 0 <= i < len(parsed)][:max_claims]
    budget = max_claims - len(extra)
    keep: list[int] = []
    chosen: set[int] = set()
    for i in ranked:
        if len(keep) >= budget:
            break
        for j in [i] + [i + d for d in range(-context, context + 1) if d]:
            if 0 <= j < len(parsed) and j not in chosen and len(keep) < budget:
                chosen.add(j)
                keep.append(j)
    keep += [i for i in extra if i not in chosen]
    return sorted(keep)


def claim_text(text: str, s: Sentence) -> str:
    body = " ".join(text[s.start : s.end].split())
    return body if len(body) <= _CLAIM_CHARS else body[: _CLAIM_CHARS - 1] + "…"


def _mention(
    graph: ConceptGraph,
    text: str,
    chunk: int,
    span: tuple[int, int],
    nid: str,
    kind: str,
    content: str,
    claim: str,
    relation: str,
) -> None:
    """Node ``nid`` (added the first time it is met, quoting ``span``) and its edge to
    ``claim``, quoting the same ``span``."""
    a, b = span
    if nid not in graph.nodes:
        node = {"op": "add_node", "id": nid, "type": kind, "content": content}
        graph.apply({**node, "src": text[a:b]}, text, chunk, a, b)
    edge = {"op": "add_edge", "source": nid, "target": claim, "relation": relation}
    graph.apply({**edge, "src": text[a:b]}, text, chunk, a, b)


def question_graph(
    text: str,
    question: str,
    chunks: list[tuple[int, int]],
    *,
    parsed: list[Sentence] | None = None,
    max_claims: int = 40,
    context: int = 1,
    dense: Sequence[int] = (),
) -> ConceptGraph:
    """The reader's heuristic graph over ``text`` for ``question`` (``dense``: see
    :func:`select`)."""
    parsed = parse(text) if parsed is None else parsed
    graph = ConceptGraph(chunks=len(chunks))
    starts = [c[0] for c in chunks]

    def chunk_of(pos: int) -> int:
        return max(0, bisect_right(starts, pos) - 1)

    previous: str | None = None
    for n, i in enumerate(select(parsed, question, max_claims, context, dense)):
        s = parsed[i]
        cid = f"claim_{n + 1}"
        chunk = chunk_of(s.start)
        quote = text[s.start : s.end]
        node = {"op": "add_node", "id": cid, "type": "claim", "content": claim_text(text, s)}
        graph.apply({**node, "src": quote}, text, chunk, s.start, s.end)
        if previous is not None:
            edge = {"op": "add_edge", "source": previous, "target": cid}
            graph.apply(
                {**edge, "relation": "followed_by", "src": quote}, text, chunk, s.start, s.end
            )
        previous = cid
        for name, a, b in s.entities:
            eid = snake(name) or f"entity_{a}"
            _mention(graph, text, chunk, (a, b), eid, "entity", name, cid, "mentioned_in")
        for value, a, b in s.numbers:
            sid = "stat_" + (snake(value) or str(a))
            content = f"{value} in: {claim_text(text, s)[:80]}"
            # one node per value, like a name
            _mention(graph, text, chunk, (a, b), sid, "stat", content, cid, "stated_in")
    # the same name twice in one sentence is one edge: not an error of the tier
    graph.rejected.pop("duplicate_edge", None)
    return graph


@dataclass
class EpisodePart:
    """One node of the memory-mode graph from one episode: a claim, stat or entity.
    ``key`` identifies it (an entity by its folded name, the same in every episode);
    ``label`` is what the node is called: a name, a value, a claim's first words."""

    key: str
    type: str
    content: str
    start: int
    end: int
    claim: str | None = None  # the claim key an entity or stat belongs to
    label: str = ""


#: a claim node's label: the first characters of its sentence
LABEL_CHARS = 60


def episode_parts(text: str, speaker: str | None = None) -> list[EpisodePart]:
    """Claims (sentences), their entities and numbers, question-agnostic. A claim's
    content names its speaker when known (``Maya: ...``): who asserted it is part of
    the claim; the span is the sentence alone."""
    out: list[EpisodePart] = []
    head = f"{speaker}: " if speaker else ""
    for n, s in enumerate(parse(text)):
        ckey = f"claim:{n}"
        body = claim_text(text, s)
        label = body if len(body) <= LABEL_CHARS else body[: LABEL_CHARS - 1].rstrip() + "…"
        out.append(EpisodePart(ckey, "claim", head + body, s.start, s.end, label=label))
        for name, a, b in s.entities:
            key = f"entity:{nlp.name_key(name)}"
            out.append(EpisodePart(key, "entity", name, a, b, ckey, label=name))
        for k, (value, a, b) in enumerate(s.numbers):
            content = f"{value} in: {claim_text(text, s)[:80]}"
            out.append(EpisodePart(f"stat:{n}:{k}", "stat", content, a, b, ckey, label=value))
    return out
