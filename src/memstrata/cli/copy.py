"""``memstrata copy --from A --to B``: move a store between SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from memstrata.cli.common import (
    ConfigOpt,
    app,
    err,
    errors,
    load_config,
    out,
    progress_bar,
)
from memstrata.config import Config
from memstrata.errors import InvalidInputError
from memstrata.store import is_postgres, open_store
from memstrata.store.dump import NamespaceDump
from memstrata.wording import plural


@app.command("copy")
def copy(
    source: Annotated[
        str,
        typer.Option(
            "--from",
            help="The store to copy: an SQLite file (or sqlite:///path) or a postgresql:// URL.",
            show_default=False,
        ),
    ],
    target: Annotated[
        str,
        typer.Option(
            "--to",
            help="Where to copy it: an SQLite file (made if missing) or a postgresql:// URL "
            "(the database must exist).",
            show_default=False,
        ),
    ],
    namespaces: Annotated[
        list[str] | None,
        typer.Option(
            "--namespace",
            "-n",
            help="Copy only this namespace (repeat). Default: all of them, with the API keys "
            "and the LLM calls of no namespace.",
        ),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            help="Afterwards, compare every copied namespace row by row on both stores and "
            "run the same searches on both (the default recipe, k = 10)."
        ),
    ] = True,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Skip namespaces the target already holds with exactly the source's content "
            "(what a stopped copy finished); any other one it holds is still refused.",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Copy a store, with everything in it, to another store: SQLite to PostgreSQL,
    PostgreSQL to SQLite, or SQLite to SQLite.

    Everything goes: namespaces; episodes with their order, sessions, positions, metadata,
    timestamps and hashes; their history; the embedding cache; every design's derived
    records with their builders and provenance; build marks (done, failed, dead, with
    attempts and errors); the repair log; jobs; API keys (as hashes); LLM call accounting.
    Leases are not copied (they name processes of the source). Episode keys are the
    target's own: provenance, marks and jobs are mapped through episode ids.

    A namespace the target already holds is refused, before anything is written (exit
    status 2). Each namespace is copied in one transaction: a copy stopped anywhere
    leaves whole namespaces in the target, never part of one; run the same command with
    --resume to copy the rest.

    With --verify (the default) the copy is checked: per namespace, the counts of
    episodes, versions, records per builder and kind, provenance, marks per builder and
    status, repairs, jobs and LLM calls, then every row; API keys and embeddings; and a
    fixed set of searches drawn from the stored text must rank the same episodes on both
    stores. A difference is listed and the exit status is 1.

    Example: memstrata copy --from memstrata.db --to postgresql://user:pw@host/memory
    """
    with errors():
        cfg = load_config(config)
        if _same_store(source, target):
            raise InvalidInputError("--from and --to name the same store")
        differences = _copy(cfg, source, target, namespaces, verify, resume)
    if differences:
        for line in differences[:50]:
            err.print(Text.assemble(("differs: ", "red"), line))
        err.print(Text(f"copied, but {plural(len(differences), 'difference')} found", style="red"))
        raise typer.Exit(1)


def _same_store(a: str, b: str) -> bool:
    if is_postgres(a) or is_postgres(b):
        return a == b
    return (
        Path(a.removeprefix("sqlite:///")).expanduser().resolve()
        == Path(b.removeprefix("sqlite:///")).expanduser().resolve()
    )


def _copy(
    cfg: Config,
    source_url: str,
    target_url: str,
    names: list[str] | None,
    verify: bool,
    resume: bool,
) -> list[str]:
    from memstrata import copying
    from memstrata.factory import shared_default_embedder

    # In this thread, not a worker's: Ctrl-C then stops the copy at once (the namespace
    # being written is rolled back).
    source = open_store(source_url, create=False)
    try:
        target = open_store(target_url)
    except BaseException:
        source.close()
        raise
    try:
        todo, skipped = copying.plan(source, target, names, resume=resume)
        for name in skipped:
            err.print(f"{name}: already copied, skipped")

        with progress_bar() as progress:
            # what a Ctrl-C summary counts as committed: whole namespaces
            task = progress.add_task("namespaces", total=len(todo))

            def done(name: str, dump: NamespaceDump, seconds: float) -> None:
                progress.advance(task)
                err.print(
                    f"{name}: {plural(len(dump.episodes), 'episode')}, "
                    f"{plural(len(dump.versions), 'version')}, "
                    f"{plural(len(dump.records), 'record')}, {plural(len(dump.marks), 'mark')} "
                    f"({seconds:.1f} s)"
                )

            report = copying.copy_store(
                source, target, todo, with_globals=names is None, on_namespace=done
            )
        out.print(
            f"copied {plural(len(report.namespaces), 'namespace')}, "
            f"{plural(report.episodes, 'episode')}, {plural(report.records, 'record')}, "
            f"{plural(report.embeddings, 'cached embedding')}, {plural(report.keys, 'API key')}, "
            f"{plural(report.calls, 'other LLM call')} in {report.seconds:.1f} s"
        )
        if not verify:
            return []
        checked = todo + skipped
        differences: list[str] = []
        for name in checked:
            differences += copying.dump_differences(source, target, name)
        if names is None:
            differences += copying.global_differences(source, target)
        embedder = shared_default_embedder(cfg)
        runs, searched = asyncio.run(
            copying.search_differences(source, target, checked, cfg, embedder)
        )
        differences += searched
        if not differences:
            out.print(
                f"verified: {plural(len(checked), 'namespace')} "
                f"{'holds' if len(checked) == 1 else 'hold'} the same rows on both stores, "
                f"and {plural(runs, 'search', 'searches')} "
                f"{'ranks' if runs == 1 else 'rank'} the same episodes"
            )
        return differences
    finally:
        source.close()
        target.close()
