"""A run directory and the result cache.

``DIR/run.json`` (arguments, effective configuration with secrets masked, versions, data
hash, fingerprint), ``DIR/questions.jsonl`` (one row per recipe and question, appended and
flushed as each is done, so ``--resume`` continues where a run stopped), ``DIR/costs.jsonl``
(one row per phase), then ``summary.json``, ``report.md`` and ``report.html``.

The result cache (SQLite, shared by runs) maps everything that determines a question's
row (the sample's content, the question, the recipe's definition, the configuration, the
judges, the code: :func:`code_version`) to that row, so a rerun on the same data serves
rows without importing, building, searching or answering again. Rows served that way
say ``"cached": true`` and keep the latencies measured when they were made.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import sqlite3
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

from memstrata.errors import InvalidInputError

ROWS, COSTS, RUN = "questions.jsonl", "costs.jsonl", "run.json"


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.cache
def code_version() -> str:
    """The memstrata version and a digest of its installed source files: cached rows
    and stores were made by the code, so code changed in place (an editable install, a
    patched checkout) must not be served rows its previous state made."""
    import memstrata

    return f"{memstrata.__version__}+{source_digest(Path(memstrata.__file__).parent)}"


def source_digest(root: Path) -> str:
    """A digest of the ``.py`` files under ``root``: their paths and contents."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("memstrata", "numpy", "onnxruntime", "nltk", "matplotlib", "llama-cpp-python"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def start(self, info: dict[str, Any], *, resume: bool) -> list[dict[str, Any]]:
        """Create the run (or check a resumed one matches); returns the rows already done."""
        run = self.path / RUN
        if resume:
            if not run.exists():
                raise InvalidInputError(f"--resume: {self.path} holds no run ({RUN} missing)")
            old = json.loads(run.read_text(encoding="utf-8"))
            if old.get("fingerprint") != info["fingerprint"]:
                raise InvalidInputError(
                    f"--resume: the run in {self.path} was made with other data, recipes, "
                    "options or configuration; start a new run with another --out"
                )
            return self.read(ROWS)
        if run.exists():
            raise InvalidInputError(
                f"{self.path} already holds a run; use --resume to continue it, or another --out"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        run.write_text(json.dumps(info, indent=2, default=str), encoding="utf-8")
        for name in (ROWS, COSTS):
            (self.path / name).write_text("", encoding="utf-8")
        return []

    def read(self, name: str) -> list[dict[str, Any]]:
        path = self.path / name
        if not path.exists():
            return []
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by an interrupt: that question is simply done again
        return rows

    def append(self, name: str, row: dict[str, Any]) -> None:
        with open(self.path / name, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, default=str) + "\n")
            fh.flush()

    def write(self, name: str, text: str | bytes) -> Path:
        path = self.path / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path


class ResultCache:
    """Rows by key, in one SQLite file that several runs may share."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._conn:
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, row TEXT NOT NULL)"
            )

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            got = self._conn.execute("SELECT row FROM rows WHERE key = ?", (key,)).fetchone()
        return None if got is None else dict(json.loads(got[0]))

    def put(self, key: str, row: dict[str, Any]) -> None:
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO rows (key, row) VALUES (?, ?)",
                (key, json.dumps(row, default=str)),
            )

    def close(self) -> None:
        with self._lock:
            self._conn.close()
