"""``memstrata bench serve``: a real served store under loopback load."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from memstrata.cli.common import ConfigOpt, bench_app, errors, out, progress_bar
from memstrata.wording import plural


@bench_app.command("serve")
def bench_serve(
    clients: Annotated[
        int,
        typer.Option(min=1, help="Concurrent clients, one keep-alive connection each."),
    ] = 16,
    requests: Annotated[
        int,
        typer.Option(min=0, help="Requests of the load phase, in all (adds and searches)."),
    ] = 2000,
    seconds: Annotated[
        float,
        typer.Option(
            min=0,
            help="Time bound of the load phase: past it no request is started (those in "
            "flight finish) and the report says the run was cut.",
        ),
    ] = 300.0,
    add_share: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="Share of the load's requests that add one new episode."
        ),
    ] = 0.3,
    seed_episodes: Annotated[
        int,
        typer.Option(
            min=0, help="Synthetic chat turns added over REST before the load (batches of 250)."
        ),
    ] = 2000,
    queries: Annotated[
        int,
        typer.Option(
            min=1,
            help="Queries timed one at a time, each four ways (after 10 warm-up queries); "
            "a multiple of 24 gives each order of the four sides equally often.",
        ),
    ] = 480,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            help="Serve this store (created if absent, kept afterwards) instead of a "
            "temporary one. The bench writes only in the namespace 'bench-serve', with ids "
            "of its own run.",
            show_default=False,
        ),
    ] = None,
    http: Annotated[
        str, typer.Option(help="The served HTTP parser (serve --http): auto or h11.")
    ] = "auto",
    loop: Annotated[
        str, typer.Option(help="The served event loop (serve --loop): auto or asyncio.")
    ] = "auto",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as one JSON object instead.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Start `memstrata serve` as a child process on a free loopback port, load it, check
    it kept every add, and measure what REST costs over an in-process search.

    1. Seed: --seed-episodes synthetic chat turns (distinct texts) added over REST.

    2. Load: --clients concurrent clients share --requests requests, --add-share of them
    adds of one new episode (unique ids), the rest searches (k=10) made of the seeded
    words. Per verb: count, p50/p95 latency of the requests answered 2xx (from the call to
    the body read), errors by status or exception; overall throughput. Then the store
    file is read directly: every add answered 2xx must be stored exactly once
    (adds_visible, missing, duplicates).

    3. Sequential: --queries queries one at a time, each four ways: over REST through
    AsyncRemoteMemory (the service's own client, a SearchResult back), through
    AsyncMemory in this process on the same file, over REST on a plain socket (no client
    library) and over REST through httpx.AsyncClient; the order cycles through every
    permutation, so drift and warm caches favour no side. p50/p95 of each, overhead =
    p50 REST - p50 in-process with a bootstrap 95 % interval over the queries, and its
    parts timed beside: a bare round trip (GET /v1/health, through the client and over a
    plain socket), the key check every request makes, encoding the result as the
    endpoint does, decoding it in the client.

    The server and the bench share this machine's cores: the load figures include the
    clients' own work. Exits 1 if an acknowledged add is missing or stored twice, or if
    any request of the load failed."""
    from memstrata.eval import bench_serve as bs

    settings = bs.Settings(
        clients=clients,
        requests=requests,
        seconds=seconds,
        add_share=add_share,
        seed_episodes=seed_episodes,
        queries=queries,
    )
    with errors(as_json=as_json), progress_bar() as progress:

        def phase(name: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(name, total=total)
            return lambda n: progress.advance(task, n)

        server_args = ["--http", http, "--loop", loop]
        report = bs.run(settings, db=db, config=config, phases=phase, server_args=server_args)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        show(report)
    if bs.failed(report):
        raise typer.Exit(1)


def show(report: dict[str, Any]) -> None:
    """The report as tables: the load, its check, the sequential comparison."""
    from memstrata.eval import bench_serve as bs

    s, load, check, over = report["setup"], report["load"], report["check"], report["overhead"]
    cut = " (cut by the time bound)" if load["stopped_by_time"] else ""
    out.print(
        f"memstrata bench serve: {s['server']} ({s['cores']} cores, Python {s['python']}, "
        f"recipe {s['recipe']}); {plural(report['seed']['episodes'], 'episode')} seeded in "
        f"{report['seed']['seconds']} s"
    )
    table = Table(
        "verb", "requests", "ok", "p50 ms", "p95 ms", "errors",
        title=Text(
            f"Load: {s['clients']} clients, {load['issued']} of {s['requests']} requests in "
            f"{load['seconds']} s{cut}, {load['throughput_rps']} requests/s"
        ),
    )  # fmt: skip
    for verb, v in load["verbs"].items():
        by = ", ".join(f"{k}: {n}" for k, n in v["errors_by_status"].items())
        table.add_row(
            verb,
            str(v["count"]),
            str(v["ok"]),
            f"{v['p50_ms']:.2f}",
            f"{v['p95_ms']:.2f}",
            f"{v['errors']} ({by})" if by else "0",
        )
    out.print(table)
    out.print(
        f"check: {check['adds_visible']} of {check['adds_acknowledged']} acknowledged adds "
        f"stored, missing {check['missing']}, duplicates {check['duplicates']}; failed adds "
        f"stored anyway {check['failed_adds_stored']}; {check['episodes_in_namespace']} "
        "episodes in the namespace"
    )
    table = Table(
        "search, one at a time", "queries", "p50 ms", "p95 ms",
        title=Text(f"Sequential: REST against in-process, after {over['warmup']} warm-up"),
    )  # fmt: skip
    for label, key in (
        ("REST, AsyncRemoteMemory (aiohttp), SearchResult", "rest"),
        ("in-process AsyncMemory", "inprocess"),
        ("REST, plain socket (no client library), decoded JSON", "rest_bare"),
        ("REST, httpx.AsyncClient, decoded JSON", "rest_httpx"),
    ):
        row = over[key]
        table.add_row(label, str(row["count"]), f"{row['p50_ms']:.2f}", f"{row['p95_ms']:.2f}")
    table.add_section()
    low, high = over["overhead_ci95_ms"]
    table.add_row(
        "overhead (p50 REST - p50 in-process)",
        "",
        f"{over['overhead_ms']:.2f}",
        f"95 % interval {low:.2f} to {high:.2f}",
    )
    out.print(table)
    parts = over["parts_p50_ms"]
    out.print(
        "parts of the overhead (p50 ms): a bare round trip (GET /v1/health) "
        f"{parts['roundtrip']:.2f} through the client, {over['roundtrip_bare_p50_ms']:.2f} over a "
        f"plain socket; the key check {parts['key_check']:.2f}; encoding the result "
        f"{parts['encode']:.2f}; decoding it {parts['decode']:.2f}; sum "
        f"{over['parts_sum_ms']:.2f}; response body {over['body_bytes_p50']} bytes"
    )
    if not bs.clean_exit(report["server_exit"]):
        out.print(f"the server exited with status {report['server_exit']}")
