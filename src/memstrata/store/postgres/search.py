"""The PostgreSQL store's embedding cache and retrieval primitives: BM25 and dense search.

BM25 ranks as the SQLite store's FTS5 does, to the last digit: the same terms (see
:mod:`.tokenize`), the same formula (k1=1.2, b=0.75, idf ``ln((N-n+0.5)/(n+0.5))``, raised
to 1e-6 when not positive, so a term in most episodes still scores) over the same
statistics (N and the average length of the whole namespace, filters or not). Each query
term is a phrase, as in the SQLite store's ``"a" OR "b"`` query; a term that is one word
(what the engine sends) is scored inside PostgreSQL, a term of several words is matched by
positions and scored here.

Dense search runs in PostgreSQL with pgvector: an HNSW index per dimension (cosine over
``halfvec``, the float16 the SQLite store keeps) finds candidates, iterative index scans
(``hnsw.iterative_scan``) keep a filtered query from coming back short, and the
candidates are ranked by the SQLite store's score: the inner product of the float32 query
with the stored vector. Ranking by the index's own distance cast the query to half
precision and normalised both sides; the cosines moved by up to 3e-5 and near-ties in
the dense ranking flipped (LoCoMo dev: see docs/postgres.md).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray

from memstrata.models import Episode
from memstrata.store.base import ScoredKeys, SearchFilters
from memstrata.store.postgres.common import PostgresBase
from memstrata.store.sql.common import EP_COLS, episode
from memstrata.store.tokenize import tokenize

K1 = 1.2
B = 0.75
#: candidates fetched beyond ``limit`` from the index before exact scoring, so that an
#: episode the index's half-precision cosine puts just below the cut still competes
RESCORE_MARGIN = 20


def _vec_text(vector: NDArray[np.float32]) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def _idf(rows: int, hits: int) -> float:
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def _phrase_hits(postings: dict[str, dict[int, list[int]]], phrase: list[str]) -> dict[int, int]:
    """Occurrences of ``phrase`` (consecutive terms) per episode."""
    lists = [postings.get(t, {}) for t in phrase]
    docs = set(lists[0])
    for more in lists[1:]:
        docs &= set(more)
    out: dict[int, int] = {}
    for doc in docs:
        later = [set(lst[doc]) for lst in lists[1:]]
        n = sum(1 for p in lists[0][doc] if all(p + j + 1 in s for j, s in enumerate(later)))
        if n:
            out[doc] = n
    return out


#: the advisory lock under which a dimension's dense index is made
INDEX_LOCK = 0x6D656D69  # "memi"


class SearchPrimitives(PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore`."""

    # the full-text index ----------------------------------------------------------------
    @classmethod
    def _index(cls, conn: psycopg.Connection[Any], ns_id: int, key: int, text: str) -> None:
        """Postings of one episode's index text, its length and the namespace's totals."""
        cls._index_many(conn, ns_id, [(key, text)])

    @staticmethod
    def _index_many(
        conn: psycopg.Connection[Any], ns_id: int, docs: Sequence[tuple[int, str]]
    ) -> None:
        """:meth:`_index` for a batch of episodes in three statements (postings by COPY):
        a statement per posting made ingest five times slower."""
        if not docs:
            return
        lengths: list[int] = []
        with conn.cursor() as cur:
            with cur.copy(
                "COPY bm25_postings(namespace_id, term, episode_id, tf, positions) FROM STDIN"
            ) as copy:
                for key, text in docs:
                    terms = tokenize(text)
                    lengths.append(len(terms))
                    where: dict[str, list[int]] = {}
                    for pos, term in enumerate(terms):
                        where.setdefault(term, []).append(pos)
                    for term, places in where.items():
                        copy.write_row((ns_id, term, key, len(places), places))
            cur.execute(
                "UPDATE episodes e SET index_len=d.len FROM unnest(%s::bigint[], %s::int[]) "
                "AS d(id, len) WHERE e.namespace_id=%s AND e.id=d.id",
                ([k for k, _ in docs], lengths, ns_id),
            )
            cur.execute(
                "INSERT INTO bm25_stats VALUES (%s, %s, %s) ON CONFLICT (namespace_id) DO UPDATE "
                "SET docs=bm25_stats.docs+EXCLUDED.docs, tokens=bm25_stats.tokens+EXCLUDED.tokens",
                (ns_id, len(docs), sum(lengths)),
            )

    @staticmethod
    def _unindex(conn: psycopg.Connection[Any], ns_id: int, keys: list[int]) -> None:
        """Take episodes out of the totals and drop their postings."""
        conn.execute(
            "UPDATE bm25_stats s SET docs=s.docs-d.n, tokens=s.tokens-d.len FROM "
            "(SELECT count(*) AS n, COALESCE(sum(index_len), 0) AS len FROM episodes "
            "WHERE namespace_id=%s AND id = ANY(%s)) d WHERE s.namespace_id=%s",
            (ns_id, keys, ns_id),
        )
        conn.execute(
            "DELETE FROM bm25_postings WHERE namespace_id=%s AND episode_id = ANY(%s)",
            (ns_id, keys),
        )

    # embeddings -------------------------------------------------------------------------
    def cached_embeddings(
        self, model: str, hashes: Sequence[bytes]
    ) -> dict[bytes, NDArray[np.float32]]:
        rows = self._all(
            "SELECT hash, vec::text FROM embeddings WHERE model=%s AND hash = ANY(%s)",
            (model, list(set(hashes))),
        )
        return {bytes(h): np.array(text[1:-1].split(","), dtype=np.float32) for h, text in rows}

    def put_embeddings(
        self,
        model: str,
        items: Sequence[tuple[bytes, NDArray[np.float32]]],
        words: Mapping[bytes, Collection[int]] | None = None,
        namespace: str | None = None,
    ) -> None:
        if not items:
            return
        # one row per hash, in hash order: two transactions inserting overlapping keys
        # wait on each other's uncommitted rows, and only a shared order rules out a cycle
        # (a search caching names while a build caches the same ones deadlocked)
        unique = dict(items)
        rows = [(model, h, len(unique[h]), _vec_text(unique[h])) for h in sorted(unique)]
        for dim in sorted({r[2] for r in rows}):
            self._dense_index(dim)
        with self._write() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO embeddings VALUES (%s,%s,%s,%s::halfvec) "
                "ON CONFLICT (model, hash) DO NOTHING",
                rows,
            )
            if words:
                ns_id = (self._ns_id(namespace) if namespace is not None else None) or 0
                filed = sorted({(ns_id, t, h) for h, keys in words.items() for t in keys})
                cur.executemany(
                    "INSERT INTO embedding_terms VALUES (%s,%s,%s) ON CONFLICT DO NOTHING",
                    filed,
                )

    def _dense_index(self, dim: int) -> None:
        """The HNSW index of one dimension, made by the first put of that dimension in a
        transaction of its own, under an advisory lock. ``CREATE INDEX`` share-locks the
        whole table even when the index exists: inside the put's transaction, two puts
        would each hold that lock and wait for the other's to insert (a deadlock)."""
        name = f"embeddings_hnsw_{int(dim)}"
        with self._lock:
            row = self._conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()
            if row is not None and row[0] is not None:
                return
            with self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (INDEX_LOCK,))
                self._conn.execute(
                    f"CREATE INDEX IF NOT EXISTS {name} ON embeddings "
                    f"USING hnsw ((vec::halfvec({int(dim)})) halfvec_cosine_ops) "
                    f"WHERE dim = {int(dim)}"
                )

    # retrieval primitives ---------------------------------------------------------------
    def bm25_episodes(
        self, namespace: str, terms: Sequence[str], limit: int, filters: SearchFilters | None = None
    ) -> ScoredKeys:
        phrases = [tokenize(t) for t in terms if t]
        phrases = [p for p in phrases if p]  # FTS5: an empty phrase matches nothing
        if not phrases or limit <= 0:
            return []
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            stats = self._one("SELECT docs, tokens FROM bm25_stats WHERE namespace_id=%s", (ns_id,))
            if stats is None or not stats[0]:
                return []
            rows, avgdl = int(stats[0]), int(stats[1]) / int(stats[0])
            if all(len(p) == 1 for p in phrases):
                return self._bm25_words(ns_id, [p[0] for p in phrases], rows, avgdl, limit, filters)
            return self._bm25_phrases(ns_id, phrases, rows, avgdl, limit, filters)

    def doc_freqs(self, namespace: str, words: Sequence[str]) -> tuple[int, dict[str, int]]:
        tokens = {word: tokenize(word) for word in words}
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0, {}
            stats = self._one("SELECT docs FROM bm25_stats WHERE namespace_id=%s", (ns_id,))
            held = dict(
                self._all(
                    "SELECT term, count(*) FROM bm25_postings WHERE namespace_id=%s "
                    "AND term = ANY(%s) GROUP BY term",
                    (ns_id, sorted({t for toks in tokens.values() for t in toks})),
                )
            )
        freqs = {
            word: min(int(held.get(t, 0)) for t in toks) for word, toks in tokens.items() if toks
        }
        return (int(stats[0]) if stats else 0), freqs

    def _bm25_words(
        self,
        ns_id: int,
        words: list[str],
        rows: int,
        avgdl: float,
        limit: int,
        filters: SearchFilters | None,
    ) -> ScoredKeys:
        hits = dict(
            self._all(
                "SELECT term, count(*) FROM bm25_postings WHERE namespace_id=%s "
                "AND term = ANY(%s) GROUP BY term",
                (ns_id, list(set(words))),
            )
        )
        weight: dict[str, float] = {}
        for word in words:  # a word given twice counts twice, as two FTS5 phrases do
            if word in hits:
                weight[word] = weight.get(word, 0.0) + _idf(rows, int(hits[word]))
        if not weight:
            return []
        where, args = self._filter_sql(filters)
        found = self._all(
            "SELECT p.episode_id, sum(q.w * ((p.tf * %s::float8) / (p.tf + %s::float8 * "
            "(%s::float8 - %s::float8 + %s::float8 * e.index_len / %s::float8)))) AS s "
            "FROM bm25_postings p JOIN unnest(%s::text[], %s::float8[]) AS q(term, w) "
            "ON p.term = q.term JOIN episodes e ON e.namespace_id = p.namespace_id "
            f"AND e.id = p.episode_id WHERE p.namespace_id = %s{where} "
            "GROUP BY p.episode_id ORDER BY s DESC, p.episode_id LIMIT %s",
            (
                K1 + 1.0,
                K1,
                1.0,
                B,
                B,
                avgdl,
                list(weight),
                list(weight.values()),
                ns_id,
                *args,
                limit,
            ),
        )
        return [(int(k), float(s)) for k, s in found]

    def _bm25_phrases(
        self,
        ns_id: int,
        phrases: list[list[str]],
        rows: int,
        avgdl: float,
        limit: int,
        filters: SearchFilters | None,
    ) -> ScoredKeys:
        postings: dict[str, dict[int, list[int]]] = {}
        for term, key, positions in self._all(
            "SELECT term, episode_id, positions FROM bm25_postings WHERE namespace_id=%s "
            "AND term = ANY(%s)",
            (ns_id, sorted({t for p in phrases for t in p})),
        ):
            postings.setdefault(term, {})[int(key)] = list(positions)
        freqs = [_phrase_hits(postings, p) for p in phrases]
        idfs = [_idf(rows, len(f)) for f in freqs]
        candidates = sorted({k for f in freqs for k in f})
        if not candidates:
            return []
        where, args = self._filter_sql(filters)
        lengths = dict(
            self._all(
                "SELECT e.id, e.index_len FROM episodes e WHERE e.namespace_id=%s "
                f"AND e.id = ANY(%s){where}",
                (ns_id, candidates, *args),
            )
        )
        scored = []
        for key, length in lengths.items():
            score = 0.0
            for freq, idf in zip(freqs, idfs, strict=True):
                f = float(freq.get(key, 0))
                score += idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / avgdl)))
            scored.append((int(key), score))
        scored.sort(key=lambda x: (-x[1], x[0]))
        return scored[:limit]

    def dense_episodes(
        self,
        namespace: str,
        model: str,
        queries: NDArray[np.float32],
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredKeys]:
        queries = np.asarray(queries, dtype=np.float32)
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None or limit <= 0 or queries.ndim != 2:
                return [[] for _ in range(len(queries))]
            dim = int(queries.shape[1])
            where, args = self._filter_sql(filters)
            out: list[ScoredKeys] = []
            fetch = limit + max(RESCORE_MARGIN, limit // 2)
            for query in queries:
                vec = _vec_text(query)
                # The HNSW index (cosine, half precision) picks candidates; they are then
                # scored as the SQLite store scores: the float32 query's inner product
                # with the stored float16 vector (the halfvec->vector cast is exact).
                rows = self._all(
                    f"SELECT id, -(vec::vector({dim}) <#> %s::vector({dim})) AS score FROM "
                    "(SELECT e.id, v.vec FROM episodes e JOIN embeddings v ON v.model=%s "
                    f"AND v.hash=e.embed_hash AND v.dim={dim} WHERE e.namespace_id=%s{where} "
                    f"ORDER BY v.vec::halfvec({dim}) <=> %s::halfvec({dim}), e.id LIMIT %s) c "
                    "ORDER BY score DESC, id LIMIT %s",
                    (vec, model, ns_id, *args, vec, fetch, limit),
                )
                out.append([(int(k), float(s)) for k, s in rows if s is not None])
            return out

    # conversation positions ---------------------------------------------------------------
    def session_neighbours(self, keys: Sequence[int], window: int) -> dict[int, list[int]]:
        if window <= 0:
            return {k: [] for k in keys}
        out: dict[int, list[int]] = {}
        with self._lock:
            for key in keys:
                row = self._one(
                    "SELECT namespace_id, session, seq FROM episodes WHERE id=%s", (int(key),)
                )
                if row is None:
                    continue
                ns_id, session, seq = row
                if session is None:
                    out[key] = []
                    continue
                before = self._all(
                    "SELECT id FROM episodes WHERE namespace_id=%s AND session=%s AND seq<%s "
                    "ORDER BY seq DESC LIMIT %s",
                    (ns_id, session, seq, window),
                )
                after = self._all(
                    "SELECT id FROM episodes WHERE namespace_id=%s AND session=%s AND seq>%s "
                    "ORDER BY seq LIMIT %s",
                    (ns_id, session, seq, window),
                )
                out[key] = [int(r[0]) for r in reversed(before)] + [int(r[0]) for r in after]
        return out

    def session_after(self, namespace: str, session: str, seq: int, limit: int) -> list[Episode]:
        if limit <= 0:
            return []
        rows = self._all(
            f"SELECT {EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
            "WHERE n.name=%s AND e.session=%s AND e.seq>%s ORDER BY e.seq LIMIT %s",
            (namespace, session, seq, limit),
        )
        return [episode(r) for r in rows]
