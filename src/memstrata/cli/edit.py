"""``memstrata update`` and ``history``: correct a stored episode, see what it said before."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from memstrata.cli.common import (
    JSON_ERRORS,
    ConfigOpt,
    DbOpt,
    NsOpt,
    app,
    err,
    errors,
    load_config,
    open_memory,
    out,
)
from memstrata.errors import InvalidInputError
from memstrata.models import Episode
from memstrata.wording import plural

IdOpt = Annotated[str, typer.Option("--id", help="The episode's id.", show_default=False)]


@app.command()
def update(
    text: Annotated[
        str | None,
        typer.Argument(
            help="The new text; '-' or nothing to read it from stdin.", show_default=False
        ),
    ] = None,
    id: IdOpt = ...,  # type: ignore[assignment]
    db: DbOpt = None,
    namespace: NsOpt = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", help="Read the new text from this file.", exists=True, dir_okay=False
        ),
    ] = None,
    speaker: Annotated[str | None, typer.Option(help="New speaker (default: kept).")] = None,
    session: Annotated[str | None, typer.Option(help="New session (default: kept).")] = None,
    at: Annotated[
        str | None, typer.Option("--at", help="New time, ISO 8601 (default: kept).")
    ] = None,
    metadata: Annotated[
        str | None,
        typer.Option(help="New metadata, a JSON object replacing the old one (default: kept)."),
    ] = None,
    drop_history: Annotated[
        bool,
        typer.Option(
            "--drop-history",
            help="Erase the old text and the earlier versions, as a delete erases a text.",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Correct a stored episode: it gets the new text, searches see only the new version,
    and what was derived from the old text is derived again. The old version is kept
    (`memstrata history --id ID`) unless --drop-history. The same content again changes
    nothing.
    """
    with errors():
        cfg = load_config(config)
        body = _read_text(text, file)
        changes: dict[str, Any] = {
            k: v for k, v in dict(speaker=speaker, session=session, occurred_at=at).items() if v
        }
        if metadata is not None:
            changes["metadata"] = _json_object(metadata)

        async def run() -> tuple[Episode, int, int]:
            memory = await open_memory(cfg, db)
            try:
                if not await memory.get([id], namespace=namespace):
                    ns = cfg.namespace if namespace is None else namespace
                    raise InvalidInputError(
                        f"no episode {id!r} in namespace {ns!r} to update; `memstrata "
                        "import` adds episodes (a JSONL line with this id)"
                    )
                before = len(await memory.history(id, namespace=namespace))
                ep = await memory.update(
                    id, body, namespace=namespace, keep_history=not drop_history, **changes
                )
                return ep, before, len(await memory.history(id, namespace=namespace))
            finally:
                await memory.close()

        ep, before, after = asyncio.run(run())
    if drop_history:
        out.print(Text(f"updated {id!r} in {ep.namespace!r}; its earlier versions are erased"))
        return
    if after == before:
        out.print(Text(f"{id!r} in {ep.namespace!r} already holds this content; nothing changed"))
        return
    out.print(
        Text(
            f"updated {id!r} in {ep.namespace!r}: version {after + 1} is current, "
            f"{plural(after, 'earlier version')} kept (memstrata history --id {id})"
        )
    )


def _read_text(text: str | None, file: Path | None) -> str | bytes:
    if text is not None and text != "-":
        if file is not None:
            raise InvalidInputError("give the new text either as TEXT or with --file, not both")
        return text
    if file is not None:
        data = file.read_bytes()
    elif sys.stdin.isatty():
        raise InvalidInputError("give the new TEXT, --file FILE, or pipe the text on stdin")
    else:
        data = sys.stdin.buffer.read()
    return data.removesuffix(b"\n").removesuffix(b"\r")  # the newline ending a file


def _json_object(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"--metadata is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidInputError("--metadata must be a JSON object")
    return value


@app.command()
def history(
    id: IdOpt = ...,  # type: ignore[assignment]
    db: DbOpt = None,
    namespace: NsOpt = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help=f"One JSON object: id, namespace, versions, current; {JSON_ERRORS}."
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """The versions of an episode, oldest first: those updates replaced, then the current one."""
    with errors(as_json=as_json):
        cfg = load_config(config)
        ns = cfg.namespace if namespace is None else namespace

        async def run() -> tuple[list[Any], Episode | None]:
            memory = await open_memory(cfg, db)
            try:
                versions = await memory.history(id, namespace=ns)
                current = await memory.get([id], namespace=ns)
                return versions, (current[0] if current else None)
            finally:
                await memory.close()

        versions, current = asyncio.run(run())
    if as_json:
        data = {
            "id": id,
            "namespace": ns,
            "versions": [v.model_dump(mode="json", exclude={"id", "namespace"}) for v in versions],
            "current": current.model_dump(mode="json", exclude={"key", "namespace", "id"})
            if current
            else None,
        }
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        return
    table = Table(
        "version", "written", "replaced", "speaker", "text", title=Text(f"{id!r} in {ns!r}")
    )
    for v in versions:
        table.add_row(
            str(v.version),
            f"{v.written_at:%Y-%m-%d %H:%M:%S}",
            f"{v.replaced_at:%Y-%m-%d %H:%M:%S}",
            Text(v.speaker or "-"),
            Text(v.text),
        )
    if current is not None:
        written = versions[-1].replaced_at if versions else current.created_at
        table.add_row(
            str(len(versions) + 1),
            f"{written:%Y-%m-%d %H:%M:%S}",
            "current",
            Text(current.speaker or "-"),
            Text(current.text),
        )
    out.print(table)
    if not versions:
        err.print("never updated: the current version is the only one")
