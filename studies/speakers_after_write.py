"""What naming a namespace's speakers costs right after a write, at size::

    python -m studies.speakers_after_write [--episodes 300000] [--speakers 40] [--db PATH]

System-1 names the namespace's speakers in every query, and a store forgets its cached
list when the namespace is written. This fills one namespace of a fresh SQLite store
with short synthetic turns (no vectors: only the episodes table matters here), then, 30
times, writes one episode and times ``Store.speakers`` (schema v9: counts kept by the
write paths, one upsert per speaker of a batch) beside the ``GROUP BY`` over the
episodes it replaced, on the same file in the same run. It also times filling a store
that does not keep the counts, for their cost to writes. Figures: docs/scale.md,
"Speakers".
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from pathlib import Path
from unittest.mock import patch

from memstrata.store import PreparedEpisode, SQLiteStore

NS = "speakers"


def _episode(i: int, speakers: int) -> PreparedEpisode:
    text = f"turn {i} about item {i % 997}"
    return PreparedEpisode(
        external_id=str(i),
        text=text,
        speaker=f"person {i % speakers}",
        content_hash=hashlib.sha256(text.encode()).digest()[:16],
        index_text=text,
    )


def _fill(store: SQLiteStore, n: int, speakers: int) -> float:
    t0 = time.perf_counter()
    for start in range(0, n, 5_000):
        store.add_episodes(NS, [_episode(i, speakers) for i in range(start, min(n, start + 5_000))])
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=300_000)
    parser.add_argument("--speakers", type=int, default=40)
    parser.add_argument("--db", type=Path, default=None)
    args = parser.parse_args(argv)
    folder = tempfile.TemporaryDirectory()
    # What keeping the counts costs writes: the same episodes into a store that does
    # not keep them (its count upserts made no-ops) first.
    bare = SQLiteStore(Path(folder.name) / "bare.db")
    with patch.object(SQLiteStore, "_count_speakers", lambda *a, **k: None):
        bare_s = _fill(bare, args.episodes, args.speakers)
    bare.close()
    store = SQLiteStore(args.db or Path(folder.name) / "speakers.db")
    kept_s = _fill(store, args.episodes, args.speakers)
    print(
        f"{args.episodes:,} episodes written in {kept_s:.1f} s with the counts kept, "
        f"{bare_s:.1f} s without"
    )
    ns_id = store._ns_id(NS)
    kept, grouped = [], []
    for n in range(30):
        store.add_episodes(NS, [_episode(args.episodes + n, args.speakers)])
        store.mark_written(NS)
        t = time.perf_counter()
        fast = store.speakers(NS)
        kept.append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        rows = store._conn.execute(
            "SELECT speaker FROM episodes WHERE namespace_id=? AND speaker IS NOT NULL "
            "GROUP BY speaker ORDER BY COUNT(*) DESC, speaker",
            (ns_id,),
        ).fetchall()
        grouped.append(1000 * (time.perf_counter() - t))
        assert fast == [r[0] for r in rows], "the kept counts disagree with the episodes"
    print(
        f"speakers after a write, p50 over 30: kept counts {statistics.median(kept):.3f} ms, "
        f"GROUP BY over the episodes {statistics.median(grouped):.1f} ms "
        f"({len(fast)} speakers; the two lists agree every time)"
    )
    store.close()
    folder.cleanup()


if __name__ == "__main__":
    main()
