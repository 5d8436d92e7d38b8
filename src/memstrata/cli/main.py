"""The ``memstrata`` command line."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memstrata.config import Config
from memstrata.errors import MemstrataError, NamespaceNotFoundError
from memstrata.importers import jsonl
from memstrata.memory import AsyncMemory, prepare_episode
from memstrata.store import PreparedEpisode

app = typer.Typer(
    help="Long-term memory for LLM agents: import, search, inspect and benchmark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
bench_app = typer.Typer(help="Benchmarks that print numbers.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")

out = Console()
err = Console(stderr=True)

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db", help="Store file (SQLite). Default: the configured store.", show_default=False
    ),
]
NsOpt = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="Namespace (tenant). Default: the configured one."),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="TOML configuration file (else $MEMSTRATA_CONFIG)."),
]


def _config(config: Path | None, **overrides: Any) -> Config:
    return Config.load(config, **overrides)


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except MemstrataError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


async def _open(cfg: Config, db: str | None) -> AsyncMemory:
    return await AsyncMemory.open(db, config=cfg)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
        disable=not err.is_terminal,
    )


@app.command("import")
def import_(
    file: Annotated[
        Path, typer.Argument(help="JSONL or LoCoMo JSON file.", exists=True, dir_okay=False)
    ],
    db: DbOpt = None,
    namespace: NsOpt = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="jsonl or locomo (default: from the file extension)."),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Episodes per transaction.")] = 256,
    config: ConfigOpt = None,
) -> None:
    """Import episodes. Re-importing the same ids changes nothing (safe to re-run).

    A LoCoMo file goes one namespace per conversation, named by its sample_id (prefixed
    with "NS/" when --namespace is given); turn ids are the dia_ids.

    Bad lines (invalid UTF-8, broken JSON, empty text) are listed with their line number;
    the good lines are imported and the exit status is 1.
    """
    kind = fmt or ("locomo" if file.suffix.lower() == ".json" else "jsonl")
    if kind not in {"jsonl", "locomo"}:
        err.print(f"[red]error:[/red] unknown format {kind!r}; use jsonl or locomo")
        raise typer.Exit(2)
    with _errors():
        cfg = _config(config)
        bad = asyncio.run(_import(cfg, db, namespace, file, kind, batch_size))
    if bad:
        for line, reason in bad[:50]:
            err.print(f"[yellow]line {line}:[/yellow] {reason}")
        if len(bad) > 50:
            err.print(f"... and {len(bad) - 50} more")
        err.print(f"[red]{len(bad)} line(s) not imported[/red]")
        raise typer.Exit(1)


async def _import(
    cfg: Config, db: str | None, namespace: str | None, file: Path, kind: str, batch_size: int
) -> list[tuple[int, str]]:
    memory = await _open(cfg, db)
    bad: list[tuple[int, str]] = []
    try:
        batches: dict[str, list[PreparedEpisode]] = {}
        if kind == "locomo":
            from memstrata.eval import locomo

            for conv in locomo.load(file):
                ns = conv.namespace if namespace is None else f"{namespace}/{conv.namespace}"
                batches[ns] = [prepare_episode(t, cfg) for t in conv.turns]
        else:
            ns = namespace or cfg.namespace
            items: list[PreparedEpisode] = []
            for line, parsed in jsonl.read(file):
                if isinstance(parsed, jsonl.BadLine):
                    bad.append((parsed.line, parsed.reason))
                    continue
                try:
                    items.append(prepare_episode(parsed, cfg))
                except MemstrataError as exc:
                    bad.append((line, str(exc)))
            batches[ns] = items
        total = sum(len(v) for v in batches.values())
        added = existing = 0
        with _progress() as progress:
            task = progress.add_task("importing", total=total)
            for ns, items in batches.items():
                report = await memory.add_many(
                    items,
                    namespace=ns,
                    batch_size=batch_size,
                    progress=lambda n: progress.advance(task, n),
                )
                added += len(report.added)
                existing += len(report.existing)
        out.print(
            f"imported {added} new episode(s), {existing} already present, into "
            f"{len(batches)} namespace(s): {', '.join(batches)}"
        )
    finally:
        await memory.close()
    return bad


@app.command()
def search(
    query: Annotated[str | None, typer.Argument(help="The question or keywords.")] = None,
    db: DbOpt = None,
    namespace: NsOpt = None,
    k: Annotated[int, typer.Option("--k", "-k", help="Number of hits.")] = 10,
    queries: Annotated[
        Path | None,
        typer.Option(
            "--queries",
            help='JSONL file of {"id", "query", "namespace"?}.',
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per query.")] = False,
    recipe: Annotated[
        str | None, typer.Option(help="rag, default or mnemis (mnemis needs `memstrata build`).")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Search memory and print hits with the episodes they rest on."""
    if (query is None) == (queries is None):
        err.print("[red]error:[/red] give either a QUERY or --queries FILE")
        raise typer.Exit(2)
    with _errors():
        cfg = _config(config)
        jobs = _query_jobs(query, queries, namespace or cfg.namespace)
        asyncio.run(_search(cfg, db, jobs, k, recipe, as_json))


def _query_jobs(query: str | None, path: Path | None, namespace: str) -> list[dict[str, str]]:
    if query is not None:
        return [{"id": "q", "query": query, "namespace": namespace}]
    assert path is not None
    jobs = []
    for line, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
            jobs.append(
                {
                    "id": str(obj.get("id", line)),
                    "query": str(obj["query"]),
                    "namespace": str(obj.get("namespace") or namespace),
                }
            )
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise MemstrataError(f"{path} line {line}: not a query object ({exc})") from exc
    return jobs


async def _search(
    cfg: Config,
    db: str | None,
    jobs: list[dict[str, str]],
    k: int,
    recipe: str | None,
    as_json: bool,
) -> None:
    memory = await _open(cfg, db)
    try:
        by_ns: dict[str, list[dict[str, str]]] = {}
        for job in jobs:
            by_ns.setdefault(job["namespace"], []).append(job)
        results = {}
        for ns, group in by_ns.items():
            found = await memory.search_many(
                [j["query"] for j in group], namespace=ns, k=k, recipe=recipe, max_tokens=None
            )
            results.update({j["id"]: r for j, r in zip(group, found, strict=True)})
        for job in jobs:
            result = results[job["id"]]
            if as_json:
                line = {
                    "id": job["id"],
                    "hits": [
                        {"kind": h.kind, "text": h.text, "score": h.score, "sources": h.sources}
                        for h in result.hits
                    ],
                }
                sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
            else:
                _print_hits(job["query"], result.hits)
    finally:
        await memory.close()


def _print_hits(query: str, hits: list[Any]) -> None:
    table = Table(title=f"“{query}”", show_lines=False, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("score", justify="right", width=8)
    table.add_column("sources", width=10)
    table.add_column("text", ratio=1)
    for i, h in enumerate(hits, start=1):
        text = h.text if h.kind == "episode" else f"({h.kind}) {h.text}"
        table.add_row(str(i), f"{h.score:.4f}", ", ".join(h.sources), text)
    out.print(table)


@app.command()
def stats(
    db: DbOpt = None,
    namespace: NsOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    config: ConfigOpt = None,
) -> None:
    """Counts per namespace, LLM calls and failures per stage, file size."""
    with _errors():
        cfg = _config(config)

        async def run() -> dict[str, Any]:
            memory = await _open(cfg, db)
            try:
                return await memory.stats(namespace)
            finally:
                await memory.close()

        data = asyncio.run(run())
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    out.print(f"store {data['store']} ({data['bytes'] / 1e6:.2f} MB), embedder {data['embedder']}")
    table = Table("namespace", "episodes", "embedded", "derived records")
    for ns in data["namespaces"]:
        recs = ", ".join(f"{k}: {v}" for k, v in ns["records"].items()) or "-"
        table.add_row(ns["namespace"], str(ns["episodes"]), str(ns["embedded"]), recs)
    out.print(table)
    if data["llm"]:
        llm = Table("stage", "calls", "failures", "cached", "prompt tokens", "completion tokens")
        for stage, row in data["llm"].items():
            llm.add_row(
                stage,
                *(
                    str(row[c])
                    for c in ("calls", "failures", "cached", "prompt_tokens", "completion_tokens")
                ),
            )
        out.print(llm)
    else:
        out.print("no LLM calls recorded")


@app.command()
def build(
    db: DbOpt = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace (default: every one).")
    ] = None,
    recipe: Annotated[str, typer.Option(help="Recipe whose structures to build.")] = "mnemis",
    tier: Annotated[
        str | None,
        typer.Option(help="heuristic or llm (default: llm when an LLM is configured)."),
    ] = None,
    rebuild: Annotated[bool, typer.Option(help="Drop the structures and build anew.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    config: ConfigOpt = None,
) -> None:
    """Build a recipe's structures over what is already imported.

    Resumable: only episodes not yet built are processed, so re-running after an
    interruption, or after importing more, continues where it stopped (new entities are
    placed into the existing hierarchy). Prints counts, layers and LLM cost per stage.
    """
    with _errors():
        cfg = _config(config)

        async def run() -> list[dict[str, Any]]:
            memory = await _open(cfg, db)
            try:
                names = [namespace] if namespace else await memory.namespaces()
                reports = []
                with _progress() as progress:
                    for ns in names:
                        total = (await memory.stats(ns))["namespaces"][0]["episodes"]
                        task = progress.add_task(f"building {ns}", total=total)

                        def advance(n: int, task: Any = task) -> None:
                            progress.advance(task, n)

                        report = await memory.build(
                            ns, recipe=recipe, tier=tier, rebuild=rebuild, progress=advance
                        )
                        reports.append(dataclasses.asdict(report))
                return reports
            finally:
                await memory.close()

        reports = asyncio.run(run())
    if as_json:
        sys.stdout.write(json.dumps(reports, indent=2, default=str) + "\n")
        return
    for r in reports:
        out.print(
            f"{r['namespace']}: tier {r['tier']}, {r['episodes']} new episodes, "
            f"{r['entities']} entities, {r['facts']} facts, {r['categories']} categories "
            f"(layers {r['layers']}, hierarchy {r['hierarchy']}), {r['seconds']} s, "
            f"{r['failures']} failed episodes"
        )
        for stage, row in r["llm"].items():
            per = row["prompt_tokens"] / max(1, r["episodes"])
            out.print(
                f"  {stage}: {row['calls']} calls, {row['failures']} failures, "
                f"{row['prompt_tokens']} prompt tokens ({per:.0f} per episode)"
            )


@app.command()
def show(
    name: Annotated[str, typer.Argument(help="Category or entity name (case-insensitive).")],
    db: DbOpt = None,
    namespace: NsOpt = None,
    depth: Annotated[int, typer.Option(help="Levels of a category subtree to print.")] = 2,
    config: ConfigOpt = None,
) -> None:
    """Show a category subtree, or an entity with its facts and source turns."""
    from rich.tree import Tree

    from memstrata.structures.graph import Graph

    with _errors():
        cfg = _config(config)
        ns = namespace or cfg.namespace

        async def run() -> Graph:
            memory = await _open(cfg, db)
            try:
                if not memory.store.has_namespace(ns):
                    raise NamespaceNotFoundError(ns)
                return Graph.load(memory.store, memory.embedder, ns)
            finally:
                await memory.close()

        graph = asyncio.run(run())
        want = name.casefold()
        cats = [c for c in graph.categories.values() if c.name.casefold() == want]
        if cats:
            for cat in sorted(cats, key=lambda c: -c.layer):
                tree = Tree(f"[bold]{cat.name}[/] (layer {cat.layer})")
                _subtree(graph, tree, cat.child_ids, depth)
                out.print(tree)
            return
        ents = [
            e
            for e in graph.entities.values()
            if e.name.casefold() == want or want in (a.casefold() for a in e.aliases)
        ]
        if not ents:
            raise MemstrataError(f"no category or entity named {name!r} in namespace {ns!r}")
        for ent in ents:
            out.print(f"[bold]{ent.name}[/] ({', '.join(ent.tags)})")
            if ent.summary:
                out.print(ent.summary)
            eps = graph.episode_ids(ent.id)
            out.print(f"appears in {len(eps)} episodes: {', '.join(eps[:20])}")
            facts = sorted(graph.facts_of.get(ent.id, ()), key=lambda f: graph.facts[f].fact)
            for fid in facts[:30]:
                f = graph.facts[fid]
                ended = f" (invalid since {f.invalid_at:%Y-%m-%d})" if f.invalid_at else ""
                out.print(f"  - {f.fact}{ended}  [{', '.join(graph.episode_ids(fid))}]")


def _subtree(graph: Any, tree: Any, ids: list[str], depth: int) -> None:
    for cid in ids:
        cat = graph.categories.get(cid)
        if cat is not None:
            branch = tree.add(f"{cat.name} (layer {cat.layer}, {len(cat.child_ids)} children)")
            if depth > 1:
                _subtree(graph, branch, cat.child_ids, depth - 1)
        elif cid in graph.entities:
            ent = graph.entities[cid]
            tree.add(f"{ent.name} [{len(graph.episode_ids(cid))} episodes]")


@app.command()
def delete(
    db: DbOpt = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="Namespace to delete from.")
    ] = ...,  # type: ignore[assignment]
    ids: Annotated[
        list[str] | None,
        typer.Option("--id", help="Episode id (repeat). Without it: the whole namespace."),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Delete episodes (or a whole namespace) and everything derived from them."""
    what = f"{len(ids)} episode(s) from" if ids else "the whole namespace"
    if not yes and not typer.confirm(f"Delete {what} {namespace!r}?"):
        raise typer.Exit(1)
    with _errors():
        cfg = _config(config)

        async def run() -> int:
            memory = await _open(cfg, db)
            try:
                return await memory.delete(ids or None, namespace=namespace)
            finally:
                await memory.close()

        removed = asyncio.run(run())
    out.print(f"deleted {removed} episode(s) from {namespace!r}")


@app.command("config")
def show_config(
    config: ConfigOpt = None,
) -> None:
    """Print the effective configuration (defaults < file < MEMSTRATA_* < flags), secrets
    masked."""
    with _errors():
        cfg = _config(config)
    sys.stdout.write(json.dumps(cfg.masked(), indent=2) + "\n")


@app.command()
def demo(
    db: Annotated[
        str | None, typer.Option("--db", help="Where to keep the demo store (default: a temp dir).")
    ] = None,
) -> None:
    """Import the bundled sample conversation and run a few searches (offline)."""
    sample = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    with tempfile.TemporaryDirectory() as tmp, _errors():
        path = db or str(Path(tmp) / "demo.db")
        cfg = Config.load(store=path)

        async def run() -> None:
            memory = await AsyncMemory.open(config=cfg)
            try:
                items = []
                for _, parsed in jsonl.read(str(sample)):
                    assert not isinstance(parsed, jsonl.BadLine), parsed
                    items.append(parsed)
                report = await memory.add_many(items, namespace="demo")
                out.print(
                    f"[bold]memstrata demo[/bold]: {len(report.added)} turns imported "
                    f"into {path} (namespace 'demo')"
                )
                questions = [
                    "What is the name of Tomas's dog?",
                    "When is Maya's talk in Lisbon?",
                    "How did Maya hurt her ankle?",
                    "How much money has the charity ride raised?",
                ]
                results = await memory.search_many(questions, namespace="demo", k=3)
                for q, r in zip(questions, results, strict=True):
                    _print_hits(q, r.hits)
                    out.print(f"  context: {r.context_tokens} tokens\n")
                built = await memory.build("demo")
                out.print(
                    f"[bold]mnemis[/bold] build: {built.entities} entities, {built.facts} "
                    f"facts, layers {built.layers}, {built.seconds:.1f} s"
                )
                question = "What has Tomas been doing with his dog?"
                (graph_result,) = await memory.search_many(
                    [question], namespace="demo", k=3, recipe="mnemis"
                )
                _print_hits(question, graph_result.hits[:6])
                st = await memory.stats("demo")
                out.print(f"store size {st['bytes'] / 1e3:.0f} kB; no LLM was needed.")
            finally:
                await memory.close()

        asyncio.run(run())


@bench_app.command("locomo")
def bench_locomo(
    file: Annotated[Path, typer.Argument(help="LoCoMo JSON file.", exists=True, dir_okay=False)],
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write locomo.json/.md.")] = Path(
        "bench-out"
    ),
    recipe: Annotated[
        str, typer.Option(help="Recipes under test, comma-separated (e.g. default,mnemis).")
    ] = "default",
    config: ConfigOpt = None,
) -> None:
    """Evidence Recall@K / Precision@K per category, beside flat BM25 and flat RAG.

    Recipes that need structures (`mnemis`) are built first, with the configured tier.
    """
    from memstrata.eval import bench_locomo as bl

    with tempfile.TemporaryDirectory() as tmp, _errors():
        cfg = _config(config)
        path = db or str(Path(tmp) / "locomo.db")
        wanted = [r.strip() for r in recipe.split(",") if r.strip()]
        systems = ["bm25", "rag"] + [r for r in wanted if r not in {"bm25", "rag"}]

        async def run() -> dict[str, Any]:
            memory = await AsyncMemory.open(path, config=cfg)
            try:
                with _progress() as progress:
                    task = progress.add_task("importing", total=None)
                    return await bl.run(
                        memory, file, systems, progress=lambda n: progress.advance(task, n)
                    )
            finally:
                await memory.close()

        report = asyncio.run(run())
        jpath, mpath = bl.write(report, out_dir)
    sys.stdout.write(bl.markdown(report))
    out.print(f"written {jpath} and {mpath}")


@bench_app.command("mnemis")
def bench_mnemis(
    file: Annotated[Path, typer.Argument(help="LoCoMo JSON file.", exists=True, dir_okay=False)],
    conversation: Annotated[str, typer.Option(help="Which conversation to slice.")] = "conv-26",
    turns: Annotated[int, typer.Option(help="Turns imported and built first.")] = 60,
    inserts: Annotated[
        int, typer.Option(help="Turns then added one by one, each with an incremental build.")
    ] = 0,
    tier: Annotated[
        str | None,
        typer.Option(help="heuristic or llm; llm without a configured LLM uses the bundled GGUF."),
    ] = None,
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write mnemis.json/.md.")] = Path(
        "bench-out"
    ),
    config: ConfigOpt = None,
) -> None:
    """Build cost on a slice of one conversation: seconds, LLM calls and tokens per turn
    per stage, hierarchy rules checked, and single-episode insert latency (p50/p95)."""
    from memstrata.eval import bench_mnemis as bm

    with tempfile.TemporaryDirectory() as tmp, _errors():
        cfg = _config(config)
        if tier == "llm" and cfg.llm.kind == "none":
            cfg.llm.kind = "gguf"
        path = db or str(Path(tmp) / "mnemis.db")

        async def run() -> dict[str, Any]:
            memory = await AsyncMemory.open(path, config=cfg)
            try:
                with _progress() as progress:
                    task = progress.add_task("building", total=turns)
                    return await bm.run(
                        memory,
                        file,
                        conversation=conversation,
                        turns=turns,
                        inserts=inserts,
                        tier=tier,
                        progress=lambda n: progress.advance(task, n),
                    )
            finally:
                await memory.close()

        try:
            report = asyncio.run(run())
        except ValueError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
        jpath, mpath = bm.write(report, out_dir)
    sys.stdout.write(bm.markdown(report))
    out.print(f"written {jpath} and {mpath}")


@bench_app.command("scale")
def bench_scale(
    n: Annotated[int, typer.Option("--n", help="Synthetic episodes to ingest.")] = 100_000,
    queries: Annotated[int, typer.Option(help="Queries to time.")] = 200,
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out")] = Path("bench-out"),
    seed: Annotated[int, typer.Option(help="Random seed of the synthetic data.")] = 7,
) -> None:
    """Ingest throughput, p50/p95 search latency and bytes per episode on synthetic data."""
    from memstrata.eval import bench_scale as bs

    with tempfile.TemporaryDirectory() as tmp, _errors():
        path = db or str(Path(tmp) / "scale.db")
        with _progress() as progress:
            task = progress.add_task("ingesting", total=n)
            report = bs.run(
                path,
                n=n,
                n_queries=queries,
                seed=seed,
                progress=lambda k: progress.advance(task, k),
            )
        jpath, mpath = bs.write(report, out_dir)
    sys.stdout.write(bs.markdown(report))
    out.print(f"written {jpath} and {mpath}")


def main() -> None:  # pragma: no cover
    app()
