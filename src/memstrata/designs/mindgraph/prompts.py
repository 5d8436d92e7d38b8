"""MindGraph's prompts: build (appendix D.1), answer (D.2) and its tools (D.3), verbatim;
and the subgraph report, which the paper does not print (GraphRAG-style, our wording).

Prompt functions return ``(messages, model)``: the messages and the pydantic model of
the expected answer, as in the other designs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memstrata.llm.budgets import Budgets
from memstrata.llm.fence import FENCE_NOTE, fence
from memstrata.llm.schema import resized
from memstrata.llm.tools import Tool
from memstrata.llm.types import Message

BUILD_STAGE = "mindgraph.build"
ANSWER_STAGE = "mindgraph.answer"
REPORT_STAGE = "mindgraph.report"

Prompt = tuple[list[Message], type[BaseModel]]


def _user(text: str) -> list[Message]:
    """The papers' prompts are one user message: the fence note goes on its first line."""
    return [Message(role="user", content=f"{FENCE_NOTE}\n\n{text}")]


# D.1 ---------------------------------------------------------------------------------------
_BUILD = '''You are a mind-graph builder. You read text blocks one at a time and maintain
a concept graph that captures information needed to answer the question below.

## Question to answer later
{question}

## Current graph state
{graph_state}

## New text block (block {block_idx}/{total_blocks})
"""
{block_text}
"""

## Your task
Propose updates to the graph. Output only a JSON object:

{{"operations": [
  {{"op": "add_node", "id": "short_id", "type": "entity|event|claim|concept|stat",
    "content": "description", "src": "exact quote from text"}},
  {{"op": "add_edge", "source": "id1", "target": "id2",
    "relation": "relationship", "src": "exact quote"}},
  {{"op": "edit_node", "id": "existing_id", "content": "updated description"}},
  {{"op": "delete_node", "id": "old_id"}}
]}}

Rules:
- Focus on information relevant to the question.
- Merge / update existing nodes when new text refines them.
- The `src` field must be an exact, verbatim substring copied from the text
  block (used to locate the source passage).
- Use readable snake_case ids (e.g. "matt_mercer", "total_nat20s").
- Output ONLY valid JSON. No commentary.'''


class Operation(BaseModel):
    """One edit. The operation and node type are the prompt's closed vocabularies (so a
    grammar-constrained model can only pick among them); the other fields are loose on
    purpose: each operation is validated on its own when applied (ids, edge ends,
    duplicates, quotes), and a bad one is counted as rejected instead of failing the
    whole chunk."""

    op: Literal["add_node", "add_edge", "edit_node", "delete_node"]
    id: str | None = Field(default=None, max_length=64)
    type: Literal["entity", "event", "claim", "concept", "stat"] | None = None
    content: str | None = Field(default=None, max_length=300)
    src: str | None = Field(default=None, max_length=300)
    source: str | None = Field(default=None, max_length=64)
    target: str | None = Field(default=None, max_length=64)
    relation: str | None = Field(default=None, max_length=48)


class Operations(BaseModel):
    """The paper bounds neither the operations nor their strings; the bounds here are the
    small profile's, and ``build`` gives the model's (:mod:`memstrata.llm.budgets`)."""

    operations: list[Operation] = Field(default_factory=list, max_length=40)


def build(
    question: str,
    graph_state: str,
    block_text: str,
    block_idx: int,
    total_blocks: int,
    *,
    budgets: Budgets | None = None,
) -> Prompt:
    """D.1: ``graph_state`` is the graph's JSON, or ``(empty)`` for the first block;
    the reply's bounds are ``budgets``' (None: the small profile's)."""
    text = _BUILD.format(
        question=question,
        graph_state=fence(graph_state),
        block_idx=block_idx,
        total_blocks=total_blocks,
        block_text=fence(block_text),
    )
    if budgets is None:
        return _user(text), Operations
    quote = budgets.bound("mindgraph.quote_chars")
    bounds = {"operations.content": quote, "operations.src": quote}
    return _user(text), resized(
        Operations, {"operations": budgets.bound("mindgraph.operations"), **bounds}
    )


# D.2 ---------------------------------------------------------------------------------------
_ANSWER = """Answer the question using the mind graph below. Work through four phases.

## Mind Graph
{graph_state}

## Graph stats
{graph_stats}

## Question
{question}

## Tools available
You have two tools. Choose based on graph size and question type.
- `lookup_source(node_id)` -- retrieve the original passage (~1000 chars)
  around a node's source quote. Best for verifying specific facts and
  resolving ambiguity at the level of individual nodes.

- `subgraph_summary(mode, subgraph_id?)` -- get a structural overview of
  the graph organized into Leiden subgraphs. Call it with
  `mode="index"` first to see a compact list of
  `(subgraph_id, title, impact_rating, n_nodes)` for every subgraph.
  Then call with `mode="detail"` and a specific `subgraph_id` to get
  that subgraph's full executive summary and findings. Best when the
  graph is too large to survey node-by-node and you need a global map
  before drilling in.

## How to choose
Use the graph stats above to decide your strategy:
- **< 50 nodes**:: skip `subgraph_summary`; the whole graph fits in your
  attention. Go straight to Phase 1 and use `lookup_source` when you need
  to verify.
- **50 - 150 nodes**:: use judgment. If the question targets a specific
  entity you can locate by eye, `lookup_source` is enough. If the question
  requires integrating evidence across multiple regions, call
  `subgraph_summary(mode="index")` first to map the terrain.
- **> 150 nodes**:: start with `subgraph_summary(mode="index")`, pick the
  1-3 subgraphs most relevant to the question, fetch each with
  `mode="detail"`, then use `lookup_source` on specific nodes inside those
  subgraphs to verify key quotes.

## Phase 1 -- Global understanding
Before doing any lookups, build a picture of the graph as a whole:
- For small graphs, read the nodes and edges directly. Start from hub
  nodes (many edges) -- they usually represent central entities, themes,
  or events that anchor the narrative.
- For large graphs, rely on `subgraph_summary(mode="index")` and,
  selectively, `mode="detail"`. Treat the subgraph titles and ratings as
  a table of contents.
- Trace the main storylines, argument chains, or causal sequences that
  connect hubs/subgraphs.
- Build a mental summary: what is this context fundamentally about? What
  are the key relationships, conflicts, or conclusions?

## Phase 2 -- Locate relevant subgraph
Now relate the question back to the graph:
- Identify which region(s) of the graph contain the information needed to
  answer the question. This may be a single cluster of nodes, multiple
  scattered regions, or even the entire graph if the question requires
  holistic understanding.
- Use `lookup_source` on the most relevant nodes to read the original
  text and ground your understanding in primary evidence. Prioritize
  nodes that sit at the intersection of the question's key concepts.
- If the question requires integrating information across distant parts
  of the graph, look up nodes from each relevant region.

## Phase 3 -- Answer
Synthesize the evidence gathered from the relevant subgraph(s).
- Ground your answer in the looked-up source passages, not just node
  summaries.
- If information from multiple regions is needed, explain how they connect.
- Be precise and concise.

## Phase 4 -- Reflect
Before finalizing, verify your answer against the graph:
- Does your answer contradict any node or edge in the graph?
- Are there nodes with evidence that conflicts with your conclusion? If
  so, address the conflict explicitly.
- Did you overlook any region/subgraph of the graph that the question
  might depend on?
If reflection reveals a gap or conflict, do more lookups before answering.

## Final output
When ready, respond in JSON:
{{"answer": "<your concise answer>", "cited_nodes": ["node_id1", ...],
 "confidence": "high|medium|low"}}"""


class FinalAnswer(BaseModel):
    answer: str = Field(max_length=600)
    cited_nodes: list[str] = Field(default_factory=list, max_length=12)
    confidence: Literal["high", "medium", "low"] = "low"


def answer(graph_state: str, graph_stats: str, question: str) -> Prompt:
    """D.2, the answer LLM's first turn."""
    text = _ANSWER.format(
        graph_state=fence(graph_state), graph_stats=graph_stats, question=question
    )
    return _user(text), FinalAnswer


# D.3 ---------------------------------------------------------------------------------------
LOOKUP_SOURCE = Tool(
    name="lookup_source",
    description=(
        "Retrieve the original text passage that a mind-graph node was derived from. "
        "Returns ~1000 chars of context around the source quote."
    ),
    parameters={
        "type": "object",
        "properties": {
            "node_id": {"type": "string", "description": "The id of the node to look up."}
        },
        "required": ["node_id"],
    },
)
SUBGRAPH_SUMMARY = Tool(
    name="subgraph_summary",
    description=(
        "Get a structural overview of the mind graph organized into Leiden subgraphs. "
        "Call mode='index' first to see a compact list of (subgraph_id, title, "
        "impact_rating, n_nodes) for every subgraph. Then call mode='detail' with a "
        "specific subgraph_id to get that subgraph's full executive summary and 5-10 "
        "detailed findings. Use when the graph is large and you need a global map before "
        "drilling in with lookup_source."
    ),
    parameters={
        "type": "object",
        "properties": {
            "mode": {
                "type": "string",
                "enum": ["index", "detail"],
                "description": "'index' lists all subgraphs at a glance; 'detail' returns "
                "the full report for one subgraph.",
            },
            "subgraph_id": {
                "type": "integer",
                "description": "Required when mode='detail'. The integer id shown in the index.",
            },
        },
        "required": ["mode"],
    },
)
TOOLS = [LOOKUP_SOURCE, SUBGRAPH_SUMMARY]


# subgraph reports (not in the paper) -------------------------------------------------------
_REPORT = """You write a report on one community of a concept graph, to help a reader who
must answer the question below find their way in the graph.

## Question
{question}

## Community nodes and edges
{subgraph}

Output only a JSON object:
{{"title": "a short name for the community", "summary": "an executive summary in two or
three sentences", "rating": <impact for the question, 0 to 10>, "findings": ["5 to 10
findings, each one sentence grounded in the nodes"]}}"""


class Report(BaseModel):
    title: str = Field(max_length=120)
    summary: str = Field(max_length=800)
    rating: float = Field(ge=0, le=10)
    findings: list[str] = Field(default_factory=list, max_length=10)


def report(question: str, subgraph: str) -> Prompt:
    text = _REPORT.format(question=question or "(none given)", subgraph=fence(subgraph))
    return _user(text), Report
