"""``memstrata bench scale``: ingest throughput, search latency and bytes per episode.

The data are synthetic chat turns made from templates and word lists with a fixed seed:
about 15-30 words each, several hundred distinct content words spread over many speakers
and sessions, so BM25 posting lists and the vector matrix look like a real conversation
store at that size. Timings:

* ingest: ``add_many`` end to end (validation, embedding with the default embedder, SQLite
  writes), in batches of 512;
* search: each query timed alone (model loaded, index warm), and batches of 32 queries
  timed as a whole (per-query cost = batch time / 32); p50 and p95 over the queries;
* baselines in the same run: flat BM25 alone (one FTS5 query) and dense alone (one matrix
  product), timed the same way, on the same file with the namespace's indexes (vector
  graph, full-text index) left unused.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memstrata.embed.minilm import MiniLMEmbedder, usable_cores
from memstrata.eval.metrics import percentile
from memstrata.eval.precomputed import Precomputed
from memstrata.eval.report import write_report
from memstrata.memory import AsyncMemory
from memstrata.retrieval.documents import embed_text
from memstrata.retrieval.text import content_terms
from memstrata.store import ann, fulltext, sqlite_text
from memstrata.store.sqlite import SQLiteStore

NAMES = """
Ana Ben Chloe Dev Elif Farid Grace Hiro Ines Jonas Kemi Luca Maya Nadia Omar Priya Quinn
Rosa Sami Tomas Uma Viktor Wen Ximena Yusuf Zoe
""".split()
# The first three keep the texts of earlier runs; with all, up to 703 variations of a turn.
SURNAMES = tuple(
    f" {s}"
    for s in """
Lee Diaz Okafor Novak Haddad Tanaka Silva Kowalski Mensah Petrov Rossi Nguyen Costa Moreau
Schmidt Kaya Lindqvist Fischer Ortiz Banerjee Kruger Walsh Sato Herrera Ivanova Adeyemi
""".split()
)
VERBS = """
visited cooked painted repaired booked cancelled finished started planned adopted bought
sold borrowed lost found organised joined left hosted practised learned taught wrote
read watched recorded photographed cleaned built designed ordered delivered
""".split()
OBJECTS = """
bicycle garden kitchen guitar novel podcast marathon conference workshop recipe
apartment puppy kitten laptop camera telescope sculpture mural festival concert
exhibition startup budget invoice contract roadmap dashboard pipeline database server
migration wedding birthday picnic barbecue hike trip flight ticket museum library
lecture thesis exam interview promotion holiday vineyard orchard boat piano violin drum
choir theatre football tennis chess poem letter diary quilt pottery candle bakery cafe
market
""".split()
PLACES = """
Lisbon Porto Berlin Kyoto Lagos Lima Oslo Prague Seattle Toronto Nairobi Hanoi Dublin
Boston Denver Madrid Vienna Sydney Cairo Quito the park the office the lake the
mountains the coast the village downtown the suburbs
""".split()
ADJS = """
wonderful stressful exciting quiet chaotic relaxing expensive cheap huge tiny surprising
boring colourful rainy sunny cold warm noisy peaceful busy
""".split()
# Single words, like PLACES: the data the published figures were measured on.
TIMES = """
yesterday last week this morning on Sunday last month two days ago over the weekend last
night in spring in autumn
""".split()
TEMPLATES = (
    "I {verb} the {obj} in {place} {time}, it was {adj} and {name} came along.",
    "{name} and I {verb} a {obj} {time}; honestly it felt {adj}.",
    "Did you hear that {name} {verb} the {obj}? I think it was {adj} for everyone in {place}.",
    "We finally {verb} our {obj} {time}. Next we want a {adj} {obj2} near {place}.",
    "My {obj} is {adj} lately, so {time} I {verb} a {obj2} with {name}.",
    "Thinking about the {obj} in {place} makes me smile, {name} {verb} it {time}.",
)


def _clause(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        verb=rng.choice(VERBS),
        obj=rng.choice(OBJECTS),
        obj2=rng.choice(OBJECTS),
        place=rng.choice(PLACES),
        time=rng.choice(TIMES),
        adj=rng.choice(ADJS),
        name=rng.choice(NAMES),
    )


def synthetic_turns(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    turns = []
    for i in range(n):
        text = _clause(rng)
        if rng.random() < 0.5:
            text += " " + _clause(rng)
        turns.append(
            {
                "id": f"e{i}",
                "text": text,
                "speaker": NAMES[i % 7],
                "session": f"s{i // 20}",
                "occurred_at": start + timedelta(minutes=7 * i),
            }
        )
    return turns


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    forms = (
        "When did {name} visit {place}?",
        "What happened with the {obj}?",
        "Who {verb} the {obj} in {place}?",
        "What did {name} say about the {adj} {obj}?",
    )
    return [
        rng.choice(forms).format(
            name=rng.choice(NAMES),
            place=rng.choice(PLACES),
            obj=rng.choice(OBJECTS),
            verb=rng.choice(VERBS),
            adj=rng.choice(ADJS),
        )
        for _ in range(n)
    ]


def _summary(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 0.95), 2)}


NS = "scale"
BATCH = 512
BARE_SAMPLE = 4096
MANUAL: dict[str, Any] = {"build.mode": "manual"}  # ingest and search only
EXACT = 10**12  # an ann_threshold no namespace reaches: the exact path as a baseline


def real_turns(data: Sequence[tuple[str, str]], n: int) -> tuple[list[dict[str, Any]], list[str]]:
    """``n`` episodes made of the data sets' turns, repeated with variations, and their
    questions. Copy ``j`` of a turn has another speaker and session (the speaker is part
    of the embedded text, so every copy is a distinct text with a vector of its own; a
    size that would need more variations than there are is refused)."""
    from memstrata.eval.qa import formats

    turns: list[Any] = []
    questions: list[str] = []
    for path, fmt in data:
        for sample in formats.load(path, fmt):
            turns.extend(sample.turns)
            questions.extend(q.question for q in sample.qa)
    if not turns:
        raise ValueError("the data hold no turns")
    own = {t.speaker for t in turns}  # a made-up name never repeats a real speaker's
    names = [f"{a}{b}" for b in ("",) + SURNAMES for a in NAMES if f"{a}{b}" not in own]
    if n > len(turns) * (len(names) + 1):
        raise ValueError(
            f"{n} episodes would repeat texts: at most {len(turns) * (len(names) + 1)}"
        )
    out = []
    for i in range(n):
        copy, t = divmod(i, len(turns))
        turn = turns[t]
        speaker = turn.speaker if copy == 0 else names[(copy - 1) % len(names)]
        out.append(
            {
                "id": f"v{copy}-{t}",
                "text": turn.text,
                "speaker": speaker,
                "session": f"c{copy}-{turn.session or 'none'}",
                "occurred_at": turn.at,
            }
        )
    return out, questions


def pick_queries(questions: Sequence[str], n: int, seed: int) -> list[str]:
    """The run's questions: ``n`` of the data sets', drawn with ``seed`` (studies on a kept
    store draw the same ones)."""
    return random.Random(seed).sample(list(questions), min(n, len(questions)))


def kept_episodes(path: str, episodes: Sequence[dict[str, Any]]) -> int:
    """How many of ``episodes`` a store kept by an earlier run (``--db``) holds already, so
    a run goes on from there: its sizes up to that count are measured without an ingest.
    A store holding other episodes is refused rather than measured as if it were this
    data."""
    import sqlite3

    if path in ("", ":memory:") or not Path(path).exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT COUNT(*) FROM episodes e JOIN namespaces n ON n.id = e.namespace_id "
            "WHERE n.name = ?",
            (NS,),
        ).fetchone()
        n = int(row[0]) if row else 0
        if n == 0:
            return 0
        if n > len(episodes):
            raise ValueError(
                f"{path} holds {n:,} episodes in {NS!r}, more than the largest size "
                f"({len(episodes):,}): a kept store only grows"
            )
        probes = sorted({0, n // 2, n - 1})
        ids = [episodes[i]["id"] for i in probes]
        found = conn.execute(
            "SELECT COUNT(*) FROM episodes e JOIN namespaces n ON n.id = e.namespace_id "
            f"WHERE n.name = ? AND e.external_id IN ({','.join('?' * len(ids))})",
            (NS, *ids),
        ).fetchone()[0]
    except sqlite3.DatabaseError:
        return 0  # not a store yet: opening it says what is wrong
    finally:
        conn.close()
    if found != len(probes):
        raise ValueError(
            f"{path} holds {n:,} episodes in {NS!r} that are not this run's first {n:,}: "
            "use another --db, or the data and seed it was filled with"
        )
    return n


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


async def _run(
    path: str,
    sizes: list[int],
    n_queries: int,
    seed: int,
    data: Sequence[tuple[str, str]],
    progress: Callable[[int], None] | None,
    checkpoint: Callable[[dict[str, Any]], object] | None = None,
) -> dict[str, Any]:
    if data:
        episodes, questions = real_turns(data, sizes[-1])
        queries = pick_queries(questions, n_queries, seed)
        source = "turns of " + ", ".join(p for p, _ in data) + ", repeated with variations"
    else:
        episodes, queries = synthetic_turns(sizes[-1], seed), synthetic_queries(n_queries)
        source = f"synthetic chat turns (seed {seed})"
    inner = MiniLMEmbedder()
    inner.embed(["warm up"] * 96)  # every worker's session made before anything is timed
    embedder = Precomputed(inner)
    embedder.warm(queries)  # search timings leave the query embedding out
    t = time.perf_counter()
    inner.embed(queries)
    query_ms = 1000 * (time.perf_counter() - t) / len(queries)
    qvecs = np.stack([embedder.known[q] for q in queries])
    report: dict[str, Any] = {
        "data": source,
        "queries": len(queries),
        "cores": usable_cores(),
        "ann_threshold": ann.ANN_THRESHOLD,
        "text_threshold": fulltext.TEXT_THRESHOLD,
        "query_embedding_ms": round(query_ms, 2),
        "sizes": [],
    }
    have = kept_episodes(path, episodes)
    report["kept_episodes"] = have
    if progress is not None and have:
        progress(have)
    for size in sizes:
        fill = episodes[have:size]
        row: dict[str, Any] = {"episodes": size}
        # the bare embedder on a sample of the same texts, same cores, just before
        texts = [embed_text(e["text"], e.get("speaker"), {}) for e in fill]
        sample = random.Random(seed).sample(texts, min(BARE_SAMPLE, len(texts)))
        bare = 0.0
        if sample:
            t = time.perf_counter()
            inner.embed(sample)
            bare = len(sample) / (time.perf_counter() - t)
        memory = await AsyncMemory.open(path, embedder=embedder, **MANUAL)
        store = memory.store
        assert isinstance(store, SQLiteStore)
        try:
            row.update(ingest_episodes_per_s=None, bare_embedder_texts_per_s=None)
            row["ingest_vs_bare"] = None  # the kept store held this size already
            if fill:
                t = time.perf_counter()
                await memory.add_many(fill, namespace=NS, batch_size=BATCH, progress=progress)
                rate = len(fill) / (time.perf_counter() - t)
                row.update(
                    ingest_episodes_per_s=round(rate, 1),
                    bare_embedder_texts_per_s=round(bare, 1),
                    ingest_vs_bare=round(rate / bare, 3),
                )
            t = time.perf_counter()
            store.dense_episodes(NS, embedder.model_id, qvecs[:1], 10)
            store.wait_for_vector_indexes()
            info = store.vector_index_info(NS, embedder.model_id)
            row["graph_build_s"] = round(time.perf_counter() - t, 2) if info["graph"] else None
            row["index"] = info
            t = time.perf_counter()
            store.text_index_info(NS)  # past the threshold: a build starts
            store.wait_for_text_indexes()
            text = store.text_index_info(NS)
            row["text_build_s"] = round(time.perf_counter() - t, 2) if text["indexed"] else None
            row["text_index"] = text
            if not fill:  # nothing was added: no build to time
                row["graph_build_s"] = row["text_build_s"] = None
            await memory.search_many(queries[:8], namespace=NS, k=10)  # warm
            row["search"] = await _timings(memory, store, queries, qvecs)
            row["bytes_per_episode"] = round(store.size_bytes() / size, 1)
        finally:
            await memory.close()
        row["vs_exact"] = await _against_exact(path, embedder, queries, qvecs)
        row["open"] = await _open_time(path, embedder, queries[0])
        row["index_bytes_per_episode"] = round(_dir_bytes(Path(path + "-ann")) / size, 1)
        row["text_index_bytes_per_episode"] = round(_dir_bytes(Path(path + "-fts")) / size, 1)
        report["sizes"].append(row)
        if checkpoint is not None:  # a long run keeps what it measured if stopped
            checkpoint(report)
        have = max(have, size)
    return report


async def _timings(
    memory: AsyncMemory, store: SQLiteStore, queries: list[str], qvecs: np.ndarray
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for recipe in ("rag", "default"):
        ms = []
        for q in queries:
            t = time.perf_counter()
            await memory.search(q, namespace=NS, k=10, recipe=recipe, max_tokens=None)
            ms.append(1000 * (time.perf_counter() - t))
        out[recipe] = _summary(ms)
    bm25, dense = [], []
    model = memory.embedder.model_id
    for q, vec in zip(queries, qvecs, strict=True):
        t = time.perf_counter()
        store.bm25_episodes(NS, content_terms(q), 10)
        bm25.append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        store.dense_episodes(NS, model, vec[None, :], 10)
        dense.append(1000 * (time.perf_counter() - t))
    out["bm25_alone"] = _summary(bm25)
    out["dense_alone"] = _summary(dense)
    return out


async def _against_exact(
    path: str, embedder: Any, queries: list[str], qvecs: np.ndarray
) -> dict[str, Any]:
    """Top-10 as served (graph, pruned BM25) against the exact path on the same file (every
    vector scanned, every query term read), for ``default`` and for each primitive; the
    exact primitives' latencies are the baselines of the served ones."""
    served = await AsyncMemory.open(path, embedder=embedder, **MANUAL)
    with _exact_stores():
        exact = await AsyncMemory.open(path, embedder=embedder, **MANUAL)
    model = embedder.model_id
    found: dict[str, list[float]] = {"default": [], "dense": [], "bm25": []}
    ms: dict[str, list[float]] = {"dense": [], "bm25": []}
    try:
        await exact.search(queries[0], namespace=NS, k=10)  # load the matrix
        for q, vec in zip(queries, qvecs, strict=True):
            pair = []
            for m in (served, exact):
                hits = (await m.search(q, namespace=NS, k=10, max_tokens=None)).hits
                pair.append({h.id for h in hits})
            found["default"].append(_overlap(*pair))
            terms = content_terms(q)
            have = served.store.bm25_episodes(NS, terms, 10)
            t = time.perf_counter()
            want = exact.store.bm25_episodes(NS, terms, 10)
            ms["bm25"].append(1000 * (time.perf_counter() - t))
            found["bm25"].append(_overlap({k for k, _ in have}, {k for k, _ in want}))
            have = served.store.dense_episodes(NS, model, vec[None, :], 10)[0]
            t = time.perf_counter()
            want = exact.store.dense_episodes(NS, model, vec[None, :], 10)[0]
            ms["dense"].append(1000 * (time.perf_counter() - t))
            found["dense"].append(_overlap({k for k, _ in have}, {k for k, _ in want}))
    finally:
        await served.close()
        await exact.close()
    return {
        **{f"recall_{k}": round(statistics.mean(v), 4) for k, v in found.items()},
        "exact_dense": _summary(ms["dense"]),
        "bm25_every_term": _summary(ms["bm25"]),
    }


def _overlap(have: set[Any], want: set[Any]) -> float:
    return len(have & want) / len(want) if want else 1.0


@contextmanager
def _exact_stores() -> Iterator[None]:
    """Stores opened inside scan every vector and ask FTS5 with every query term."""
    saved = ann.ANN_THRESHOLD, fulltext.TEXT_THRESHOLD, sqlite_text.BM25_BUDGET
    ann.ANN_THRESHOLD, fulltext.TEXT_THRESHOLD, sqlite_text.BM25_BUDGET = EXACT, EXACT, None
    try:
        yield
    finally:
        ann.ANN_THRESHOLD, fulltext.TEXT_THRESHOLD, sqlite_text.BM25_BUDGET = saved


async def _open_time(path: str, embedder: Any, query: str) -> dict[str, float]:
    """From opening the store to the first search answered (the embedder already loaded;
    its load is timed apart)."""
    t = time.perf_counter()
    memory = await AsyncMemory.open(path, embedder=embedder, **MANUAL)
    await memory.search(query, namespace=NS, k=10)
    ready = time.perf_counter() - t
    await memory.close()
    t = time.perf_counter()
    MiniLMEmbedder().embed(["warm up"])
    return {"ready_s": round(ready, 3), "embedder_load_s": round(time.perf_counter() - t, 3)}


def run(
    path: str,
    *,
    sizes: list[int],
    n_queries: int = 200,
    seed: int = 7,
    data: Sequence[tuple[str, str]] = (),
    ann_threshold: int | None = None,
    text_threshold: int | None = None,
    progress: Callable[[int], None] | None = None,
    checkpoint: Callable[[dict[str, Any]], object] | None = None,
) -> dict[str, Any]:
    if not sizes or sorted(sizes) != sizes or sizes[0] < 1:
        raise ValueError("sizes must be increasing and positive")
    defaults = ann.ANN_THRESHOLD, fulltext.TEXT_THRESHOLD
    # every store this run opens takes them
    ann.ANN_THRESHOLD = ann_threshold or defaults[0]
    fulltext.TEXT_THRESHOLD = text_threshold or defaults[1]
    try:
        return asyncio.run(_run(path, sizes, n_queries, seed, data, progress, checkpoint))
    finally:
        ann.ANN_THRESHOLD, fulltext.TEXT_THRESHOLD = defaults


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Scale benchmark: {report['data']}, one namespace, {report['cores']} core(s), "
        f"{report['queries']} queries, approximate index from {report['ann_threshold']:,} "
        f"vectors, full-text index from {report.get('text_threshold', 0):,} documents",
        f"query embedding (apart from the search timings): {report['query_embedding_ms']} ms/query",
        "",
        "| episodes | ingest eps/s | bare embedder texts/s | ratio | graph build s "
        "| text index build s | open to first search s | bytes/episode "
        "| graph bytes/episode | text index bytes/episode |",
        "|" + "---|" * 10,
    ]
    for r in report["sizes"]:
        lines.append(
            f"| {r['episodes']:,} | {r['ingest_episodes_per_s'] or 'kept'} | "
            f"{r['bare_embedder_texts_per_s'] or '-'} | {r['ingest_vs_bare'] or '-'} | "
            f"{r['graph_build_s'] or '-'} | {r.get('text_build_s') or '-'} | "
            f"{r['open']['ready_s']} | {r['bytes_per_episode']} | "
            f"{r['index_bytes_per_episode']} | {r.get('text_index_bytes_per_episode', 0)} |"
        )
    lines += [
        "",
        "| episodes | default p50/p95 ms | rag | BM25 as served | BM25 by FTS5, every term "
        "| dense as served | dense exact | top-10 vs exact: default / BM25 / dense |",
        "|" + "---|" * 8,
    ]
    for r in report["sizes"]:
        s, x = r["search"], r["vs_exact"]

        def pair(t: dict[str, float]) -> str:
            return f"{t['p50_ms']} / {t['p95_ms']}"

        lines.append(
            f"| {r['episodes']:,} | {pair(s['default'])} | {pair(s['rag'])} | "
            f"{pair(s['bm25_alone'])} | {pair(x['bm25_every_term'])} | "
            f"{pair(s['dense_alone'])} | {pair(x['exact_dense'])} | "
            f"{x['recall_default']} / {x['recall_bm25']} / {x['recall_dense']} |"
        )
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "scale", markdown)
