"""``memstrata demo``: the bundled sample conversation, searched and built, offline."""

from __future__ import annotations

import asyncio
import tempfile
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from memstrata.cli.common import app, errors, out, print_hits
from memstrata.config import Config
from memstrata.importers import jsonl
from memstrata.memory import AsyncMemory
from memstrata.wording import plural


@app.command()
def demo(
    db: Annotated[
        str | None, typer.Option("--db", help="Where to keep the demo store (default: a temp dir).")
    ] = None,
) -> None:
    """Import the bundled sample conversation and run a few searches (offline)."""
    sample = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    with tempfile.TemporaryDirectory() as tmp, errors():
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
                    Text.assemble(
                        ("memstrata demo", "bold"),
                        f": {plural(len(report.added), 'turn')} imported into {path} "
                        "(namespace 'demo')",
                    )
                )
                questions = [
                    "What is the name of Tomas's dog?",
                    "When is Maya's talk in Lisbon?",
                    "How did Maya hurt her ankle?",
                    "How much money has the charity ride raised?",
                ]
                results = await memory.search_many(questions, namespace="demo", k=3)
                for q, r in zip(questions, results, strict=True):
                    print_hits(q, r.hits)
                    out.print(f"  context: {plural(r.context_tokens, 'token')}\n")
                (built,) = await memory.build("demo", recipe="mnemis")
                figures = {**built.counts, **built.details}
                out.print(
                    Text.assemble(
                        ("mnemis", "bold"),
                        f" build: {plural(figures['entities'], 'entity', 'entities')}, "
                        f"{plural(figures['facts'], 'fact')}, "
                        f"layers {figures['layers']}, {built.seconds:.1f} s",
                    )
                )
                question = "What has Tomas been doing with his dog?"
                (graph_result,) = await memory.search_many(
                    [question], namespace="demo", k=3, recipe="mnemis"
                )
                print_hits(question, graph_result.hits[:6])
                answer = await memory.ask("Where is Maya's conference talk?", namespace="demo", k=3)
                out.print(
                    Text.assemble(
                        ("ask", "bold"),
                        f": {answer.text}  [sources {', '.join(answer.sources)}; extractive]",
                    )
                )
                st = await memory.stats("demo")
                out.print(f"store size {st['bytes'] / 1e3:.0f} kB; no LLM was needed.")
            finally:
                await memory.close()

        asyncio.run(run())
