"""What every ``memstrata`` command shares: options, error handling, output."""

from __future__ import annotations

import asyncio
import importlib
import json
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any

import typer
import typer.main
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from memstrata.blas import limit_blas_threads
from memstrata.config import Config
from memstrata.engine import FusionSpec, ShowNode
from memstrata.errors import MemstrataError, NamespaceNotFoundError
from memstrata.memory import AsyncMemory
from memstrata.redact import redact
from memstrata.store import open_store, store_target

app = typer.Typer(
    help="Long-term memory for LLM agents: import, search, ask, build, inspect and benchmark.",
    epilog="Exit status: 0 done; 1 done in part (bad input lines, failed episodes: the "
    "output lists them); 2 an error, one line on stderr (a JSON object on stdout with "
    "--json); 130 interrupted (what was committed is kept, the output says how to resume).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
#: the modules that register ``memstrata bench``'s commands, imported when a bench command
#: runs or lists its commands: the other commands load no benchmark (``memstrata.eval``)
BENCH_MODULES = (
    "bench",
    "bench_chaos",
    "bench_explorer",
    "bench_faults",
    "bench_qa",
    "bench_serve",
    "bench_store",
)


class _Benchmarks(TyperGroup):
    """``memstrata bench``, whose commands come from :data:`BENCH_MODULES` on first use."""

    loaded = False

    def _load(self) -> None:
        if not self.loaded:
            for name in BENCH_MODULES:
                importlib.import_module(f"memstrata.cli.{name}")
            self.commands.update(typer.main.get_group(bench_app).commands)
            self.loaded = True

    def list_commands(self, ctx: Any) -> list[str]:  # typer's own click types
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        self._load()
        return super().get_command(ctx, cmd_name)


bench_app = typer.Typer(
    help="Benchmarks that print numbers.", no_args_is_help=True, cls=_Benchmarks
)
app.add_typer(bench_app, name="bench")

# Markup and emoji codes are off: printed strings are shown as they are, so stored text,
# namespace names and error messages holding "[red]", "[/]" or ":smile:" print literally.
# Style goes through ``Text`` (``Text.assemble(("error: ", "red"), message)``). Lines are
# not broken at the console width (soft wrap): a message or a command to copy stays whole.
out = Console(markup=False, emoji=False, soft_wrap=True)
err = Console(stderr=True, markup=False, emoji=False, soft_wrap=True)


class _Settings:
    """What the top-level options set for the command that runs."""

    command: str | None = None
    store: str | None = None  # the store the command opened, for an error's hint
    progress_every: float = 2.0
    interrupted_by: str = "Ctrl-C"  # the signal that stopped it, for the summary


settings = _Settings()

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
# The end of every --json option's help.
JSON_ERRORS = (
    'an error is then a JSON object on stdout, {"error": MESSAGE, "kind": ERROR_CLASS}, '
    "with exit status 2 (130 when interrupted)"
)


def _print_version(value: bool) -> None:
    if value:
        from memstrata import __version__

        sys.stdout.write(f"memstrata {__version__}\n")
        raise typer.Exit()


@app.callback()
def _top_level(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
    progress_every: Annotated[
        float,
        typer.Option(
            "--progress-every",
            min=0.01,
            help="Seconds between progress lines on stderr when it is not a terminal.",
        ),
    ] = 2.0,
) -> None:
    settings.command = ctx.invoked_subcommand
    limit_blas_threads()
    settings.progress_every = progress_every


def load_config(config: Path | None, **overrides: Any) -> Config:
    """The configuration, with its recipes checked at once: a command says what is wrong
    with the configuration before it looks for a database."""
    from memstrata.factory import make_registry

    cfg = Config.load(config, **overrides)
    make_registry(cfg)
    return cfg


# What an interrupted command has left behind is kept; these say how to go on.
RESUME = {
    "import": "re-run the same command to import the rest: imports are idempotent "
    "(ids already stored are skipped)",
    "build": "re-run the same command to continue: builds are resumable "
    "(only what is not built yet is processed)",
    "worker": "run the worker again to continue: the queue is kept in the store",
    "copy": "re-run the same command with --resume: each namespace is copied whole or not at "
    "all, and those finished are skipped",
}


@contextmanager
def errors(*, as_json: bool = False) -> Iterator[None]:
    """A memstrata error is one red line on stderr and exit status 2, never a traceback;
    with ``as_json`` it is one JSON object on stdout, ``{"error": ..., "kind": ...}``.

    Ctrl-C says what was committed (the progress so far) and how to resume, exit 130.
    """
    try:
        yield
    except MemstrataError as exc:
        _hint(exc)
        fail(str(exc), type(exc).__name__, as_json=as_json)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        fail(interrupted_summary(), "Interrupted", as_json=as_json, label="interrupted")
        raise typer.Exit(130) from None


def _hint(exc: MemstrataError) -> None:
    """An unknown namespace of a local store: name the ones it holds (the service never
    does; here the user owns the file)."""
    if isinstance(exc, NamespaceNotFoundError) and exc.known is None and settings.store:
        with suppress(MemstrataError):
            store = open_store(settings.store, create=False)
            try:
                exc.known = store.namespaces()
            finally:
                store.close()


class StopRequest:
    """A stop asked for by a first SIGINT (Ctrl-C) or SIGTERM: ``event`` is set, ``signal``
    names it (``Ctrl-C`` or ``SIGTERM``) and ``on_stop``, once the command sets it, is
    called (a request made before that is seen in ``event``)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.signal: str | None = None
        self.forced = False
        self.on_stop: Callable[[], None] | None = None


@contextmanager
def stop_on_signals() -> Iterator[StopRequest]:
    """SIGINT and SIGTERM for a command that can stop cleanly between two batches.

    The first one sets the request's event (and calls its ``on_stop``) and says on
    stderr that the current batch is being finished; the command then reports what it
    did and what is left, and exits 130. A second one interrupts at once, as Ctrl-C does
    elsewhere (what is committed stays: every batch is one transaction). Enter it in the
    task to interrupt, with the loop running, before the store is opened, so that a
    signal during start-up is heard too.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    request = StopRequest()

    def handle(signum: int) -> None:
        if request.event.is_set():
            request.forced = True
            if task is not None:
                task.cancel()
            return
        request.signal = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        settings.interrupted_by = request.signal
        request.event.set()
        if request.on_stop is not None:
            request.on_stop()
        again = "press Ctrl-C" if signum == signal.SIGINT else f"send {request.signal}"
        err.print(
            Text(
                f"{request.signal}: stopping after the current batch ({again} again to "
                "stop at once)",
                style="yellow",
            )
        )

    signals = (signal.SIGINT, signal.SIGTERM)
    for signum in signals:
        loop.add_signal_handler(signum, handle, signum)
    try:
        yield request
    except asyncio.CancelledError:
        if request.forced:
            raise KeyboardInterrupt from None
        raise
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


def fail(message: str, kind: str, *, as_json: bool = False, label: str = "error") -> None:
    """Report an error: ``error: MESSAGE`` on stderr, or a JSON object on stdout; secrets
    (a store URL's password) masked."""
    message = redact(message)
    if as_json:
        sys.stdout.write(json.dumps({"error": message, "kind": kind}, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    else:
        err.print(Text.assemble((f"{label}: ", "red"), message))


def interrupted_summary() -> str:
    """What the progress shown so far says was committed, and how to resume."""
    tasks = _current[0].tasks if _current else []
    done = [
        f"{t.description} {t.completed:.0f}" + (f"/{t.total:.0f}" if t.total is not None else "")
        for t in tasks
    ]
    hint = RESUME.get(settings.command or "")
    by = settings.interrupted_by
    if not done:
        return f"stopped by {by}" + (f" before anything was committed; {hint}" if hint else "")
    if hint is None:
        return f"stopped by {by} at {', '.join(done)}"
    return f"{', '.join(done)} committed; {hint}"


async def open_memory(cfg: Config, db: str | None, *, create: bool = False) -> AsyncMemory:
    """The store of ``--db`` (else the configured one). Only commands that can start from
    an empty store (``import``, ``worker``) pass ``create``; for the others, ``build``
    included, a path without a store is an error (``no memstrata database at PATH``,
    exit 2) and nothing is created, neither file nor folder.

    Searches never start an index build here: a command leaves before a large
    namespace's build would end. ``memstrata build`` and the worker write the indexes
    (:meth:`~memstrata.store.base.Store.build_indexes`), and the searches of later
    commands read them."""
    settings.store = cfg.store if db is None else db
    if not create:
        store_target(settings.store, create=False)
    cfg = cfg.with_overrides(**{"indexes.build_on_search": False})
    return await AsyncMemory.open(db, config=cfg)


async def note_missing_indexes(
    memory: AsyncMemory, namespaces: list[str], db: str | None, config: Path | None
) -> None:
    """Say on stderr which searched namespaces lack an index a build would write (their
    searches read every vector or every posting), and the command that writes it."""
    model = memory.embedder.model_id
    for ns in dict.fromkeys(namespaces):
        due = await asyncio.to_thread(memory.store.indexes_due, ns, model)
        if due:
            command = "memstrata build" + (f" --db {shlex.quote(db)}" if db else "")
            command += f" --config {shlex.quote(str(config))}" if config else ""
            command += f" -n {shlex.quote(ns)}"
            err.print(
                Text(
                    f"note: namespace {ns!r} has no up-to-date {' or '.join(due)}, so this "
                    f"search read all of it; `{command}` writes "
                    f"{'them' if len(due) > 1 else 'it'} once for the searches that follow",
                    style="dim",
                )
            )


_current: list[Progress] = []  # the last progress shown, for the Ctrl-C summary


def progress_bar() -> Progress:
    """A progress display on stderr: a live bar on a terminal, else plain lines every
    ``--progress-every`` seconds (:class:`PlainProgress`). Same interface either way."""
    progress: Progress
    if err.is_terminal:
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err,
            transient=False,
        )
    else:
        progress = PlainProgress(settings.progress_every)
    _current[:] = [progress]
    return progress


class PlainProgress(Progress):
    """rich's ``Progress`` (``add_task``, ``advance``, ``tasks``) for a stderr that is
    not a terminal: every ``every`` seconds, one line per task whose count moved,
    ``building conv-26: 120/419 (14 s)``, and the final counts at the end."""

    def __init__(self, every: float) -> None:
        super().__init__(console=err, disable=True)
        self.every = every
        self._shown: dict[int, float] = {}
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._halt.clear()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None:
            self._tick()  # the final counts; an interrupt is summed up by errors()

    def _run(self) -> None:
        while not self._halt.wait(self.every):
            self._tick()

    def _tick(self) -> None:
        lines = []
        for task in self.tasks:
            if self._shown.get(task.id) == task.completed:
                continue
            self._shown[task.id] = task.completed
            count = f"{task.completed:.0f}" + (
                f"/{task.total:.0f}" if task.total is not None else ""
            )
            eta = task.time_remaining if task.total is not None else None
            left = f", about {eta:.0f} s left" if eta is not None and not task.finished else ""
            lines.append(f"{task.description}: {count} ({task.elapsed or 0:.0f} s{left})\n")
        if lines:
            sys.stderr.write("".join(lines))
            sys.stderr.flush()


def print_hits(query: str, hits: list[Any], *, explain: bool = False) -> None:
    """A table of hits. Stored text goes in as plain ``Text``: never read as markup.

    The hits come in the recipe's order (its fused ranks; with several kinds, each kind
    is its own section, numbered from 1); the score is the hit's relevance, 0..1, on one
    scale for every query (``Hit.score``)."""
    several = len({h.kind for h in hits}) > 1
    table = Table(title=Text(f"“{query}”"), show_lines=False, expand=True)
    if several:
        table.add_column("kind", width=8)
    table.add_column("#", justify="right", width=3)
    table.add_column("score", justify="right", min_width=5)
    table.add_column("sources", width=10)
    if explain:
        table.add_column("why: route#rank [lists]; terms; rules", width=22)
    table.add_column("text", ratio=1)
    rank = 0
    for i, h in enumerate(hits):
        if i and h.kind != hits[i - 1].kind:
            table.add_section()
            rank = 0
        rank += 1
        cells: list[str | Text] = [Text(h.kind)] if several else []
        cells += [str(rank), f"{h.score:.3f}", Text(", ".join(h.sources))]
        if explain:
            cells.append(Text(why_text(h)))
        table.add_row(*cells, Text(h.text))
    out.print(table)


def why_text(h: Any) -> str:
    """``system1#2 [dense#3 bm25#1]; terms: plans, summer; speaker_boost +0.24, ...``:
    the recipe's routes with the hit's rank in each, its rank in its route's own
    candidate lists, the query terms it holds, the rules that moved it (each rule's share
    of its route score, signed)."""
    found = " ".join(f"{r}#{n}" for r, n in h.ranks.items())
    why = h.why
    if why is None:
        return found + (f" [{', '.join(h.routes)}]" if h.routes else "")
    lists = " ".join(f"{name}#{n}" for name, n in why.lists.items()) or ", ".join(h.routes)
    parts = [found + (f" [{lists}]" if lists else "")]
    parts.append("terms: " + (", ".join(why.terms) or "none"))
    if why.moved:
        parts.append(", ".join(f"{m.rule} {m.effect:+.2f}" for m in why.moved))
    return "; ".join(parts)


def kind_budgets(fusion: FusionSpec, k: int, hits: list[Any]) -> str | None:
    """``-k 10 returns 10 hits at most; the kinds share them: episode 1, fact 2, ...``
    for a recipe whose search returns several kinds (None otherwise): ``k`` counts every
    hit, and the kinds share it by the recipe's ``fusion.budgets``
    (:func:`memstrata.engine.fusion.cut`)."""
    kinds = list(dict.fromkeys([*fusion.kind_order, *fusion.budgets, *(h.kind for h in hits)]))
    if len(kinds) < 2:
        return None
    shown = ", ".join(f"{kind} {fusion.share(kind):g}" for kind in kinds)
    return (
        f"-k {k} returns {k} hits at most; the kinds share them: {shown} "
        "(the recipe's fusion.budgets, filled by rank)"
    )


def print_tree(nodes: list[ShowNode]) -> None:
    """What ``show`` found, as trees. On a terminal, long lines wrap inside the tree; on a
    pipe or in a file every line is whole (the markers and sources at the end of a line,
    "(invalid since ...)", "[c12]", are never cut at a width)."""
    if not out.is_terminal:
        sys.stdout.write("".join(line + "\n" for node in nodes for line in tree_lines(node)))
        return
    from rich.tree import Tree

    def grow(tree: Tree, children: list[ShowNode]) -> None:
        for child in children:
            grow(tree.add(Text(child.text)), child.children)

    for node in nodes:
        head = Text(f"[{node.design}] ", style="dim") if node.design else Text()
        tree = Tree(head + Text(node.text, style="bold"))
        grow(tree, node.children)
        out.print(tree, soft_wrap=False)


def tree_lines(node: ShowNode) -> list[str]:
    """A tree as plain lines, drawn as on a terminal (``├── ``, ``│   ``, ``└── ``); a
    text of several lines goes on under its own guide."""
    head = f"[{node.design}] " if node.design else ""
    lines = (head + node.text).split("\n")

    def walk(children: list[ShowNode], indent: str) -> None:
        for i, child in enumerate(children):
            last = i == len(children) - 1
            first, *rest = child.text.split("\n")
            lines.append(indent + ("└── " if last else "├── ") + first)
            under = indent + ("    " if last else "│   ")
            lines.extend(under + more for more in rest)
            walk(child.children, under)

    walk(node.children, "")
    return lines
