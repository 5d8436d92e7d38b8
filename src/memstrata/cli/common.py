"""What every ``memstrata`` command shares: options, error handling, output."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from memstrata.config import Config
from memstrata.engine import ShowNode
from memstrata.errors import MemstrataError
from memstrata.memory import AsyncMemory

app = typer.Typer(
    help="Long-term memory for LLM agents: import, search, ask, build, inspect and benchmark.",
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
RecipeOpt = Annotated[
    str | None,
    typer.Option(help="Recipe (see `memstrata recipes`). Default: the configured one."),
]
TierOpt = Annotated[
    str | None,
    typer.Option(help="heuristic or llm (default: llm when an LLM is configured)."),
]


def load_config(config: Path | None, **overrides: Any) -> Config:
    return Config.load(config, **overrides)


@contextmanager
def errors() -> Iterator[None]:
    """A memstrata error is one red line and exit status 2, never a traceback."""
    try:
        yield
    except MemstrataError as exc:
        err.print(Text.assemble(("error: ", "red"), str(exc)))
        raise typer.Exit(2) from None


async def open_memory(cfg: Config, db: str | None) -> AsyncMemory:
    return await AsyncMemory.open(db, config=cfg)


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
        disable=not err.is_terminal,
    )


def print_hits(query: str, hits: list[Any], *, explain: bool = False) -> None:
    """A table of hits. Stored text goes in as plain ``Text``: never read as markup."""
    table = Table(title=Text(f"“{query}”"), show_lines=False, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("score", justify="right", width=8)
    table.add_column("sources", width=10)
    if explain:
        table.add_column("found by (route#rank)", width=22)
    table.add_column("text", ratio=1)
    for i, h in enumerate(hits, start=1):
        text = h.text if h.kind == "episode" else f"({h.kind}) {h.text}"
        cells: list[str | Text] = [str(i), f"{h.score:.4f}", Text(", ".join(h.sources))]
        if explain:
            found = ", ".join(f"{r}#{n}" for r, n in h.ranks.items())
            inner = f" [{', '.join(h.routes)}]" if h.routes else ""
            cells.append(Text(found + inner))
        table.add_row(*cells, Text(text))
    out.print(table)


def print_tree(nodes: list[ShowNode]) -> None:
    from rich.tree import Tree

    def grow(tree: Tree, children: list[ShowNode]) -> None:
        for child in children:
            grow(tree.add(Text(child.text)), child.children)

    for node in nodes:
        tree = Tree(Text(node.text, style="bold"))
        grow(tree, node.children)
        out.print(tree)
