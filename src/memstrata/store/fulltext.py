"""A full-text index of one large namespace, kept in a folder beside the store (tantivy).

FTS5 scores every document holding any term of an OR query, so a question with a common
word reads a long posting list: 14 ms at 300,000 episodes here and growing with the
namespace (docs/scale.md). From ``TEXT_THRESHOLD`` documents a namespace of the SQLite
store also gets a tantivy index in ``<database>-fts/``, whose block-max WAND skips the
documents that cannot reach the top k; below it, and for filtered searches, FTS5 answers.

The index is a cache of the store, never a source of truth:

* it holds the terms FTS5 makes of the same bodies (``store/tokenize.py``, the same
  Porter variant), one document per episode keyed by the episode's key, so a query
  matches the documents FTS5 would match; it ranks them by BM25 with tantivy's
  statistics (same k1 and b, an idf that never goes negative), and ties go to the
  smaller key, as in the exact path;
* episodes added after it was written, and the new text of those updated since, are
  kept in memory (the delta) and scored here with the same formula, until a background
  fold writes them into the index; deleted ones are dropped because every hit is checked
  against the episodes table by the caller;
* a folder that cannot be read, or whose documents disagree with the store's, is removed
  and built again from the store, while FTS5 answers.

The manifest (``ns<id>.json``) names the folder and what it covers (largest episode key,
largest version id). It is replaced atomically after each commit, so the index always
holds at least what its manifest says: a crash between the two leaves documents the
delta also holds, and a hit found in both counts once.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memstrata.store.base import ScoredKeys
from memstrata.store.tokenize import tokenize

# Below this many documents FTS5 answers a query in about a millisecond (1.1 ms p50 at
# 10,000 episodes, docs/scale.md) and an index beside it would only add a build.
TEXT_THRESHOLD = 20_000
# The delta is folded into the index once it holds this many documents: a fold tokenizes
# and commits that many (tens of milliseconds, in the background), while scoring the
# delta here costs every query a Python loop over its postings.
TEXT_FOLD = 1_000
# A delta that would hold more (a large import, a mass update) is not read into memory:
# FTS5 answers until the fold that takes it in is done.
DELTA_MOST = 4 * TEXT_FOLD
MANIFEST_FORMAT = 1
# tantivy's BM25 (and FTS5's defaults)
K1 = 1.2
B = 0.75
_HEAP = 64_000_000


class TextIndexError(Exception):
    """The index folder cannot be used; it is rebuilt from the store."""


@dataclass(frozen=True)
class TextManifest:
    format: int
    namespace_id: int
    folder: str
    count: int
    max_key: int  # every episode with a larger key is in the delta
    revision: int  # the namespace's largest episode version id when the bodies were read


def folder_for(database: str) -> Path:
    return Path(database + "-fts")


def _manifest_path(root: Path, ns_id: int) -> Path:
    return root / f"ns{int(ns_id)}.json"


def terms_of(body: str) -> list[str]:
    """The terms FTS5 indexes for ``body``, in order."""
    return tokenize(body)


def phrases_of(terms: Sequence[str]) -> list[list[str]]:
    """A query's terms as FTS5 reads each quoted one: a phrase of its tokens (usually
    one); a term without tokens matches nothing and is left out."""
    out = [tokenize(t) for t in terms if t]
    return [p for p in out if p]


def _schema() -> Any:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("key", stored=False, indexed=True, fast=True)
    builder.add_unsigned_field("len", stored=False, indexed=False, fast=True)
    # the bodies arrive as FTS5's terms joined by spaces; positions for phrases
    builder.add_text_field("body", stored=False, tokenizer_name="whitespace")
    return builder.build()


def _document(key: int, terms: Sequence[str]) -> Any:
    import tantivy

    doc = tantivy.Document()
    doc.add_unsigned("key", int(key))
    doc.add_unsigned("len", len(terms))
    doc.add_text("body", " ".join(terms))
    return doc


@dataclass
class TextDelta:
    """Documents the index lacks (newer keys) or holds with an old text (``dirty``)."""

    postings: dict[str, dict[int, int]] = field(default_factory=dict)  # term -> key -> tf
    lengths: dict[int, int] = field(default_factory=dict)
    positions: dict[int, list[str]] = field(default_factory=dict)  # for phrases
    dirty: set[int] = field(default_factory=set)
    max_key: int = 0
    revision: int = -1
    behind: bool = False  # more was written than DELTA_MOST: FTS5 answers until a fold

    def __len__(self) -> int:
        return len(self.lengths)

    def put(self, key: int, terms: list[str]) -> None:
        self.drop(key)
        self.lengths[key] = len(terms)
        self.positions[key] = terms
        for term in terms:
            row = self.postings.setdefault(term, {})
            row[key] = row.get(key, 0) + 1

    def drop(self, key: int) -> None:
        old = self.positions.pop(key, None)
        if old is None:
            return
        del self.lengths[key]
        for term in set(old):
            row = self.postings.get(term)
            if row is not None:
                row.pop(key, None)
                if not row:
                    del self.postings[term]

    def matches(self, phrase: list[str]) -> dict[int, int]:
        """key -> occurrences of ``phrase`` in the delta's documents."""
        if len(phrase) == 1:
            return dict(self.postings.get(phrase[0], {}))
        found: dict[int, int] = {}
        first = self.postings.get(phrase[0], {})
        n = len(phrase)
        for key in first:
            if not all(key in self.postings.get(t, {}) for t in phrase[1:]):
                continue
            terms = self.positions[key]
            count = sum(1 for i in range(len(terms) - n + 1) if terms[i : i + n] == phrase)
            if count:
                found[key] = count
        return found


class TextIndex:
    """One namespace's tantivy index, opened for searching."""

    def __init__(self, index: Any, manifest: TextManifest, manifest_path: Path) -> None:
        self._index = index
        self.manifest = manifest
        self.manifest_path = manifest_path
        self.manifest_mtime = manifest_path.stat().st_mtime_ns
        self._schema = index.schema
        self._avgdl: float | None = None

    def __len__(self) -> int:
        return int(self._index.searcher().num_docs)

    # making -------------------------------------------------------------------------------
    @staticmethod
    def create(root: Path, ns_id: int) -> tuple[Any, str]:
        """A new, empty index in a folder of its own under ``root``."""
        import tantivy

        name = f"ns{int(ns_id)}-{secrets.token_hex(6)}"
        (root / name).mkdir(parents=True)
        return tantivy.Index(_schema(), path=str(root / name)), name

    @staticmethod
    def open_for_writing(root: Path, manifest: TextManifest) -> Any:
        import tantivy

        try:
            return tantivy.Index.open(str(root / manifest.folder))
        except ValueError as exc:
            raise TextIndexError(f"{manifest.folder} cannot be opened: {exc}") from exc

    @staticmethod
    def write(
        index: Any, docs: Iterable[tuple[int, str]], drop: Sequence[int] = (), threads: int = 1
    ) -> int:
        """Remove ``drop``'s documents, add ``docs`` (key, body), commit; the new count.

        Raises ``ValueError`` when another process holds the folder's writer."""
        import tantivy

        writer = index.writer(heap_size=_HEAP * max(1, threads), num_threads=threads)
        schema = index.schema
        try:
            for key in drop:
                # by query: a Python int given as a term is taken as i64 and matches no u64
                writer.delete_documents_by_query(tantivy.Query.term_query(schema, "key", key))
            for key, body in docs:
                writer.add_document(_document(key, terms_of(body)))
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        writer.wait_merging_threads()
        index.reload()
        return int(index.searcher().num_docs)

    @staticmethod
    def save(
        root: Path, ns_id: int, folder: str, *, count: int, max_key: int, revision: int
    ) -> None:
        manifest = TextManifest(MANIFEST_FORMAT, int(ns_id), folder, count, max_key, revision)
        path = _manifest_path(root, ns_id)
        tmp = root / f"{path.name}.{secrets.token_hex(4)}.tmp"
        tmp.write_text(json.dumps(asdict(manifest)))
        os.replace(tmp, path)
        # Older folders of this namespace go; a process that still maps one of their files
        # keeps its pages until it lets go (POSIX unlink semantics).
        for old in root.glob(f"ns{int(ns_id)}-*"):
            if old.name != folder and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(cls, root: Path, ns_id: int) -> TextIndex | None:
        """The namespace's index; ``None`` if there is none.

        Raises :class:`TextIndexError` if the files are there but cannot be used."""
        import tantivy

        path = _manifest_path(root, ns_id)
        if not path.exists():
            return None
        manifest = read_manifest(path)
        if manifest.namespace_id != ns_id:
            raise TextIndexError(f"{path.name} describes namespace {manifest.namespace_id}")
        folder = root / manifest.folder
        if not folder.is_dir():
            raise TextIndexError(f"{manifest.folder} is missing")
        try:
            index = tantivy.Index.open(str(folder))
            searcher = index.searcher()
            held = int(searcher.num_docs)
        except (ValueError, OSError) as exc:
            raise TextIndexError(f"{manifest.folder} cannot be read: {exc}") from exc
        if held < manifest.count:
            # commits come before the manifest, so the index holds at least its count
            raise TextIndexError(f"{manifest.folder} holds {held} documents, not {manifest.count}")
        return cls(index, manifest, path)

    @staticmethod
    def remove(root: Path, ns_id: int) -> None:
        if not root.exists():
            return
        _manifest_path(root, ns_id).unlink(missing_ok=True)
        for old in root.glob(f"ns{int(ns_id)}-*"):
            shutil.rmtree(old, ignore_errors=True)

    # reading ------------------------------------------------------------------------------
    def lengths_of(self, keys: Sequence[int]) -> dict[int, int]:
        """The term counts of the documents of ``keys`` the index holds (for checks)."""
        import tantivy

        searcher = self._index.searcher()
        out: dict[int, int] = {}
        for key in keys:
            query = tantivy.Query.term_query(self._schema, "key", int(key))
            hits = searcher.search(query, 1, count=False).hits
            if hits:
                out[int(key)] = int(searcher.fast_field_values("len", [hits[0][1]])[0])
        return out

    def held_keys(self) -> list[int]:
        """Every key the index holds, largest first (a quarter of a second at 1,000,000)."""
        import tantivy

        searcher = self._index.searcher()
        everything = tantivy.Query.all_query()
        found = searcher.search(everything, max(1, searcher.num_docs), False, "key")
        return [int(k) for k, _ in found.hits]

    def stats(self) -> tuple[int, float]:
        """Documents and their mean length, for scoring the delta alike."""
        searcher = self._index.searcher()
        n = int(searcher.num_docs)
        if self._avgdl is None:
            import tantivy

            everything = tantivy.Query.all_query()
            found = searcher.aggregate(everything, {"t": {"sum": {"field": "len"}}})
            total = float(found.get("t", {}).get("value") or 0.0)
            self._avgdl = total / n if n else 1.0
        return n, self._avgdl

    def doc_freq(self, term: str) -> int:
        return int(self._index.searcher().doc_freq("body", term))

    def search(self, phrases: list[list[str]], fetch: int) -> list[tuple[int, float]]:
        """Up to ``fetch`` (key, score), best first; ties at the last place may be cut."""
        import tantivy

        if fetch <= 0 or not phrases:
            return []
        clauses = []
        for phrase in phrases:
            if len(phrase) == 1:
                query = tantivy.Query.term_query(self._schema, "body", phrase[0])
            else:
                words: list[str | tuple[int, str]] = list(phrase)
                query = tantivy.Query.phrase_query(self._schema, "body", words)
            clauses.append((tantivy.Occur.Should, query))
        searcher = self._index.searcher()
        hits = searcher.search(tantivy.Query.boolean_query(clauses), fetch, count=False).hits
        if not hits:
            return []
        keys = searcher.fast_field_values("key", [address for _, address in hits])
        return [(int(k), float(s)) for (s, _), k in zip(hits, keys, strict=True)]


def idf(n: int, df: int) -> float:
    """tantivy's BM25 idf: never negative, unlike FTS5's (which floors it at 1e-6)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def score_delta(
    delta: TextDelta, phrases: list[list[str]], avgdl: float, weights: dict[str, float]
) -> ScoredKeys:
    """BM25 of the delta's documents with the index's statistics, best first.

    ``weights``: each phrase's idf by its joined terms (tantivy weighs a phrase by the sum
    of its terms' idf)."""
    scores: dict[int, float] = {}
    for phrase in phrases:
        weight = weights[" ".join(phrase)]
        for key, tf in delta.matches(phrase).items():
            norm = K1 * (1.0 - B + B * delta.lengths[key] / max(avgdl, 1e-9))
            scores[key] = scores.get(key, 0.0) + weight * tf * (K1 + 1.0) / (tf + norm)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def read_manifest(path: Path) -> TextManifest:
    try:
        manifest = TextManifest(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as exc:
        raise TextIndexError(f"{path.name} cannot be read: {exc}") from exc
    if manifest.format != MANIFEST_FORMAT:
        raise TextIndexError(f"{path.name} has format {manifest.format}, not {MANIFEST_FORMAT}")
    if not re.fullmatch(r"ns\d+-[0-9a-f]+", manifest.folder):
        raise TextIndexError(f"{path.name} names an unexpected folder {manifest.folder!r}")
    return manifest
