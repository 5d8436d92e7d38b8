"""The answer stage (section 3.3): a tool loop over the graph, or evidence windows.

**llm tier.** The D.2 prompt with the graph's JSON and stats, the two D.3 tools, at most
40 tool rounds (:func:`memstrata.llm.tools.run_tool_loop`), and a final JSON object with
the answer, the cited nodes and a confidence. ``lookup_source(node_id)`` returns about
1,000 characters of the source centred on the node's span (widened to whole lines); each
lookup is one of the reading's windows. ``subgraph_summary`` reads the cached reports
(:class:`~.communities.ReportCache`). Every round's tokens are kept.

**heuristic tier.** No model: the windows of the first ``windows`` nodes of two rankings
fused by reciprocal rank: every node by the question's IDF-weighted shared terms, and the
claims by support (cosine to the question plus the share of its words; without an
embedder, the first ranking alone); overlapping windows merged. The answer is the claim
that best supports the question, quoted, or an abstention when none supports it enough
(the engine's extract threshold, :mod:`memstrata.engine.extractive`).

**Compaction ratio** (section 4.2): the first answer call's input over the document, in
the same tokens (the bundled MiniLM word pieces, :func:`count_tokens`) so tiers and
models compare; on the llm tier the backend's own count of the first call is reported
beside it (``usage.first_call_prompt_tokens``).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.designs.mindgraph import prompts
from memstrata.designs.mindgraph.communities import ReportCache
from memstrata.designs.mindgraph.graph import ConceptGraph
from memstrata.designs.mindgraph.heuristic import idf, parse
from memstrata.designs.mindgraph.llm_build import MARGIN, fitted_state, prompt_tokens
from memstrata.designs.mindgraph.provenance import window
from memstrata.engine.contracts import Window
from memstrata.engine.extractive import MIN_SUPPORT
from memstrata.llm.answers import final_answer
from memstrata.llm.base import LLMClient
from memstrata.llm.schema import bounded_json_schema, repair_json
from memstrata.llm.tools import MAX_ROUNDS, ToolCall, json_protocol, run_tool_loop
from memstrata.llm.types import LLMOutputError
from memstrata.retrieval.context import count_tokens
from memstrata.retrieval.rank_fusion import rrf
from memstrata.retrieval.text import content_terms

_ABSTAIN = re.compile(
    r"^\s*(no_answer|unknown|not (stated|mentioned|found|given)|cannot (be )?(determined|"
    r"answered)|the (graph|text) does not)",
    re.I,
)


@dataclass
class Outcome:
    answer: str | None
    abstained: bool
    windows: list[Window]
    first_prompt: str
    usage: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


def _merge(text: str, spans: list[tuple[int, int, list[str]]]) -> list[Window]:
    """Windows in document order, overlapping ones merged with their node ids."""
    spans = sorted(spans)
    out: list[list[Any]] = []
    for lo, hi, ids in spans:
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
            out[-1][2] += [i for i in ids if i not in out[-1][2]]
        else:
            out.append([lo, hi, list(ids)])
    return [Window(start=lo, end=hi, text=text[lo:hi], node_ids=ids) for lo, hi, ids in out]


def node_window(text: str, graph: ConceptGraph, nid: str, size: int) -> tuple[int, int] | None:
    node = graph.nodes[nid]
    if node.start is None or node.end is None:
        return None
    return window(text, node.start, node.end, size)


def rank_nodes(graph: ConceptGraph, question: str) -> list[str]:
    """Nodes by IDF-weighted question terms in their content, claims first on ties."""
    terms = set(content_terms(question))
    weights = idf(parse("\n".join(n.content for n in graph.nodes.values())))
    order = {"claim": 0, "event": 1, "stat": 2, "concept": 3, "entity": 4}

    def score(nid: str) -> tuple[float, int, str]:
        node = graph.nodes[nid]
        mine = terms & set(content_terms(node.content))
        return (-sum(weights.get(t, 1.0) for t in mine), order.get(node.type, 5), nid)

    return sorted(graph.nodes, key=score)


Embed = Callable[[list[str]], NDArray[np.float32]]


Place = tuple[int, int]


def evidence(
    text: str,
    graph: ConceptGraph,
    question: str,
    n_windows: int,
    size: int,
    embed: Embed | None = None,
    *,
    places: Sequence[Place] = (),
    units: Sequence[Place] = (),
    unit_chars: int = 4000,
) -> Outcome:
    """The heuristic answer stage: windows around the best-matching nodes, and the
    claim that best supports the question quoted as the answer (or an abstention when
    none does: support below the engine's extract threshold).

    With ``embed``, the nodes ranked by the question's words (:func:`rank_nodes`) and the
    claims ranked by support (cosine to the question plus the share of its words) are
    fused by reciprocal rank, so a claim that answers in other words than the question's
    is looked up beside the ones that repeat its words, and the best-supported claim's
    window is always among them (the last place if the fusion left it out). Without it,
    the words alone. ``places``: spans a search of the document ranked for the question
    (a transcript's turns), best first; the best claim inside each joins the fusion as a
    third ranking. ``units``: the document's turns in order; a node's window covers the
    whole turn it sits in when that turn is at most ``unit_chars`` long (a turn longer
    than a window is read whole, not cut at the window's edges)."""
    support: dict[str, float] = {}
    if embed is not None:
        claims = [n for n in graph.nodes if graph.nodes[n].type == "claim"]
        if claims:
            support = _support(text, graph, question, claims, embed)
    ranked = rank_nodes(graph, question)
    best = None
    lists = [ranked]
    if support:
        by_support = sorted(support, key=lambda n: (-support[n], n))
        best = by_support[0]
        lists.append(by_support)
    if places:
        lists.append(_in_places(graph, places, support))
    if len(lists) > 1:
        fused = rrf(lists)
        ranked = sorted(fused, key=lambda n: -fused[n])
    starts = [u[0] for u in units]

    def lookup(nid: str) -> Place | None:
        found = node_window(text, graph, nid, size)
        node = graph.nodes[nid]
        if found is None or node.start is None or not units:
            return found
        lo, hi = units[max(0, bisect_right(starts, node.start) - 1)]
        if not lo <= node.start < hi or hi - lo > unit_chars:
            return found
        return (lo, hi) if hi - lo >= size else (min(lo, found[0]), max(hi, found[1]))

    spans: list[tuple[int, int, list[str]]] = []
    for nid in ranked:
        if len(spans) >= n_windows:
            break
        found = lookup(nid)
        if found is not None and not any(found == (a, b) for a, b, _ in spans):
            spans.append((found[0], found[1], [nid]))
    if best is not None and not any(best in ids for _, _, ids in spans):
        found = lookup(best)  # the answer's claim is always read
        if found is not None:
            spans = spans[: n_windows - 1] + [(found[0], found[1], [best])]
    answer = None
    if best is not None and support[best] >= MIN_SUPPORT:
        node = graph.nodes[best]
        answer = text[node.start : node.end] if node.start is not None else node.content
    return Outcome(
        answer=answer,
        abstained=answer is None,
        windows=_merge(text, spans),
        first_prompt=first_prompt(graph, question),
        details={"support": round(support[best], 4)} if best is not None else {},
    )


def _in_places(
    graph: ConceptGraph, places: Sequence[Place], support: dict[str, float]
) -> list[str]:
    """The best claim inside each place (by support, else the first), in the places' order."""
    out: list[str] = []
    for lo, hi in places:
        inside = [
            n
            for n, node in graph.nodes.items()
            if node.type == "claim" and node.start is not None and lo <= node.start < hi
        ]
        if inside:
            out.append(max(inside, key=lambda n: support.get(n, 0.0)))
    return list(dict.fromkeys(out))


def _support(
    text: str, graph: ConceptGraph, question: str, claims: list[str], embed: Embed
) -> dict[str, float]:
    """A claim's support, as the engine's extract scores a sentence: cosine to the
    question plus the share of the question's content words it has."""
    quotes = []
    for nid in claims:
        node = graph.nodes[nid]
        located = node.start is not None and node.end is not None
        quotes.append(text[node.start : node.end] if located else node.content)
    vecs = embed([question, *quotes])
    unit = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    cos = unit[1:] @ unit[0]
    terms = set(content_terms(question))
    out = {}
    for nid, quote, c in zip(claims, quotes, cos, strict=True):
        share = len(terms & set(content_terms(quote))) / len(terms) if terms else 0.0
        out[nid] = float(c) + share
    return out


@dataclass
class _Tools:
    """The answer stage's tools over one graph (D.3: ``lookup_source``,
    ``subgraph_summary``), with the source windows looked up and the calls by tool."""

    text: str
    graph: ConceptGraph
    reports: ReportCache
    size: int
    looked: list[tuple[int, int, list[str]]] = field(default_factory=list)
    calls: dict[str, int] = field(
        default_factory=lambda: {"lookup_source": 0, "subgraph_summary": 0}
    )

    async def run(self, call: ToolCall) -> str:
        self.calls[call.name] = self.calls.get(call.name, 0) + 1
        if call.name == "lookup_source":
            return self._lookup(call)
        return await self._summary(call)

    def _lookup(self, call: ToolCall) -> str:
        """The text around a node's source quote, ``size`` characters."""
        graph = self.graph
        nid = str(call.arguments.get("node_id", "")).strip()
        if nid not in graph.nodes:
            return f"error: no node {nid!r}; ids are those of the graph's nodes"
        found = node_window(self.text, graph, nid, self.size)
        if found is None:
            return f"node {nid!r} has no located source quote: {graph.nodes[nid].content}"
        self.looked.append((found[0], found[1], [nid]))
        return self.text[found[0] : found[1]]

    async def _summary(self, call: ToolCall) -> str:
        """The subgraphs' index, or one subgraph's report (``mode = "detail"``)."""
        subs = await self.reports.get()
        if call.arguments.get("mode") == "detail":
            sid = call.arguments.get("subgraph_id")
            try:
                at = int(sid)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                at = -1
            if not 0 <= at < len(subs):  # a negative id is no subgraph, not one from the end
                return f"error: no subgraph {sid!r}; ids are 0 to {len(subs) - 1}"
            return subs[at].detail()
        head = "subgraph_id | title | impact_rating | n_nodes"
        return "\n".join([head, *(s.index_line() for s in subs)])


async def tool_loop(
    llm: LLMClient,
    text: str,
    graph: ConceptGraph,
    question: str,
    reports: ReportCache,
    *,
    size: int = 1000,
    max_rounds: int = MAX_ROUNDS,
    max_tokens: int | None = None,
    window: int | None = None,
) -> Outcome:
    """The llm tier's answer stage. With ``window`` (the model's context, when it states
    one) the conversation is kept inside it: D.2 shows the nodes that best match the
    question in half of the room the reply and the instructions leave, every tool result
    is cut to ``size`` characters, and the rounds stop (the final answer asked) before
    their results would pass the window. ``max_tokens`` is each round's completion
    budget (default: the model's, :mod:`memstrata.llm.budgets`)."""
    max_tokens = max_tokens or llm.budgets.tokens(prompts.ANSWER_STAGE)
    schema = bounded_json_schema(prompts.FinalAnswer)
    state, rounds = graph.state_json(), max_rounds
    if window is not None:
        state, rounds = _fitted(graph, question, schema, size, max_rounds, max_tokens, window)
    messages, _ = prompts.answer(state, graph.stats_line(), question)
    tools = _Tools(text, graph, reports, size)

    async def execute(call: ToolCall) -> str:
        found = await tools.run(call)
        return found[:size] if window is not None else found

    result = await run_tool_loop(
        llm,
        messages,
        prompts.TOOLS,
        execute,
        stage=prompts.ANSWER_STAGE,
        final_schema=schema,
        max_rounds=rounds,
        max_tokens=max_tokens,
    )
    answer, cited, confidence = _final(result.content, graph)
    return Outcome(
        answer=answer,
        abstained=not answer or bool(_ABSTAIN.match(answer)),
        windows=_merge(text, tools.looked),
        first_prompt=messages[0].content,
        usage={
            "rounds": result.usage,
            "first_call_prompt_tokens": result.replies[0].prompt_tokens,
            "prompt_tokens": sum(r.prompt_tokens for r in result.replies),
            "completion_tokens": sum(r.completion_tokens for r in result.replies),
        },
        details={
            "cited_nodes": cited,
            "confidence": confidence,
            "tool_calls": tools.calls,
            "tool_rounds": len(result.rounds),
            "capped": result.capped,
            "protocol": result.replies[0].mode,
        },
    )


#: what one tool round adds beside its result: the call, its wrapping, the chat turns
ROUND_TOKENS = 60
EMPTY_STATE = json.dumps({"nodes": [], "edges": []})


def _fitted(
    graph: ConceptGraph,
    question: str,
    schema: dict[str, Any],
    size: int,
    max_rounds: int,
    max_tokens: int,
    window: int,
) -> tuple[str, int]:
    """The D.2 graph state and the tool rounds that fit ``window``: the state holds the
    nodes first by :func:`rank_nodes` in half of what the reply, the instructions and the
    tool protocol leave, the rounds the rest; each round counts a result of ``size``
    characters at two per token."""
    protocol = count_tokens(json_protocol(prompts.TOOLS, schema))
    bare, _ = prompts.answer(EMPTY_STATE, graph.stats_line(), question)
    fixed = protocol + prompt_tokens(bare) + MARGIN
    state = fitted_state(graph, (window - max_tokens - fixed) // 2, rank_nodes(graph, question))
    first, _ = prompts.answer(state, graph.stats_line(), question)
    left = window - max_tokens - protocol - prompt_tokens(first) - MARGIN
    return state, max(0, min(max_rounds, left // (size // 2 + ROUND_TOKENS)))


def _final(content: str, graph: ConceptGraph) -> tuple[str, list[str], str]:
    """The final JSON's answer, its cited nodes that exist, and the confidence. A reply
    that is not JSON, or whose JSON has no answer (a brace quoted in the reasoning), is
    read as prose: its final answer line (:func:`~memstrata.llm.answers.final_answer`),
    not the reasoning before it, with low confidence."""
    try:
        data = repair_json(content)
    except LLMOutputError:
        data = None
    prose = not content.lstrip().startswith("{")
    if not isinstance(data, dict) or ("answer" not in data and prose):
        return final_answer(content), [], "low"
    answer = data.get("answer")
    text = answer.strip() if isinstance(answer, str) else json.dumps(answer) if answer else ""
    cited = [str(c) for c in data.get("cited_nodes") or [] if str(c) in graph.nodes]
    confidence = str(data.get("confidence") or "low")
    return text, cited, confidence


def first_prompt(graph: ConceptGraph, question: str) -> str:
    """The first answer call's input (the D.2 prompt over the whole graph)."""
    messages, _ = prompts.answer(graph.state_json(), graph.stats_line(), question)
    return messages[0].content


def compaction(prompt: str, length: int) -> float:
    """f_1 / L in the same tokens (section 4.2), as a fraction; ``length`` is the
    document's token count."""
    return round(count_tokens(prompt) / max(1, length), 4)
