"""An approximate index of one namespace's episode vectors, kept in a file beside the store.

Exact search reads every vector for every query: about 8 ms at 100,000 episodes on two
cores and ten times that at a million. Above ``ANN_THRESHOLD`` vectors the SQLite store
also keeps an HNSW graph (usearch) in ``<database>-ann/``, memory-mapped when opened, so a
large store is ready to search without reading its vectors again.

The file is a cache of the store, never a source of truth:

* candidates it returns are rescored with the vectors it holds, which are the store's
  float16 vectors bit for bit, so a hit has the score exact search gives it;
* episodes added after the file was written are searched exactly (the store's delta);
  episodes updated since then are dropped from its answers and searched exactly with
  their new vector; deleted ones are dropped because every hit is checked against the
  episodes table;
* a file that cannot be read, or whose vectors disagree with the store's, is removed and
  built again from the store, while searches go on exactly.

The manifest (``ns<id>-<model>.json``) names the graph file and what it covers (largest
episode key, largest version id, count); graph files are written under a new name and
the manifest replaced atomically, so a reader never sees half a file.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

logger = logging.getLogger(__name__)

# Below this many vectors exact search costs under 2 ms on two cores (docs/scale.md),
# and an approximate index would only add a build and a file.
ANN_THRESHOLD = 20_000
# HNSW parameters: 16 links per node. The search list sets recall: against exact search
# on embedded chat turns, 128 gave 0.9795 of the top 10 at 100,000 and 256 gave 0.993;
# at 1,000,000, 256 / 512 / 1024 / 2048 gave 0.957 / 0.974 / 0.986 / 0.994 (bench scale's
# 200 questions; another 200: 0.951 / 0.986 / 0.989), 1024 being the first round list
# past 0.98 on both, for 2 ms more per search than 256 (studies/ann_search_list.py,
# docs/scale.md). Read at load, so a graph written before takes the current value.
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 1024
MANIFEST_FORMAT = 1


class AnnFileError(Exception):
    """The index file cannot be used; it is rebuilt from the store."""


@dataclass(frozen=True)
class Manifest:
    """What a graph file covers; written after the file, so it never names a partial one."""

    format: int
    namespace_id: int
    model: str
    dim: int
    count: int
    max_key: int  # every episode with a larger key is searched exactly
    revision: int  # the namespace's largest episode version id when the vectors were read
    file: str
    bytes: int


def folder_for(database: str) -> Path:
    return Path(database + "-ann")


def _stem(ns_id: int, model: str) -> str:
    return f"ns{ns_id}-" + re.sub(r"[^A-Za-z0-9_.-]", "_", model)


class AnnIndex:
    """An HNSW graph over (episode key, vector), searched by cosine similarity."""

    def __init__(self, index: object, manifest: Manifest, manifest_path: Path) -> None:
        self._index = index
        self.manifest = manifest
        self.manifest_path = manifest_path

    def __len__(self) -> int:
        return self.manifest.count

    # making -------------------------------------------------------------------------------
    @staticmethod
    def build(
        keys: NDArray[np.int64],
        matrix: NDArray[np.float32],
        threads: int = 0,
        progress: Callable[[int, int], bool] | None = None,
    ) -> object:
        """A graph of ``keys``' vectors. ``progress(done, total)`` hears of every vector
        added; when it returns False the insert stops and usearch raises RuntimeError."""
        from usearch.index import Index

        index = Index(
            ndim=int(matrix.shape[1]),
            metric="cos",
            dtype="f16",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )
        if len(keys):
            index.add(keys.astype(np.uint64), matrix, threads=threads, progress=_hook(progress))
        return index

    @staticmethod
    def extend(
        manifest_path: Path,
        drop: NDArray[np.int64],
        keys: NDArray[np.int64],
        matrix: NDArray[np.float32],
        threads: int = 0,
        live: NDArray[np.int64] | None = None,
        progress: Callable[[int, int], bool] | None = None,
    ) -> object:
        """The graph of ``manifest_path`` read into memory, without ``drop`` and (given
        ``live``, the episodes it covers that still exist) without deleted episodes, plus
        ``keys``."""
        from usearch.index import Index

        manifest = read_manifest(manifest_path)
        index = Index.restore(str(manifest_path.parent / manifest.file), view=False)
        if index is None:
            raise AnnFileError(f"{manifest.file} is not an index")
        index.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]
        gone = [int(k) for k in drop if int(k) in index]
        if live is not None:
            held = np.asarray(index.keys, dtype=np.int64)
            gone += np.setdiff1d(held, live, assume_unique=True).tolist()
        if gone:
            index.remove(np.asarray(gone, dtype=np.uint64))
        if len(keys):
            index.add(keys.astype(np.uint64), matrix, threads=threads, progress=_hook(progress))
        return index

    @staticmethod
    def save(
        index: object, folder: Path, ns_id: int, model: str, *, max_key: int, revision: int
    ) -> Manifest:
        folder.mkdir(parents=True, exist_ok=True)
        stem = _stem(ns_id, model)
        name = f"{stem}-{secrets.token_hex(6)}.usearch"
        tmp = folder / (name + ".tmp")
        index.save(str(tmp))  # type: ignore[attr-defined]
        os.replace(tmp, folder / name)
        manifest = Manifest(
            format=MANIFEST_FORMAT,
            namespace_id=ns_id,
            model=model,
            dim=int(index.ndim),  # type: ignore[attr-defined]
            count=len(index),  # type: ignore[arg-type]
            max_key=max_key,
            revision=revision,
            file=name,
            bytes=(folder / name).stat().st_size,
        )
        path = folder / f"{stem}.json"
        tmp_manifest = folder / f"{stem}.json.{secrets.token_hex(4)}.tmp"
        tmp_manifest.write_text(json.dumps(asdict(manifest)))
        os.replace(tmp_manifest, path)
        # Older graph files of this namespace go; a process that still maps one keeps its
        # pages until it lets go (POSIX unlink semantics).
        for old in folder.glob(f"{stem}-*.usearch"):
            if old.name != name:
                old.unlink(missing_ok=True)
        return manifest

    @classmethod
    def load(cls, folder: Path, ns_id: int, model: str) -> AnnIndex | None:
        """The namespace's index, memory-mapped; ``None`` if there is none.

        Raises :class:`AnnFileError` if the files are there but cannot be used."""
        path = folder / f"{_stem(ns_id, model)}.json"
        if not path.exists():
            return None
        manifest = read_manifest(path)
        if manifest.namespace_id != ns_id or manifest.model != model:
            raise AnnFileError(f"{path.name} describes another namespace or model")
        graph = folder / manifest.file
        try:
            size = graph.stat().st_size
        except OSError as exc:
            raise AnnFileError(f"{manifest.file} is missing") from exc
        if size != manifest.bytes:
            raise AnnFileError(
                f"{manifest.file} has {size} bytes, its manifest says {manifest.bytes}"
            )
        from usearch.index import Index

        try:
            index = Index.restore(str(graph), view=True)
        except (ValueError, RuntimeError) as exc:
            raise AnnFileError(f"{manifest.file} cannot be read: {exc}") from exc
        if index is None or len(index) != manifest.count or index.ndim != manifest.dim:
            raise AnnFileError(f"{manifest.file} does not hold what its manifest says")
        index.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]
        return cls(index, manifest, path)

    @staticmethod
    def remove(folder: Path, ns_id: int, model: str | None = None) -> None:
        """Forget a namespace's files (all models when ``model`` is None)."""
        if not folder.exists():
            return
        pattern = f"{_stem(ns_id, model)}" if model else f"ns{ns_id}-"
        for path in folder.iterdir():
            if path.name.startswith(pattern):
                path.unlink(missing_ok=True)

    # reading ------------------------------------------------------------------------------
    def search(self, queries: NDArray[np.float32], fetch: int) -> list[NDArray[np.int64]]:
        """Up to ``fetch`` candidate keys per query, nearest first."""
        fetch = min(fetch, len(self))
        if fetch <= 0:
            return [np.zeros(0, dtype=np.int64) for _ in range(len(queries))]
        found = self._index.search(np.asarray(queries, dtype=np.float32), fetch)  # type: ignore[attr-defined]
        keys = np.atleast_2d(found.keys)
        # one query gives a Matches (no counts), several a BatchMatches
        counts = np.atleast_1d(np.asarray(getattr(found, "counts", keys.shape[1])))
        return [keys[i, : counts[i]].astype(np.int64) for i in range(len(queries))]

    def vectors_of(self, keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The ``keys`` the index holds, and their vectors."""
        if not len(keys):
            return keys, np.zeros((0, self.manifest.dim), dtype=np.float32)
        got = self._index.get(keys.astype(np.uint64))  # type: ignore[attr-defined]
        rows = got if isinstance(got, tuple) else list(got)
        held = [i for i, r in enumerate(rows) if r is not None]
        if not held:
            return keys[:0], np.zeros((0, self.manifest.dim), dtype=np.float32)
        return keys[held], np.stack([np.asarray(rows[i], dtype=np.float32) for i in held])

    def sample_keys(self, n: int, seed: int = 0) -> list[int]:
        keys = self._index.keys  # type: ignore[attr-defined]
        total = len(self)
        if total == 0:
            return []
        picks = np.random.default_rng(seed).choice(total, size=min(n, total), replace=False)
        return [int(keys[int(i)]) for i in picks]


def _hook(progress: Callable[[int, int], bool] | None) -> Callable[[int, int], bool] | None:
    """``progress`` as usearch takes a callback: it checks that the annotations are the
    types ``(int, int) -> bool`` themselves, which this module's postponed annotations
    are not."""
    if progress is None:
        return None

    def hook(done: int, total: int) -> bool:
        return progress(done, total)

    hook.__annotations__ = {"done": int, "total": int, "return": bool}
    return hook


def read_manifest(path: Path) -> Manifest:
    try:
        data = json.loads(path.read_text())
        manifest = Manifest(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise AnnFileError(f"{path.name} cannot be read: {exc}") from exc
    if manifest.format != MANIFEST_FORMAT:
        raise AnnFileError(f"{path.name} has format {manifest.format}, not {MANIFEST_FORMAT}")
    return manifest
