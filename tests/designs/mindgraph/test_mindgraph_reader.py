"""The reader mode: ``Memory.read`` and ``memstrata read`` on the heuristic tier, and the
llm tier's build and tool loop with the scripted LLM (JSON protocol and native tool
calls, the round cap, a build that fails), the graph cached per question."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mindgraph_helpers import DOC, story, transcript
from typer.testing import CliRunner

from memstrata.cli.main import app
from memstrata.config import Config
from memstrata.designs.mindgraph.reader import MindGraphReader, ReaderParams, load_graph
from memstrata.designs.mindgraph.records import Community
from memstrata.engine.contracts import NOT_IN_MEMORY, Context
from memstrata.errors import ConfigError, InvalidInputError
from memstrata.ingest import prepare_episode
from memstrata.llm import LLMClient, MemoryUsageSink, ScriptedBackend
from memstrata.llm.fence import unfence
from memstrata.llm.types import Message
from memstrata.memory import Memory
from memstrata.reading import document_namespace
from memstrata.retrieval.chunking import chunk_spans
from memstrata.retrieval.context import count_tokens
from memstrata.retrieval.transcript import turns_namespace

Q = "How deep can the Marlin drone dive?"


def test_heuristic_read_returns_windows_with_offsets(tmp_path: Path, embedder) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        r = m.read(DOC, Q)
        # the answer is the claim that supports the question best, quoted
        assert r.answer == "The Marlin drone can dive to 300 meters and costs $45,000."
        assert not r.abstained and r.details["support"] >= 0.3
        assert r.windows and all(DOC[w.start : w.end] == w.text for w in r.windows)
        assert any("300 meters" in w.text for w in r.windows)
        assert r.graph["nodes"] > 0 and r.graph["chunks"] == 1 and not r.graph["cached"]
        assert r.graph["provenance"] == {"exact": r.graph["provenance"]["exact"]}
        ns = document_namespace(DOC)
        prompt_tokens = r.compaction_ratio * count_tokens(DOC)
        assert prompt_tokens > 100  # the D.2 prompt with the graph
        # the same question again: the graph comes from the store
        again = m.read(DOC, Q)
        assert again.graph["cached"] and again.graph["key"] == r.graph["key"]
        assert again.windows == r.windows
        other = m.read(DOC, "Where does Leo teach?")
        assert not other.graph["cached"] and other.graph["key"] != r.graph["key"]
        assert any("Toronto" in w.text for w in other.windows)
        assert m.store.get_episodes(ns, ["document"])[0].text == DOC
        only = m.read(DOC, Q, graph_only=True)
        for n in only.graph["graph_nodes"]:
            assert n["src"] == DOC[n["start"] : n["end"]]
        ids = sorted(n for s in only.graph["subgraphs"] for n in s["node_ids"])
        assert ids == sorted(n["id"] for n in only.graph["graph_nodes"])
        assert all(s["title"] for s in only.graph["subgraphs"])
        with pytest.raises(InvalidInputError):
            m.read(DOC, "  ")
        with pytest.raises(InvalidInputError):
            m.read("   ", Q)
        with pytest.raises(ConfigError, match="has no reader"):
            m.read(DOC, Q, design="memtree")


def test_heuristic_read_finds_a_paraphrased_answer_deep_in_a_long_story(
    tmp_path: Path, embedder
) -> None:
    text, answer = story()
    assert len(text) > 30_000 and text.index(answer) > 22_000
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        # the question says "leave", the story "left": no shared word but names
        r = m.read(text, "Why does Ana leave the village?")
        assert r.answer == answer and not r.abstained
        at = text.index(answer)
        assert any(w.start <= at < w.end for w in r.windows)
        # the windows fuse the words ranking with the claims' support; whatever the
        # fusion leaves out, the best-supported claim is always read
        for question in ("Why did Ana depart?", "What made Ana go away?"):
            for n in (1, 3):
                found = m.read(text, question, params={"windows": n})
                assert len(found.windows) <= n
                assert any(w.start <= at < w.end for w in found.windows), (question, n)
        # a question the story does not answer: an abstention, not a guess
        none = m.read(text, "How much did the new car cost?")
        assert none.abstained and none.answer == NOT_IN_MEMORY and none.windows


def test_the_heuristic_graph_is_sized_to_the_document(tmp_path: Path, embedder) -> None:
    """40 claims unless the first answer call would pass 15% of the document: then
    fewer, down to one per evidence window; the sentence found by meaning stays."""
    text, answer = story()
    long_text = "\n\n".join([story(seed)[0] for seed in (5, 7)] + [text])
    at = long_text.index(answer)
    question = "Why did Ana depart?"

    def claims(r: Any) -> int:
        return sum(n["type"] == "claim" for n in r.graph["graph_nodes"])

    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        whole = m.read(long_text, question, params={"max_compaction": None})
        sized = m.read(long_text, question)
        assert whole.compaction_ratio > 0.15 >= sized.compaction_ratio
        assert whole.graph["key"] != sized.graph["key"]  # the cap is part of the graph's key
        full = claims(m.read(long_text, question, params={"max_compaction": None}, graph_only=True))
        fitted = claims(m.read(long_text, question, graph_only=True))
        assert 30 < full <= 40 and 5 < fitted < full
        assert any(w.start <= at < w.end for w in sized.windows)
        # a looser cap keeps more claims; one the instructions alone exceed keeps the floor
        loose = claims(
            m.read(long_text, question, params={"max_compaction": 0.25}, graph_only=True)
        )
        assert fitted < loose <= full
        tight = m.read(long_text, question, params={"max_compaction": 0.01}, graph_only=True)
        assert claims(tight) == 5  # one per evidence window (``windows``)
        assert claims(m.read(DOC, Q, graph_only=True)) == 5  # a short text: the floor too
        with pytest.raises(ConfigError, match="max_compaction"):
            m.read(DOC, Q, params={"max_compaction": 0})


def test_a_transcript_is_read_turn_by_turn(tmp_path: Path, embedder) -> None:
    """A chat exported as text: its turns are stored and searched as episodes, and the
    window on a long turn holds the whole turn, not 1,000 characters cut out of it."""
    text, turn = transcript()
    lo = text.index(turn)
    hi = lo + len(turn)
    assert 2000 < hi - lo < 4000 and turn.count("\n") == 6
    question = "What was your plan for moving my orders database?"
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        r = m.read(text, question)
        assert any(w.start <= lo and hi <= w.end for w in r.windows)
        assert all(text[w.start : w.end] == w.text for w in r.windows)
        assert r.details["turns"] == 62
        where = turns_namespace(document_namespace(text))
        stored = m.store.all_episodes(where)
        assert len(stored) == 62 and {e.speaker for e in stored} == {"user", "assistant"}
        assert [e.text for e in stored if e.id == "41"] == [turn.removeprefix("assistant: ")]
        assert stored[0].occurred_at is not None and stored[0].occurred_at.day == 1
        # the graph holds a claim from the turn the search ranked first
        nodes = m.read(text, question, graph_only=True).graph["graph_nodes"]
        assert any(n["type"] == "claim" and lo <= n["start"] < hi for n in nodes)
        # a second reading stores nothing new; one after a store cut short completes it
        m.read(text, "Which train goes to the coast?")
        assert len(m.store.all_episodes(where)) == 62
        m.delete([str(i) for i in range(40, 62)], namespace=where)
        m.read(text, "Which train goes to the coast?")
        assert sorted(int(e.id) for e in m.store.all_episodes(where)) == list(range(62))
        # a turn longer than ``turn_chars`` is read through 1,000-character windows
        cut = m.read(text, question, params={"turn_chars": 1000})
        assert not any(w.start <= lo and hi <= w.end for w in cut.windows)
        assert any(w.start < hi and lo < w.end for w in cut.windows)
    # prose has no turns: nothing more is stored
    with Memory.open(tmp_path / "p.db", embedder=embedder) as m:
        m.read(DOC, Q)
        assert not m.store.has_namespace(turns_namespace(document_namespace(DOC)))


def test_deleting_the_document_drops_every_reading_of_it(tmp_path: Path, embedder) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        m.read(DOC, Q)
        m.read(DOC, "Where does Leo teach?")
        ns = document_namespace(DOC)
        kinds = ("concept_node", "concept_edge", "community")
        made = [r for k in kinds for r in m.store.get_records(ns, k, builder="mindgraph")]
        assert any(not r.sources for r in made)  # the headers cite nothing
        assert m.delete(["document"], namespace=ns) == 1
        assert [r for k in kinds for r in m.store.get_records(ns, k, builder=None)] == []
        assert m.stats(ns)["namespaces"][0]["repairs"] == {}


def test_cli_read_json_shape(tmp_path: Path) -> None:
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC, encoding="utf-8")
    db = str(tmp_path / "r.db")
    runner = CliRunner()
    res = runner.invoke(app, ["read", str(doc), "-q", Q, "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {"answer", "abstained", "windows", "compaction_ratio", "graph", "usage"} <= set(data)
    assert {"nodes", "edges", "chunks"} <= set(data["graph"])
    for w in data["windows"]:
        assert set(w) == {"start", "end", "text", "node_ids"}
        assert DOC[w["start"] : w["end"]] == w["text"]
    res = runner.invoke(app, ["read", str(doc), "-q", Q, "--db", db, "--graph-only"])
    assert res.exit_code == 0 and json.loads(res.stdout)["graph"]["cached"] is True
    res = runner.invoke(app, ["read", str(doc), "--db", db])
    assert res.exit_code == 2 and "--question" in res.stderr
    plain = runner.invoke(app, ["read", str(doc), "-q", Q, "--db", db])
    assert plain.exit_code == 0 and "300 meters" in plain.stdout and "compaction" in plain.stdout
    # the build's chunk size and the LLM are options of the command
    small = runner.invoke(
        app,
        ["read", str(doc), "-q", Q, "--db", db, "--json", "--chunk-tokens", "64", "--llm", "none"],
    )
    assert small.exit_code == 0, small.output
    graph = json.loads(small.stdout)["graph"]
    assert graph["chunk_tokens"] == 64 and graph["chunks"] == len(chunk_spans(DOC, 64)) > 1
    # the graph's size cap too: a 31 KB story is too short for 15%, so it keeps the floor
    # (one claim per window) by default and every claim found with the cap lifted
    tale = tmp_path / "tale.txt"
    tale.write_text(story()[0], encoding="utf-8")
    sizes = []
    for cap in ([], ["--max-compaction", "100"]):
        res = runner.invoke(
            app, ["read", str(tale), "-q", "Why did Ana depart?", "--db", db, "--graph-only", *cap]
        )
        assert res.exit_code == 0, res.output
        nodes = json.loads(res.stdout)["graph"]["graph_nodes"]
        sizes.append(sum(n["type"] == "claim" for n in nodes))
    assert sizes[0] == 5 and 30 < sizes[1] <= 40
    bad = runner.invoke(app, ["read", str(doc), "-q", Q, "--db", db, "--llm", "oracle"])
    assert bad.exit_code == 2 and "oracle" in bad.stderr
    llm_tier = runner.invoke(app, ["read", str(doc), "-q", Q, "--db", db, "--tier", "llm"])
    assert llm_tier.exit_code == 2 and "llm.kind" in llm_tier.stderr  # none configured


def test_the_build_chunk_follows_the_models_context_window(store, embedder) -> None:
    """8,192 tokens (the paper's) unless the model states a smaller window: then half of
    what the build reply leaves, never more than asked. A 1,024-token window gives the
    model an output limit of 512 (half its window), so the build reply's budget is 512."""
    backend = ScriptedBackend([build_reply] * 100, context_tokens=4096)
    ctx, _, _ = llm_ctx(store, embedder, backend)
    assert MindGraphReader(ReaderParams()).chunk_tokens(ctx) == (4096 - 2048) // 2
    assert MindGraphReader(ReaderParams(chunk_tokens=40)).chunk_tokens(ctx) == 40
    unknown, _, _ = llm_ctx(store, embedder, ScriptedBackend([build_reply] * 100))
    assert MindGraphReader(ReaderParams()).chunk_tokens(unknown) == 8192
    tiny, _, _ = llm_ctx(store, embedder, ScriptedBackend([], context_tokens=1024))
    assert tiny.llm is not None and tiny.llm.budgets.tokens("mindgraph.build") == 512
    assert MindGraphReader(ReaderParams()).chunk_tokens(tiny) == (1024 - 512) // 2
    crowded = MindGraphReader(ReaderParams(build_max_tokens=1000))
    assert crowded.chunk_tokens(tiny) == 64  # the floor, when the reply leaves nearly nothing


def test_the_graph_state_shown_fits_the_models_context_window(
    store, embedder, model_tokens
) -> None:
    """With the model's window stated (4,096 tokens, the bundled model's) and the default
    settings, every D.1 prompt with its reply budget fits the window (the build counts in
    MiniLM word pieces; the check in the model's own tokens): the state shows the
    most latest nodes that fit, not the whole graph, which outgrows it after a chunk or
    two; a graph that fits is shown whole."""
    text, _ = story()
    backend = ScriptedBackend([build_reply] * 100, context_tokens=4096)
    ctx = Context(store, embedder, LLMClient(backend, max_retries=0), "llm")
    ns = "fit"
    store.add_episodes(ns, [prepare_episode({"text": text, "id": "document"}, Config())])
    (doc,) = store.get_episodes(ns, ["document"])
    reader = MindGraphReader(ReaderParams())
    r = asyncio.run(reader.read(ctx, ns, doc, "Why did Ana leave?", graph_only=True))
    builds = [
        q
        for q in backend.requests
        if "You are a mind-graph builder" in unfence(q.messages[-1].content)
    ]
    assert len(builds) == r.graph["chunks"] >= 4 and "failed_chunks" not in r.usage
    shown = []
    for q in builds:
        # counted in the bundled model's own tokens, with its chat template's few per turn
        prompt = sum(model_tokens(m.content) + 8 for m in q.messages)
        assert prompt + q.max_tokens <= 4096
        prompt = unfence(q.messages[-1].content)
        state = prompt.split("## Current graph state\n")[1].split("## New text block")[0]
        shown.append(0 if state.startswith("(empty)") else state.count('"type":'))
    assert shown[0] == 0 and all(n > 0 for n in shown[1:])
    assert max(shown) < r.graph["nodes"]  # the whole graph no longer fits


def test_the_answer_stage_stays_inside_the_models_context_window(
    store, embedder, model_tokens
) -> None:
    """With a 4,096-token window and the default settings (40 rounds, 1,024 tokens a
    reply), a model that looks up sources again and again is stopped before the
    conversation passes the window: D.2 shows the nodes that best match the question,
    the rounds are capped, and the final answer is asked for; every request fits."""
    import re

    text, _ = story()

    def model(messages: list[Message]) -> str:
        body = unfence(messages[-1].content)
        if "You are a mind-graph builder" in body:
            return build_reply(messages)
        if "You write a report on one community" in body:
            return json.dumps({"title": "t", "summary": "s", "rating": 1, "findings": []})
        if "No more tool calls" in body:
            final = {"answer": "She left for the city.", "cited_nodes": [], "confidence": "low"}
            return json.dumps({"tool": "final", "arguments": final})
        shown = " ".join(unfence(m.content) for m in messages)
        first = re.search(r'"id": "([^"]+)"', shown)
        assert first is not None
        return json.dumps({"tool": "lookup_source", "arguments": {"node_id": first.group(1)}})

    backend = ScriptedBackend([model] * 200, context_tokens=4096)
    ctx = Context(store, embedder, LLMClient(backend, max_retries=0), "llm")
    ns = "fit-answer"
    store.add_episodes(ns, [prepare_episode({"text": text, "id": "document"}, Config())])
    (doc,) = store.get_episodes(ns, ["document"])
    r = asyncio.run(MindGraphReader(ReaderParams()).read(ctx, ns, doc, "Why did Ana leave?"))
    assert r.answer == "She left for the city." and "answer_error" not in r.details
    assert r.details["capped"] and 1 <= r.details["tool_rounds"] < 40, r.details
    asked = [
        q
        for q in backend.requests
        if "mind graph below" in q.messages[-1].content
        or any("mind graph below" in m.content for m in q.messages)
    ]
    assert len(asked) == r.details["tool_rounds"] + 1
    for q in asked:
        prompt = sum(model_tokens(m.content) + 8 for m in q.messages)
        assert prompt + q.max_tokens <= 4096
    shown = unfence(asked[0].messages[1].content).count('"type":')
    assert 0 < shown < r.graph["nodes"]  # the graph is too big for the window: a part


# llm tier, scripted -------------------------------------------------------------------------
def llm_ctx(store: Any, embedder: Any, backend: ScriptedBackend) -> tuple[Context, str, Any]:
    ns = "read-test"
    store.add_episodes(ns, [prepare_episode({"text": DOC, "id": "document"}, Config())])
    doc = store.get_episodes(ns, ["document"])[0]
    llm = LLMClient(backend, usage=MemoryUsageSink(), max_retries=1)
    return Context(store, embedder, llm, "llm"), ns, doc


def build_reply(messages: list[Message]) -> str:
    """Operations for whichever chunk is shown: one node per line, some bad ones."""
    block = unfence(messages[-1].content).split('"""')[1].strip()
    ops: list[dict[str, Any]] = []
    for line in block.splitlines():
        words = line.split()
        nid = "_".join(w.lower().strip(".,$") for w in words[:3])
        ops.append({"op": "add_node", "id": nid, "type": "claim", "content": line, "src": line})
    ops.append({"op": "add_edge", "source": "nowhere", "target": "x", "relation": "r", "src": ""})
    ops.append(
        {
            "op": "add_node",
            "id": f"bad_{nid}",
            "type": "claim",
            "content": "x",
            "src": "a quote the text does not contain at all",
        }
    )
    return json.dumps({"operations": ops})


def by_prompt(answers: list[Any]) -> Any:
    """One scripted step for any call: D.1 gets :func:`build_reply`, a subgraph report a
    fixed report, the answer stage the next of ``answers``."""
    queue = list(answers)

    def step(messages: list[Message]) -> str:
        text = unfence(messages[-1].content)
        if "You are a mind-graph builder" in text:
            return build_reply(messages)
        if "You write a report on one community" in text:
            return json.dumps(
                {
                    "title": "Marlin",
                    "summary": "The drone.",
                    "rating": 8,
                    "findings": ["It dives to 300 meters."],
                }
            )
        nxt = queue.pop(0)
        return nxt if isinstance(nxt, str) else json.dumps(nxt)

    return step


def test_subgraph_summary_refuses_an_id_out_of_range(store, embedder) -> None:
    """A negative id is no subgraph (Python would read it from the end), nor is one past
    the last or one that is not a number: each gets an error, never another's report."""
    answer: list[Any] = [
        {"tool": "subgraph_summary", "arguments": {"mode": "detail", "subgraph_id": sid}}
        for sid in (-1, 99, "first")
    ]
    answer.append({"tool": "final", "arguments": {"answer": "300 meters", "confidence": "low"}})
    backend = ScriptedBackend([by_prompt(answer)] * 100)
    ctx, ns, doc = llm_ctx(store, embedder, backend)
    r = asyncio.run(MindGraphReader(ReaderParams(chunk_tokens=40)).read(ctx, ns, doc, Q))
    assert r.answer == "300 meters" and r.details["tool_calls"]["subgraph_summary"] == 3
    last = [unfence(m.content) for m in backend.requests[-1].messages]
    for sid in ("-1", "99", "'first'"):
        assert any(f"error: no subgraph {sid}" in m for m in last), sid
    assert not any("It dives to 300 meters." in m for m in last)  # no report was given


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("The answer: maybe Ottawa? No, {leo} says Toronto.\nFinal answer: Toronto", "Toronto"),
        ("Looking at node {her_brother_leo}, he teaches.\n**Answer:** Toronto", "Toronto"),
        ("Leo teaches music.\nToronto", "Toronto"),
        ('{"answer": "Toronto", "confidence": "high"}', "Toronto"),
        ('{"cited_nodes": []}', NOT_IN_MEMORY),  # the final JSON without an answer: none
    ],
)
def test_a_prose_final_reply_answers_with_its_last_answer_line(
    store, embedder, reply: str, expected: str
) -> None:
    """A model that writes its reasoning instead of the final JSON (native tool calls
    end on free content) is read for the answer it ends on, not the reasoning; a brace
    in the reasoning is not the final JSON."""
    chunks = chunk_spans(DOC, 8192)
    backend = ScriptedBackend([build_reply] * len(chunks) + [{"content": reply}], native_tools=True)
    ctx, ns, doc = llm_ctx(store, embedder, backend)
    r = asyncio.run(MindGraphReader().read(ctx, ns, doc, "Where does Leo teach?"))
    assert r.answer == expected and r.abstained == (expected == NOT_IN_MEMORY)


def test_llm_read_builds_per_chunk_then_runs_the_tool_loop(store, embedder) -> None:
    params = ReaderParams(chunk_tokens=40)
    chunks = chunk_spans(DOC, 40)
    assert len(chunks) >= 3
    answer = [
        {"tool": "lookup_source", "arguments": {"node_id": "the_marlin_drone"}},
        {"tool": "subgraph_summary", "arguments": {"mode": "index"}},
        {"tool": "subgraph_summary", "arguments": {"mode": "detail", "subgraph_id": 0}},
        {"tool": "lookup_source", "arguments": {"node_id": "no_such_node"}},
        {
            "tool": "final",
            "arguments": {
                "answer": "300 meters",
                "cited_nodes": ["the_marlin_drone", "ghost"],
                "confidence": "high",
            },
        },
    ]
    backend = ScriptedBackend([by_prompt(answer)] * 100)
    ctx, ns, doc = llm_ctx(store, embedder, backend)
    r = asyncio.run(MindGraphReader(params).read(ctx, ns, doc, Q))
    assert r.answer == "300 meters" and not r.abstained
    assert r.details["cited_nodes"] == ["the_marlin_drone"]  # unknown ids dropped
    assert r.details["tool_calls"] == {"lookup_source": 2, "subgraph_summary": 2}
    assert r.details["protocol"] == "json" and not r.details["capped"]
    # the window is what lookup_source returned, with offsets into the document
    (w,) = r.windows
    assert w.node_ids == ["the_marlin_drone"] and "300 meters" in w.text
    assert DOC[w.start : w.end] == w.text
    # every chunk was one D.1 call; rejected operations and the unlocated quote counted
    assert r.graph["chunks"] == len(chunks)
    assert r.graph["rejected"]["dangling_edge"] == len(chunks)
    assert r.graph["provenance"]["unlocated"] == len(chunks)
    assert r.usage["stages"]["mindgraph.build"]["calls"] == len(chunks)
    assert r.usage["stages"]["mindgraph.answer"]["calls"] == 5
    assert r.usage["stages"]["mindgraph.report"]["calls"] >= 1
    assert [u["round"] for u in r.usage["rounds"]] == [0, 1, 2, 3, 4]
    assert r.usage["first_call_prompt_tokens"] == r.usage["rounds"][0]["prompt_tokens"] > 0
    # the build prompts follow D.1: the question, the graph so far, the block position
    first, second = (unfence(q.messages[0].content) for q in backend.requests[:2])
    assert "## Current graph state\n(empty)" in first and f"(block 1/{len(chunks)})" in first
    assert '"id": "maya_chen_moved"' in second and f"(block 2/{len(chunks)})" in second
    # the answer prompt is D.2 with the graph and its stats, the tools described
    answer_prompt = next(
        q.messages for q in backend.requests if "mind graph below" in q.messages[-1].content
    )
    assert "lookup_source" in answer_prompt[0].content  # the JSON protocol's tool list
    assert f"nodes, {r.graph['edges']} edges, built from {len(chunks)} chunks" in (
        answer_prompt[1].content
    )
    # subgraph reports were made on first use and stored for this graph
    assert any(isinstance(c, Community) for c in store.get_records(ns, "community", builder=None))
    # the stored graph reloads as it was built
    saved = load_graph(ctx, ns, r.graph["key"])
    assert saved is not None and saved.counts()["nodes"] == r.graph["nodes"]
    assert r.compaction_ratio == pytest.approx(
        count_tokens(answer_prompt[1].content) / count_tokens(DOC), abs=1e-3
    )


def test_llm_read_native_tool_calls(store, embedder) -> None:
    call = {
        "id": "c1",
        "function": {"name": "lookup_source", "arguments": '{"node_id": "her_brother_leo"}'},
    }
    final = {"content": '{"answer": "Toronto", "cited_nodes": [], "confidence": "medium"}'}
    chunks = chunk_spans(DOC, 8192)
    backend = ScriptedBackend(
        [build_reply] * len(chunks) + [{"tool_calls": [call]}, final], native_tools=True
    )
    ctx, ns, doc = llm_ctx(store, embedder, backend)
    r = asyncio.run(MindGraphReader().read(ctx, ns, doc, "Where does Leo teach?"))
    assert r.answer == "Toronto" and r.details["protocol"] == "native"
    assert "Toronto" in r.windows[0].text
    tools = backend.tool_requests[-1]
    assert tools[-1]["role"] == "tool" and "Toronto" in tools[-1]["content"]


def test_the_tool_rounds_are_capped(store, embedder) -> None:
    def always_lookup(messages: list[Message]) -> str:
        if "No more tool calls" in messages[-1].content:
            return json.dumps(
                {
                    "tool": "final",
                    "arguments": {"answer": "unknown", "cited_nodes": [], "confidence": "low"},
                }
            )
        return json.dumps({"tool": "lookup_source", "arguments": {"node_id": "her_brother_leo"}})

    backend = ScriptedBackend([build_reply] + [always_lookup] * 10)
    ctx, ns, doc = llm_ctx(store, embedder, backend)
    r = asyncio.run(MindGraphReader(ReaderParams(max_rounds=3)).read(ctx, ns, doc, Q))
    assert r.details["capped"] and r.details["tool_rounds"] == 3
    assert len(r.usage["rounds"]) == 4
    assert r.abstained  # "unknown"


def test_a_failed_build_leaves_a_valid_graph(store, embedder) -> None:
    final = {"tool": "final", "arguments": {"answer": "", "cited_nodes": [], "confidence": "low"}}
    backend = ScriptedBackend(["no json here", "still none", final])
    ctx, ns, doc = llm_ctx(store, embedder, backend)
    r = asyncio.run(MindGraphReader().read(ctx, ns, doc, Q))
    assert r.usage["failed_build_chunks"] == 1
    assert r.graph["nodes"] == 0 and r.abstained and r.windows == []
