"""``memstrata bench explorer``: the web explorer in headless Chromium on built stores."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from memstrata.cli.common import bench_app, err, errors, out
from memstrata.wording import plural


@bench_app.command("explorer")
def bench_explorer(
    data: Annotated[
        Path | None,
        typer.Option(
            help="A LoCoMo file, or a directory holding one (the dev split first): its "
            "conversations are built by every recipe that builds something and each page "
            "of the explorer is checked on them.",
            exists=True,
            show_default=False,
        ),
    ] = None,
    conversations: Annotated[
        int, typer.Option(min=1, help="LoCoMo conversations used (each built five times).")
    ] = 1,
    entities: Annotated[
        int,
        typer.Option(
            min=0, help="A synthetic Mnemis namespace of this many entities: its graph timed."
        ),
    ] = 0,
    limit: Annotated[
        list[int] | None,
        typer.Option(
            min=1,
            help="Node limits the graph is timed at (repeat); default: the page's 150 and 5000.",
            show_default=False,
        ),
    ] = None,
    loads: Annotated[int, typer.Option(min=1, help="Loads per page (the median is shown).")] = 3,
    graph_loads: Annotated[
        int, typer.Option(min=1, help="Loads of the graph per limit (the median is shown).")
    ] = 5,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            help="Build the store here and keep it (default: a temporary one); namespaces "
            "already in it are reused as they are.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as one JSON object instead.")
    ] = False,
) -> None:
    """Serve built stores with `memstrata serve` on a free loopback port and drive the
    explorer in the system's headless Chromium (chromium and chromedriver).

    --data: each namespace's pages loaded afresh (--loads times, median shown): the
    namespace's counts, the first page of episodes, every design view (the nodes drawn
    are the API's), a search and an ask through the page's forms (the hits, answer and
    sources are the API's); the console read after each page.

    --entities: the synthetic Mnemis graph view from navigation to drawn (after the
    paint) at each --limit, split into the answer's arrival, the layout and the paint,
    beside the API's own time.

    Exits 1 on a failed check or a console error."""
    from memstrata.eval import bench_explorer as be

    if data is None and not entities:
        err.print("error: give --data, --entities or both")
        raise typer.Exit(2)
    with errors(as_json=as_json):
        report = be.run(
            data=data,
            conversations=conversations,
            entities=entities,
            limits=tuple(limit or (be.PAGE_LIMIT, 5000)),
            loads=loads,
            graph_loads=graph_loads,
            db=db,
            tick=lambda step: err.print(step, markup=False) if not as_json else None,
        )
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        show(report)
    if be.failed(report):
        raise typer.Exit(1)


def show(report: dict[str, Any]) -> None:
    """The report as tables: the views, then the graph."""
    s = report["setup"]
    out.print(
        f"memstrata bench explorer: {s['cores']} cores, {s['browser']} headless; stores "
        f"built in {s['build_seconds']} s"
    )
    if report["views"]:
        table = Table(
            "namespace", "view", "ms", "shown", "checks", "console errors",
            title=Text(
                f"Views ({plural(s['conversations'], 'LoCoMo conversation')} from "
                f"{s['data']}; ms: "
                f"median of {s['loads']}, navigation to rendered, or the round trip)"
            ),
        )  # fmt: skip
        for r in report["views"]:
            checks = f"{r['passed']}/{r['total']}"
            if r["failed"]:
                checks += " failed: " + ", ".join(r["failed"])
            table.add_row(
                r["namespace"], r["view"], f"{r['ms']:.0f}" if r["ms"] else "", r["shown"],
                checks, str(len(r["console"])),
            )  # fmt: skip
        out.print(table)
        for r in report["views"]:
            for line in r["console"]:
                out.print(f"console ({r['namespace']} {r['view']}): {line}", markup=False)
    if report["graph"]:
        syn = report["synthetic"]
        table = Table(
            "limit", "nodes drawn", "edges", "drawn ms", "answer ms", "layout ms",
            "paint ms", "API ms", "nodes as the API's", "console errors",
            title=Text(
                f"{syn['namespace']}: {plural(syn['entities'], 'entity', 'entities')}, "
                f"{plural(syn['facts'], 'fact')}; "
                f"mnemis-graph from navigation to drawn, median of {s['graph_loads']}"
            ),
        )  # fmt: skip
        for g in report["graph"]:
            table.add_row(
                str(g["limit"]), f"{g['nodes']} of {g['total_nodes']}", str(g["edges"]),
                f"{g['drawn_ms']:.0f}", f"{g['fetched_ms']:.0f}", f"{g['layout_ms']:.0f}",
                f"{g['paint_ms']:.0f}", f"{g['api_ms']:.0f}", "yes" if g["circles_ok"] else "NO",
                str(len(g["console"])),
            )  # fmt: skip
        out.print(table)
        for g in report["graph"]:
            under = "under" if g["drawn_ms"] < 2000 else "NOT under"
            out.print(f"limit {g['limit']}: drawn in {g['drawn_ms']:.0f} ms, {under} 2 s")
