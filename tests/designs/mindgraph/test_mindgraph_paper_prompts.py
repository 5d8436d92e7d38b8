"""MindGraph's prompts against the paper's appendix D, character by character.

The paper's text below is copied from appendix D (D.1 build, D.2 answer, D.3 tool
descriptions, D.4 judge), with its placeholders in braces. Each prompt is rendered with
every placeholder's own name as its value; what remains different must be listed here
with its reason (docs/mindgraph.md, "The paper's pipeline, side by side").
"""

from __future__ import annotations

import pytest
from tests.designs.paper_prompts import Difference, as_sent, differences, differing_chars

from memstrata.designs.mindgraph import prompts
from memstrata.eval.qa.prompts import mindgraph_judge
from memstrata.llm.fence import FENCE_NOTE
from memstrata.llm.tools import Tool
from memstrata.llm.types import Message

PAPER_D1 = '''You are a mind-graph builder. You read text blocks one at a time and maintain
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

{"operations": [
  {"op": "add_node", "id": "short_id", "type": "entity|event|claim|concept|stat",
    "content": "description", "src": "exact quote from text"},
  {"op": "add_edge", "source": "id1", "target": "id2",
    "relation": "relationship", "src": "exact quote"},
  {"op": "edit_node", "id": "existing_id", "content": "updated description"},
  {"op": "delete_node", "id": "old_id"}
]}

Rules:
- Focus on information relevant to the question.
- Merge / update existing nodes when new text refines them.
- The `src` field must be an exact, verbatim substring copied from the text
  block (used to locate the source passage).
- Use readable snake_case ids (e.g. "matt_mercer", "total_nat20s").
- Output ONLY valid JSON. No commentary.'''

PAPER_D2 = """Answer the question using the mind graph below. Work through four phases.

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
{"answer": "<your concise answer>", "cited_nodes": ["node_id1", ...],
 "confidence": "high|medium|low"}"""

PAPER_D3 = {
    "lookup_source": (
        "Retrieve the original text passage that a mind-graph node was derived from. "
        "Returns ~1000 chars of context around the source quote.",
        {"node_id": "The id of the node to look up."},
    ),
    "subgraph_summary": (
        "Get a structural overview of the mind graph organized into Leiden subgraphs. "
        "Call mode='index' first to see a compact list of (subgraph_id, title, "
        "impact_rating, n_nodes) for every subgraph. Then call mode='detail' with a "
        "specific subgraph_id to get that subgraph's full executive summary and 5-10 "
        "detailed findings. Use when the graph is large and you need a global map before "
        "drilling in with lookup_source.",
        {
            "mode": "'index' lists all subgraphs at a glance; 'detail' returns the full "
            "report for one subgraph.",
            "subgraph_id": "Required when mode='detail'. The integer id shown in the index.",
        },
    ),
}

# The appendix's text of D.4 ends after the three fields; the reply format is ours.
PAPER_D4 = """You are a strict but fair grading judge. Given a question, a gold (reference) answer, and a predicted answer, decide if the predicted answer is essentially correct -- i.e. it conveys the same core meaning as the gold answer, even if phrased differently, more verbose, or using synonyms.

Important: For list-type questions (e.g. "what animals...", "what techniques..."), the predicted answer must include ALL key items from the gold answer. A partial list that misses important items, or a list with substantially different items, should be marked incorrect.

Question: {question}
Gold answer: {gold}
Predicted answer: {predicted}"""

D4_REPLY_FORMAT = (
    '\n\nReply with ONLY a JSON object:\n{ "correct": true/false, "reason": "brief explanation" }'
)


def _only_message(messages: list[Message]) -> str:
    (message,) = messages
    assert message.role == "user"
    return str(message.content)


def test_the_build_prompt_is_d1_with_only_the_data_fences_added() -> None:
    names = ("question", "graph_state", "block_text", "block_idx", "total_blocks")
    messages, _ = prompts.build(*(f"{{{n}}}" for n in names))  # type: ignore[arg-type]
    sent = _only_message(messages)
    assert sent.startswith(FENCE_NOTE)  # the one line the paper's prompt has not
    assert differences(as_sent(sent), PAPER_D1) == []


def test_the_answer_prompt_is_d2_with_only_the_data_fences_added() -> None:
    messages, _ = prompts.answer("{graph_state}", "{graph_stats}", "{question}")
    sent = _only_message(messages)
    assert sent.startswith(FENCE_NOTE)
    assert differences(as_sent(sent), PAPER_D2) == []


@pytest.mark.parametrize("tool", prompts.TOOLS, ids=lambda t: t.name)
def test_the_tool_descriptions_are_d3(tool: Tool) -> None:
    description, params = PAPER_D3[tool.name]
    assert tool.description == description
    props = tool.parameters["properties"]
    assert {k: v["description"] for k, v in props.items()} == params


def test_the_judge_is_d4_and_a_reply_format() -> None:
    messages, _ = mindgraph_judge("{question}", "{gold}", "{predicted}")
    diffs = differences(as_sent(_only_message(messages)), PAPER_D4)
    assert diffs == [Difference(D4_REPLY_FORMAT, "")]
    assert differing_chars(diffs) == len(D4_REPLY_FORMAT)


def test_the_diff_sees_a_changed_word() -> None:
    """The check itself: one word of D.1 changed is one difference."""
    changed = PAPER_D1.replace("Merge / update", "Merge or update")
    diffs = differences(changed, PAPER_D1)
    assert diffs == [Difference("or", "/")]
    assert differing_chars(diffs) == 2
