"""Conformance tests of the ``Store`` interface, run on every backend.

Only the interface is used here (plus ``schema_version``). A new backend is added by one
line in ``BACKENDS``: a factory that opens a store at a location derived from ``tmp_path``;
calling it twice must give two independent store objects on the *same* data.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pgtest
from memstrata.designs.higmem.records import Event, TurnNote
from memstrata.designs.memtree.records import TreeNode
from memstrata.designs.mindgraph.records import Community, ConceptEdge, ConceptNode
from memstrata.designs.mnemis.records import Category
from memstrata.designs.personalai.records import Thesis
from memstrata.errors import StoreError
from memstrata.llm.types import LLMCallRecord
from memstrata.models import Derived, Entity, Fact, Span, load_kinds
from memstrata.retrieval import documents
from memstrata.store import PreparedEpisode, SearchFilters, Store, open_store
from memstrata.store.base import EpisodeText

BACKENDS: dict[str, Callable[[Path], Store]] = {
    "sqlite": lambda tmp: open_store(tmp / "s.db"),
    # a database of its own per test, on the session's server (tests/pgtest.py)
    "postgres": lambda tmp: open_store(pgtest.database_url(tmp)),
}


# helpers --------------------------------------------------------------------------------
def prep(
    eid: str,
    text: str,
    *,
    speaker: str | None = None,
    role: str | None = None,
    session: str | None = None,
    occurred_at: datetime | None = None,
    metadata: dict[str, Any] | None = None,
    embed: bool = False,
) -> PreparedEpisode:
    meta = metadata or {}
    embed_text = documents.embed_text(text, speaker, meta)
    return PreparedEpisode(
        external_id=eid,
        text=text,
        speaker=speaker,
        role=role,
        session=session,
        occurred_at=occurred_at,
        metadata=meta,
        content_hash=hashlib.sha256(text.encode()).digest()[:16],
        index_text=documents.index_text(text, speaker, meta),
        embed_hash=hashlib.sha256(embed_text.encode()).digest()[:16] if embed else None,
    )


def add_embedded(store: Store, embedder, namespace: str, eps: list[PreparedEpisode]):
    """Write real MiniLM vectors for the episodes, then the episodes (as Memory does)."""
    texts = [documents.embed_text(e.text, e.speaker, e.metadata) for e in eps]
    vecs = embedder.embed(texts)
    pairs = [(e.embed_hash, v) for e, v in zip(eps, vecs, strict=True)]
    store.put_embeddings(embedder.model_id, pairs)
    return store.add_episodes(namespace, eps)


def keys_of(store: Store, namespace: str, ids: list[str]) -> dict[str, int]:
    return {e.id: e.key for e in store.get_episodes(namespace, ids)}


def dense(store: Store, embedder, namespace: str, query: str, limit: int = 10, filters=None):
    return store.dense_episodes(
        namespace, embedder.model_id, embedder.embed([query]), limit, filters
    )[0]


CORPUS = [
    ("volcano", "The volcano erupted and covered the village in grey ash.", "ana", "s1"),
    ("piano", "She practised the piano every evening before dinner.", "ben", "s1"),
    ("garden", "We planted tomatoes and basil in the garden this spring.", "ana", "s2"),
    ("train", "The night train to Vienna was delayed by two hours.", "cleo", "s2"),
    ("bread", "He baked sourdough bread with a crunchy crust.", "ben", "s3"),
    ("chess", "The chess tournament ended in a surprising draw.", "cleo", "s3"),
]
T0 = datetime(2023, 5, 1, 12, 0, tzinfo=UTC)


def replace_bytes(path: Path, data: bytes) -> None:
    """Give an index file other bytes as a new file in its place: a file truncated where
    it lies would fault (SIGBUS) any process that still maps it, this one included."""
    tmp = path.with_name(path.name + ".damaged")
    tmp.write_bytes(data)
    tmp.replace(path)


def corpus_eps(embed: bool = True) -> list[PreparedEpisode]:
    return [
        prep(eid, text, speaker=spk, session=ses, occurred_at=T0 + timedelta(days=i), embed=embed)
        for i, (eid, text, spk, ses) in enumerate(CORPUS)
    ]


# episodes ---------------------------------------------------------------------------------
def test_add_and_get_roundtrip_keeps_every_field(store: Store) -> None:
    tz = timezone(timedelta(hours=2))
    eps = [
        prep(
            "e1",
            "Ana moved to Lisbon 🏙 in 2021.",
            speaker="Ana",
            role="user",
            session="s1",
            occurred_at=datetime(2023, 5, 1, 14, 30, tzinfo=tz),
            metadata={
                "image_caption": "a tram",
                "n": 3,
                "nested": {"ok": [1, 2.5, None]},
                "ünï": "cödé",
            },
        ),
        prep("e2", "No context at all."),
        prep("e3", "Naive time.", occurred_at=datetime(2020, 1, 2, 3, 4, 5)),
    ]
    report = store.add_episodes("ns", eps)
    assert report.added == ["e1", "e2", "e3"] and report.existing == []

    got = store.get_episodes("ns", ["e3", "missing", "e1", "e2"])
    assert [g.id for g in got] == ["e3", "e1", "e2"]  # requested order, unknown ids left out
    e3, e1, e2 = got
    assert e1.text == eps[0].text
    assert (e1.speaker, e1.role, e1.session, e1.namespace) == ("Ana", "user", "s1", "ns")
    assert e1.occurred_at == datetime(2023, 5, 1, 12, 30, tzinfo=UTC)
    assert e1.occurred_at.utcoffset() == timedelta(hours=2)
    assert e1.metadata == eps[0].metadata
    assert (e2.speaker, e2.role, e2.session, e2.occurred_at, e2.metadata) == (
        None,
        None,
        None,
        None,
        {},
    )
    assert e3.occurred_at == datetime(2020, 1, 2, 3, 4, 5)
    assert [e.seq for e in (e1, e2, e3)] == [1, 2, 3]
    assert len({e.key for e in got}) == 3 and all(e.key > 0 for e in got)
    assert all(isinstance(e.created_at, datetime) for e in got)

    by_key = store.episodes_by_key([e1.key, e3.key, 10**9])
    assert set(by_key) == {e1.key, e3.key}
    assert by_key[e1.key].text == e1.text and by_key[e3.key].id == "e3"
    # the light read ranking uses: the backend's own and the interface's default agree
    texts = store.episode_texts([e3.key, e1.key, e2.key, 10**9])
    assert texts == Store.episode_texts(store, [e1.key, e2.key, e3.key])
    assert texts[e1.key] == EpisodeText(e1.key, e1.text, "Ana", "user", "s1", 1)
    assert texts[e2.key] == EpisodeText(e2.key, "No context at all.", None, None, None, 2)
    assert store.episode_texts([]) == {}
    assert [e.id for e in store.iter_episodes("ns")] == ["e1", "e2", "e3"]
    page = store.iter_episodes("ns", after_key=e1.key, limit=1)
    assert [e.id for e in page] == ["e2"]


def test_re_adding_ids_reports_existing_or_conflicts_and_changes_nothing(store: Store) -> None:
    store.add_episodes("ns", [prep("a", "first text"), prep("b", "second text")])
    report = store.add_episodes(
        "ns",
        [
            prep("a", "REPLACED"),
            prep("b", "second text"),
            prep("c", "third text"),
            prep("c", "dup in batch"),
        ],
    )
    assert report.added == ["c"]
    assert report.existing == ["b"]  # same content: a no-op
    assert sorted(report.conflicts) == ["a", "c"]  # other content: left unchanged
    a, c = store.get_episodes("ns", ["a", "c"])
    assert a.text == "first text" and c.text == "third text"
    assert c.seq == 3  # ignored rows do not leave holes in the sequence
    assert store.existing_ids("ns", ["a", "b", "zzz"]) == {"a", "b"}
    assert store.stats("ns")[0].episodes == 3
    assert store.bm25_episodes("ns", ["replaced"], 10) == []


def test_namespaces_are_isolated(store: Store, embedder) -> None:
    add_embedded(store, embedder, "alpha", [prep("e1", "Alpha likes mountain hiking.", embed=True)])
    add_embedded(store, embedder, "beta", [prep("e1", "Beta collects vintage stamps.", embed=True)])
    assert store.namespaces() == ["alpha", "beta"]
    assert store.has_namespace("alpha") and not store.has_namespace("gamma")
    assert store.get_episodes("alpha", ["e1"])[0].text.startswith("Alpha")
    assert store.get_episodes("beta", ["e1"])[0].text.startswith("Beta")

    alpha_key = keys_of(store, "alpha", ["e1"])["e1"]
    beta_key = keys_of(store, "beta", ["e1"])["e1"]
    assert alpha_key != beta_key
    assert store.bm25_episodes("alpha", ["stamps"], 10) == []
    assert [k for k, _ in store.bm25_episodes("beta", ["stamps"], 10)] == [beta_key]
    hits = dense(store, embedder, "alpha", "Beta collects vintage stamps.")
    assert [k for k, _ in hits] == [alpha_key]
    assert store.get_episodes("gamma", ["e1"]) == []
    assert store.bm25_episodes("gamma", ["stamps"], 10) == []
    assert dense(store, embedder, "gamma", "stamps") == []
    assert store.stats("gamma") == []


# BM25 -----------------------------------------------------------------------------------
def test_bm25_ranks_the_matching_episode_first(store: Store) -> None:
    store.add_episodes("ns", corpus_eps(embed=False))
    keys = keys_of(store, "ns", [c[0] for c in CORPUS])
    hits = store.bm25_episodes("ns", ["volcano", "ash"], 10)
    assert hits[0][0] == keys["volcano"]
    assert len(hits) == 1
    # stemming (porter): "erupting" matches "erupted"
    assert [k for k, _ in store.bm25_episodes("ns", ["erupting"], 10)] == [keys["volcano"]]
    # any term matches; more matching terms rank higher; scores are positive and descending
    hits = store.bm25_episodes("ns", ["bread", "crust", "piano"], 10)
    assert [k for k, _ in hits] == [keys["bread"], keys["piano"]]
    assert hits[0][1] > hits[1][1] > 0
    # a term in most episodes (idf <= 0 in textbook BM25) still scores positive
    common = store.bm25_episodes("ns", ["the"], 10)
    assert len(common) == 5 and all(s > 0 for _, s in common)
    assert len(store.bm25_episodes("ns", ["the"], 2)) == 2
    assert store.bm25_episodes("ns", [], 10) == []
    assert store.bm25_episodes("ns", ["volcano"], 0) == []


def test_doc_freqs_count_episodes_as_bm25_indexes_words(open_backend) -> None:
    store, other = open_backend(), open_backend()
    assert store.doc_freqs("ns", ["ash"]) == (0, {})  # no such namespace
    store.add_episodes("ns", corpus_eps(embed=False))
    docs, freqs = store.doc_freqs("ns", ["ash", "evening", "evenings", "the", "zebra", "x-ray"])
    assert docs == 6
    # stemmed as the index stems; "the" is in five of the six; a word of two tokens
    # ("x", "ray") counts by its rarer one
    assert freqs == {"ash": 1, "evening": 1, "evenings": 1, "the": 5, "zebra": 0, "x-ray": 0}
    assert other.doc_freqs("ns", ["ash"]) == (6, {"ash": 1})  # read, so cached by `other`
    store.add_episodes("ns", [prep("ash2", "Ash trees line the road.")])
    assert store.doc_freqs("ns", ["ash"]) == (7, {"ash": 2})  # its own write
    assert other.doc_freqs("ns", ["ash"]) == (7, {"ash": 2})  # another connection's write
    store.delete_episodes("ns", ["volcano"])
    assert other.doc_freqs("ns", ["ash", "road"]) == (6, {"ash": 1, "road": 1})


@pytest.mark.parametrize(
    "term", ['"', 'he said "hi"', "OR", "AND NOT", "NEAR(a b)", "col:val", "-x", "*", "^start"]
)
def test_bm25_treats_query_syntax_as_plain_words(store: Store, term: str) -> None:
    store.add_episodes("ns", [prep("a", 'he said "hi" to the OR desk near col val start x')])
    hits = store.bm25_episodes("ns", [term], 10)  # must not raise an FTS syntax error
    assert all(score > 0 for _, score in hits)


def test_bm25_respects_filters(store: Store) -> None:
    store.add_episodes("ns", corpus_eps(embed=False) + [prep("undated", "The undated note.")])
    keys = keys_of(store, "ns", [c[0] for c in CORPUS] + ["undated"])
    terms = ["the", "she", "he", "we"]

    def ids(filters: SearchFilters) -> set[str]:
        inv = {v: k for k, v in keys.items()}
        return {inv[k] for k, _ in store.bm25_episodes("ns", terms, 50, filters)}

    assert ids(SearchFilters()) == set(keys)
    assert ids(SearchFilters(speakers=["ana"])) == {"volcano", "garden"}
    assert ids(SearchFilters(speakers=["ana", "cleo"])) == {"volcano", "garden", "train", "chess"}
    assert ids(SearchFilters(sessions=["s3"])) == {"bread", "chess"}
    assert ids(SearchFilters(speakers=["ben"], sessions=["s3"])) == {"bread"}
    # since/until are inclusive; undated episodes never pass a time filter
    assert ids(SearchFilters(since=T0 + timedelta(days=4))) == {"bread", "chess"}
    assert ids(SearchFilters(until=T0 + timedelta(days=1))) == {"volcano", "piano"}
    assert ids(SearchFilters(since=T0 + timedelta(days=1), until=T0 + timedelta(days=2))) == {
        "piano",
        "garden",
    }
    # a naive bound is read as UTC, an aware one in its own zone
    assert ids(SearchFilters(since=datetime(2023, 5, 6, 12, 0))) == {"chess"}
    cest = timezone(timedelta(hours=2))
    assert ids(SearchFilters(since=datetime(2023, 5, 6, 14, 0, tzinfo=cest))) == {"chess"}
    assert ids(SearchFilters(speakers=["nobody"])) == set()


# dense ----------------------------------------------------------------------------------
def test_dense_ranks_the_right_episode_first_with_real_vectors(store: Store, embedder) -> None:
    add_embedded(store, embedder, "ns", corpus_eps())
    keys = keys_of(store, "ns", [c[0] for c in CORPUS])
    hits = dense(store, embedder, "ns", "A mountain exploded and spewed ash over the town.")
    assert hits[0][0] == keys["volcano"]
    assert len(hits) == len(CORPUS)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0001 <= s <= 1.0001 for s in scores)
    # the exact embedded text scores ~1 (vectors are stored as float16)
    exact = dense(
        store, embedder, "ns", "cleo: The night train to Vienna was delayed by two hours."
    )
    assert exact[0][0] == keys["train"] and exact[0][1] > 0.999
    assert len(dense(store, embedder, "ns", "bread", limit=2)) == 2
    # several queries at once, one result list each, in order
    many = store.dense_episodes(
        "ns", embedder.model_id, embedder.embed(["baking a loaf", "board game match"]), 1
    )
    assert [[k for k, _ in r] for r in many] == [[keys["bread"]], [keys["chess"]]]
    # another model's vectors are not mixed in
    assert store.dense_episodes("ns", "other-model", embedder.embed(["bread"]), 5) == [[]]


def test_dense_respects_filters(store: Store, embedder) -> None:
    add_embedded(store, embedder, "ns", corpus_eps())
    keys = keys_of(store, "ns", [c[0] for c in CORPUS])
    query = "A mountain exploded and spewed ash over the town."
    hits = dense(store, embedder, "ns", query, filters=SearchFilters(speakers=["ben"]))
    assert {k for k, _ in hits} == {keys["piano"], keys["bread"]}
    hits = dense(store, embedder, "ns", query, filters=SearchFilters(sessions=["s2", "s3"]))
    assert {k for k, _ in hits} == {keys[i] for i in ("garden", "train", "bread", "chess")}
    hits = dense(
        store,
        embedder,
        "ns",
        query,
        filters=SearchFilters(since=T0 + timedelta(days=3), until=T0 + timedelta(days=3)),
    )
    assert [k for k, _ in hits] == [keys["train"]]
    assert dense(store, embedder, "ns", query, filters=SearchFilters(speakers=["zed"])) == []


def test_dense_index_follows_adds_and_deletes(store: Store, embedder) -> None:
    add_embedded(store, embedder, "ns", corpus_eps())
    query = "Someone was sailing a boat across the lake."
    first = dense(store, embedder, "ns", query)  # loads the index
    assert len(first) == len(CORPUS)

    add_embedded(
        store, embedder, "ns", [prep("boat", "We sailed a small boat across the lake.", embed=True)]
    )
    boat_key = keys_of(store, "ns", ["boat"])["boat"]
    hits = dense(store, embedder, "ns", query)
    assert hits[0][0] == boat_key and len(hits) == len(CORPUS) + 1

    assert store.delete_episodes("ns", ["boat"]) == 1
    hits = dense(store, embedder, "ns", query)
    assert boat_key not in {k for k, _ in hits} and len(hits) == len(CORPUS)

    # deleting from the middle as well
    volcano_key = keys_of(store, "ns", ["volcano"])["volcano"]
    store.delete_episodes("ns", ["volcano"])
    hits = dense(store, embedder, "ns", "volcano eruption ash")
    assert volcano_key not in {k for k, _ in hits} and len(hits) == len(CORPUS) - 1


def test_dense_index_after_delete_of_newest_then_add(store: Store, embedder) -> None:
    add_embedded(store, embedder, "ns", corpus_eps())
    dense(store, embedder, "ns", "anything")  # loads the index
    store.delete_episodes("ns", ["chess"])  # the newest episode
    add_embedded(
        store, embedder, "ns", [prep("boat", "We sailed a small boat across the lake.", embed=True)]
    )
    boat_key = keys_of(store, "ns", ["boat"])["boat"]
    hits = dense(store, embedder, "ns", "sailing a boat on a lake")
    assert hits[0][0] == boat_key
    hits = dense(store, embedder, "ns", "The chess tournament ended in a surprising draw.")
    assert hits[0][0] != boat_key  # the deleted chess vector must be gone


def test_second_store_object_sees_writes_of_the_first(open_backend, embedder) -> None:
    writer, reader = open_backend(), open_backend()
    add_embedded(writer, embedder, "ns", corpus_eps()[:3])
    query = "We sailed a small boat across the lake."
    assert len(dense(reader, embedder, "ns", query)) == 3  # reader's index is now loaded
    assert reader.speakers("ns") == ["ana", "ben"]

    add_embedded(writer, embedder, "ns", [prep("boat", query, speaker="dan", embed=True)])
    boat_key = keys_of(writer, "ns", ["boat"])["boat"]
    hits = dense(reader, embedder, "ns", query)
    assert hits[0][0] == boat_key and hits[0][1] > 0.8 and len(hits) == 4
    assert [k for k, _ in reader.bm25_episodes("ns", ["boat"], 5)] == [boat_key]
    assert reader.get_episodes("ns", ["boat"])[0].speaker == "dan"
    assert set(reader.speakers("ns")) == {"ana", "ben", "dan"}

    writer.delete_episodes("ns", ["boat", "volcano"])
    hits = dense(reader, embedder, "ns", query)
    assert boat_key not in {k for k, _ in hits} and len(hits) == 2
    assert reader.bm25_episodes("ns", ["boat"], 5) == []


def test_second_store_object_sees_namespace_deletion(open_backend) -> None:
    a, b = open_backend(), open_backend()
    a.add_episodes("alpha", [prep("x", "alpha secret about turtles")])
    assert b.has_namespace("alpha")
    assert b.bm25_episodes("alpha", ["turtles"], 5)  # b has cached the namespace
    a.delete_namespace("alpha")
    a.add_episodes("beta", [prep("y", "beta secret about turtles")])  # may reuse alpha's id
    assert b.get_episodes("alpha", ["y"]) == []  # never beta's episode
    assert b.bm25_episodes("alpha", ["turtles"], 5) == []
    assert not b.has_namespace("alpha")
    b.add_episodes("alpha", [prep("z", "alpha again")])
    assert a.get_episodes("alpha", ["z"])[0].text == "alpha again"


def test_second_store_object_dense_after_rowid_reuse(open_backend, embedder) -> None:
    writer, reader = open_backend(), open_backend()
    add_embedded(writer, embedder, "ns", corpus_eps())
    dense(reader, embedder, "ns", "anything")
    writer.delete_episodes("ns", ["chess"])
    add_embedded(writer, embedder, "ns", [prep("boat", "We sailed a small boat.", embed=True)])
    boat_key = keys_of(writer, "ns", ["boat"])["boat"]
    assert dense(reader, embedder, "ns", "sailing a boat")[0][0] == boat_key


# sessions and speakers ------------------------------------------------------------------
def test_session_neighbours(store: Store) -> None:
    eps = []
    for i in range(5):
        eps.append(prep(f"a{i}", f"turn {i} of session A", session="A"))
        eps.append(prep(f"b{i}", f"turn {i} of session B", session="B"))
    eps.append(prep("loose", "no session"))
    store.add_episodes("ns", eps)
    store.add_episodes("other", [prep("a0", "same id, other namespace", session="A")])
    k = keys_of(store, "ns", [e.external_id for e in eps])

    got = store.session_neighbours([k["a2"], k["a0"], k["b4"], k["loose"], 10**9], 1)
    assert got[k["a2"]] == [k["a1"], k["a3"]]
    assert got[k["a0"]] == [k["a1"]]
    assert got[k["b4"]] == [k["b3"]]
    assert got[k["loose"]] == []
    assert 10**9 not in got
    assert store.session_neighbours([k["a2"]], 2) == {k["a2"]: [k["a0"], k["a1"], k["a3"], k["a4"]]}
    assert store.session_neighbours([k["a2"]], 0) == {k["a2"]: []}


def test_speakers_most_frequent_first(store: Store) -> None:
    store.add_episodes(
        "ns",
        [
            prep("1", "x", speaker="bo"),
            prep("2", "y", speaker="al"),
            prep("3", "z", speaker="al"),
            prep("4", "w"),
            prep("5", "v", speaker="al"),
            prep("6", "u", speaker="bo"),
            prep("7", "t", speaker="cy"),
        ],
    )
    store.add_episodes("other", [prep("1", "q", speaker="zed")])
    assert store.speakers("ns") == ["al", "bo", "cy"]
    assert store.speakers("other") == ["zed"]
    assert store.speakers("nowhere") == []


def test_speakers_cache_per_namespace(store: Store) -> None:
    store.add_episodes("n1", [prep("1", "hi", speaker="alice")])
    store.add_episodes("n2", [prep("1", "hi", speaker="carol")])
    assert store.speakers("n1") == ["alice"] and store.speakers("n2") == ["carol"]
    store.add_episodes("n1", [prep("2", "yo", speaker="bob"), prep("3", "yo", speaker="bob")])
    assert store.speakers("n2") == ["carol"]
    assert store.speakers("n1") == ["bob", "alice"]


def test_speakers_forget_deleted_episodes(store: Store) -> None:
    store.add_episodes("ns", [prep("1", "hi", speaker="alice"), prep("2", "yo", speaker="bob")])
    assert sorted(store.speakers("ns")) == ["alice", "bob"]
    store.delete_episodes("ns", ["2"])
    assert store.speakers("ns") == ["alice"]


def test_speakers_follow_updates_and_namespace_deletes(store: Store) -> None:
    store.add_episodes("ns", [prep("1", "a", speaker="al"), prep("2", "b", speaker="al")])
    store.add_episodes("ns", [prep("3", "c", speaker="bo")])
    assert store.speakers("ns") == ["al", "bo"]
    store.update_episodes("ns", [prep("1", "a2", speaker="bo"), prep("2", "b2")])
    assert store.speakers("ns") == ["bo"]  # al had two, both moved away
    store.update_episodes("ns", [prep("2", "b3", speaker="cy")])
    assert store.speakers("ns") == ["bo", "cy"]
    assert store.delete_namespace("ns")
    store.add_episodes("ns", [prep("9", "z", speaker="dee")])
    assert store.speakers("ns") == ["dee"]  # nothing left of the deleted namespace


# embeddings -----------------------------------------------------------------------------
def test_embedding_cache_roundtrip(store: Store, embedder) -> None:
    vecs = embedder.embed(["one", "two"])
    h1, h2 = b"\x01" * 16, b"\x02" * 16
    store.put_embeddings("m", [(h1, vecs[0]), (h2, vecs[1])])
    store.put_embeddings("m", [(h1, vecs[1])])  # first write wins: same hash, same text
    got = store.cached_embeddings("m", [h1, h2, b"\x03" * 16, h1])
    assert set(got) == {h1, h2}
    assert got[h1].dtype == np.float32 and got[h1].shape == (embedder.dim,)
    assert float(got[h1] @ vecs[0]) > 0.9999
    assert np.allclose(got[h2], vecs[1], atol=1e-3)
    assert store.cached_embeddings("other-model", [h1]) == {}
    store.put_embeddings("m", [])


# derived records ------------------------------------------------------------------------
def one_of_each_kind(ns: str) -> list[Derived]:
    def src(*eps: str) -> list[Span]:
        return [Span(episode=e, start=i, end=i + 5) for i, e in enumerate(eps)]

    ana = Entity(
        namespace=ns,
        name="Ana",
        summary="a painter",
        tags=["person"],
        entity_type="person",
        sources=src("e1"),
    )
    lisbon = Entity(namespace=ns, name="Lisbon", sources=src("e1", "e2"))
    node_a = ConceptNode(namespace=ns, label="painting", description="art", sources=src("e2"))
    node_b = ConceptNode(namespace=ns, label="city", sources=src("e1"))
    root = TreeNode(namespace=ns, depth=0, content="root", sources=src("e1"))
    return [
        ana,
        lisbon,
        node_a,
        node_b,
        root,
        Fact(
            namespace=ns,
            subject_id=ana.id,
            object_id=lisbon.id,
            relation="lives_in",
            fact="Ana lives in Lisbon",
            valid_at=datetime(2021, 3, 1, tzinfo=UTC),
            sources=src("e1", "e2"),
        ),
        Thesis(
            namespace=ns,
            text="Ana paints Lisbon",
            entity_ids=[ana.id, lisbon.id],
            sources=src("e2"),
        ),
        Category(
            namespace=ns, name="people", layer=1, tags=["t"], child_ids=[ana.id], sources=src("e1")
        ),
        Event(
            namespace=ns,
            summary="Ana moved",
            facts=["moved"],
            turn_ids=["e1", "e2"],
            sources=src("e1", "e2"),
        ),
        TurnNote(
            namespace=ns,
            turn_id="e2",
            keywords=["paints"],
            tags=["hobby"],
            context="Ana on her hobby",
            timestamp="2021-03-01T10:00:00",
            dates=[{"phrase": "yesterday", "date": "2021-02-28"}],
            sources=src("e2"),
        ),
        TreeNode(namespace=ns, parent_id=root.id, depth=1, content="leaf", sources=src("e2")),
        ConceptEdge(
            namespace=ns, source_id=node_a.id, target_id=node_b.id, relation="in", sources=src("e2")
        ),
        Community(
            namespace=ns,
            level=1,
            member_ids=[node_a.id, node_b.id],
            report="art",
            sources=src("e1"),
        ),
    ]


def test_two_stores_caching_the_same_vectors_in_opposite_orders(open_backend) -> None:
    """A search caching names while a build caches the same ones: each writes its batch in
    one transaction, overlapping keys in opposite orders, and neither may fail."""
    import threading

    stores = [open_backend(), open_backend()]
    rng = np.random.default_rng(7)
    errors: list[BaseException] = []
    for round_ in range(10):
        keys = [hashlib.sha256(f"{round_}-{i}".encode()).digest() for i in range(60)]
        vecs = rng.standard_normal((60, 8)).astype(np.float32)
        items = list(zip(keys, vecs, strict=True))
        start = threading.Barrier(2)

        def put(s: Store, batch: list[tuple[bytes, Any]], start: threading.Barrier) -> None:
            start.wait()
            try:
                s.put_embeddings("m", batch)
            except BaseException as exc:  # noqa: BLE001 - reported by the assert below
                errors.append(exc)

        threads = [
            threading.Thread(target=put, args=(stores[0], items, start)),
            threading.Thread(target=put, args=(stores[1], items[::-1], start)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        got = stores[0].cached_embeddings("m", keys)
        assert len(got) == 60
        assert np.allclose(got[keys[0]], vecs[0], atol=1e-2)


def test_records_of_every_kind_roundtrip_with_provenance(store: Store) -> None:
    store.add_episodes("ns", [prep("e1", "Ana lives in Lisbon."), prep("e2", "She paints.")])
    records = one_of_each_kind("ns")
    kinds = load_kinds()  # the designs register their kinds as they load
    assert {r.kind for r in records} == set(kinds)
    store.put_records("ns", records, owner="test")
    for kind, cls in kinds.items():
        want = [r for r in records if r.kind == kind]
        got = store.get_records("ns", kind, builder=None)
        assert all(type(g) is cls for g in got)
        assert [g.model_dump() for g in got] == [w.model_dump() for w in want]
        assert all(g.sources for g in got)
    fact = next(r for r in records if isinstance(r, Fact))
    assert (
        store.get_records("ns", "fact", [fact.id, "nope"], builder=None)[0].fact
        == "Ana lives in Lisbon"
    )
    assert store.get_records("ns", "entity", [], builder=None) == []
    assert store.get_records("other", "entity", builder=None) == []
    assert store.stats("ns")[0].records == {
        "entity": 2,
        "fact": 1,
        "thesis": 1,
        "category": 1,
        "event": 1,
        "turn_note": 1,
        "tree_node": 2,
        "concept_node": 2,
        "concept_edge": 1,
        "community": 1,
    }
    with pytest.raises(StoreError, match="unknown record kind"):
        store.get_records("ns", "bogus", builder=None)


def test_put_records_replaces_by_id(store: Store) -> None:
    store.add_episodes("ns", [prep("e1", "Ana lives in Lisbon."), prep("e2", "Porto now.")])
    ent = Entity(namespace="ns", name="Ana", sources=[Span(episode="e1", start=0, end=3)])
    store.put_records("ns", [ent], owner="test")
    changed = ent.model_copy(
        update={"summary": "moved", "sources": [Span(episode="e2", start=0, end=5)]}
    )
    store.put_records("ns", [changed], owner="test")
    (got,) = store.get_records("ns", "entity", builder=None)
    assert got.summary == "moved" and got.sources == [Span(episode="e2", start=0, end=5)]
    # the old span no longer ties the record to e1
    store.delete_episodes("ns", ["e1"])
    assert [r.id for r in store.get_records("ns", "entity", builder=None)] == [ent.id]


def test_put_records_citing_unknown_episode_raises_and_writes_nothing(store: Store) -> None:
    store.add_episodes("ns", [prep("e1", "known")])
    store.add_episodes("other", [prep("e9", "elsewhere")])
    good = Entity(namespace="ns", name="Good", sources=[Span(episode="e1", start=0, end=5)])
    bad = Entity(namespace="ns", name="Bad", sources=[Span(episode="e9", start=0, end=1)])
    with pytest.raises(StoreError, match="e9"):
        store.put_records("ns", [good, bad], owner="test")  # e9 exists, but in another namespace
    assert store.get_records("ns", "entity", builder=None) == []
    wrong_ns = Entity(namespace="other", name="X")
    with pytest.raises(StoreError, match="namespace"):
        store.put_records("ns", [wrong_ns], owner="test")
    assert store.get_records("other", "entity", builder=None) == []


def test_put_records_batch_order_does_not_matter(store: Store) -> None:
    store.add_episodes("ns", [prep("e1", "Ana lives in Lisbon.")])
    ana = Entity(namespace="ns", name="Ana", sources=[Span(episode="e1", start=0, end=3)])
    people = Category(namespace="ns", name="people", layer=1, child_ids=[ana.id])
    store.put_records("ns", [people, ana], owner="test")
    assert store.get_records("ns", "category", builder=None)[0].child_ids == [ana.id]


def test_put_records_with_unknown_category_child_raises_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="no-such-record"):
        store.put_records(
            "ns",
            [Category(namespace="ns", name="c", layer=1, child_ids=["no-such-record"])],
            owner="test",
        )


def test_delete_episodes_cascades_along_provenance(store: Store) -> None:
    store.add_episodes(
        "ns",
        [prep("e1", "Ana lives in Lisbon."), prep("e2", "She paints."), prep("e3", "Unrelated.")],
    )
    only_e1 = Entity(namespace="ns", name="Ana", sources=[Span(episode="e1", start=0, end=3)])
    both = Fact(
        namespace="ns",
        subject_id=only_e1.id,
        object_id="x",
        fact="f",
        sources=[Span(episode="e1", start=0, end=20), Span(episode="e2", start=0, end=11)],
    )
    sourceless = Thesis(namespace="ns", text="free-standing")
    store.put_records("ns", [only_e1, both, sourceless], owner="test")

    assert store.delete_episodes("ns", ["e1", "not-there"]) == 1
    assert store.get_episodes("ns", ["e1"]) == []
    assert store.get_records("ns", "entity", builder=None) == []
    (fact,) = store.get_records("ns", "fact", builder=None)
    assert fact.sources == [Span(episode="e2", start=0, end=11)]
    assert [t.id for t in store.get_records("ns", "thesis", builder=None)] == [sourceless.id]
    assert store.bm25_episodes("ns", ["lisbon"], 5) == []

    assert store.delete_episodes("ns", ["e2"]) == 1
    assert store.get_records("ns", "fact", builder=None) == []
    assert store.delete_episodes("ns", ["e2"]) == 0
    assert store.delete_episodes("nowhere", ["e3"]) == 0
    assert store.stats("ns")[0].episodes == 1


def test_delete_namespace_removes_everything(store: Store, embedder) -> None:
    add_embedded(store, embedder, "gone", corpus_eps())
    add_embedded(store, embedder, "kept", [prep("volcano", "Kept volcano note.", embed=True)])
    store.put_records(
        "gone",
        [Entity(namespace="gone", name="Ana", sources=[Span(episode="volcano", start=0, end=3)])],
        owner="test",
    )
    dense(store, embedder, "gone", "volcano")  # load its index

    assert store.delete_namespace("gone") == len(CORPUS)
    assert store.namespaces() == ["kept"]
    assert not store.has_namespace("gone")
    assert store.get_episodes("gone", ["volcano"]) == []
    assert store.get_records("gone", "entity", builder=None) == []
    assert store.bm25_episodes("gone", ["volcano"], 5) == []
    assert dense(store, embedder, "gone", "volcano") == []
    assert store.stats("gone") == []
    assert store.delete_namespace("gone") == 0
    # the other namespace is untouched, and the name can be used again from scratch
    assert [k for k, _ in store.bm25_episodes("kept", ["volcano"], 5)] == list(
        keys_of(store, "kept", ["volcano"]).values()
    )
    store.add_episodes("gone", [prep("new", "fresh start")])
    assert store.get_episodes("gone", ["new"])[0].seq == 1
    assert store.bm25_episodes("gone", ["volcano"], 5) == []


# accounting, stats, schema --------------------------------------------------------------
def llm_call(
    stage: str,
    *,
    ns: str | None,
    ok: bool = True,
    cached: bool = False,
    p: int = 10,
    c: int = 5,
    ms: float = 100.0,
    dropped: dict[str, int] | None = None,
    reasoning: int = 0,
) -> LLMCallRecord:
    return LLMCallRecord(
        stage=stage,
        backend="openai",
        model="m",
        prompt_tokens=p,
        completion_tokens=c,
        latency_ms=ms,
        cached=cached,
        ok=ok,
        error=None if ok else "boom",
        attempts=1 if ok else 3,
        request_hash="h",
        created_at=datetime.now(UTC),
        namespace=ns,
        outcome="failed" if not ok else "repaired" if dropped else "kept",
        dropped=dropped or {},
        reasoning_tokens=reasoning,
    )


def test_llm_usage_per_stage(store: Store) -> None:
    store.record_llm_call(llm_call("extract", ns="a", p=100, c=20, ms=250.25))
    store.record_llm_call(llm_call("extract", ns="a", ok=False, p=50, c=0, ms=10.0))
    store.record_llm_call(llm_call("extract", ns="b", cached=True, p=7, c=3, ms=0.5))
    store.record_llm_call(
        llm_call("summarise", ns="a", p=1, c=2, ms=3.0, dropped={"over_bound": 2, "wrong_type": 1})
    )
    store.record_llm_call(
        llm_call("summarise", ns="a", p=1, c=40, dropped={"cut_off": 1}, reasoning=30)
    )
    store.record_llm_call(llm_call("answer", ns=None))

    usage = store.llm_usage()
    assert set(usage) == {"extract", "summarise", "answer"}
    assert usage["extract"] == {
        "calls": 3,
        "failures": 1,
        "cached": 1,
        "prompt_tokens": 157,
        "completion_tokens": 23,
        "latency_ms": 260.8,
        "kept": 2,
        "repaired": 0,
        "truncated": 0,
        "rejected": 0,
        "cut_off": 0,
        "reasoning_tokens": 0,
    }
    summarised = usage["summarise"]
    assert (summarised["kept"], summarised["repaired"], summarised["failures"]) == (0, 2, 0)
    assert (summarised["truncated"], summarised["rejected"]) == (3, 1)
    # a reply kept cut at the limit, and a reasoning model's thought, counted apart
    assert (summarised["cut_off"], summarised["reasoning_tokens"]) == (1, 30)
    assert summarised["completion_tokens"] == 42
    a = store.llm_usage("a")
    assert set(a) == {"extract", "summarise"}
    assert a["extract"]["calls"] == 2 and a["extract"]["failures"] == 1
    assert a["summarise"]["prompt_tokens"] == 2
    assert store.llm_usage("zzz") == {}


def test_stats(store: Store) -> None:
    store.add_episodes("b", [prep("1", "x", embed=True), prep("2", "y")])
    store.add_episodes("a", [prep("1", "x")])
    stats = store.stats()
    assert [s.namespace for s in stats] == ["a", "b"]
    b = store.stats("b")[0]
    assert (b.episodes, b.embedded, b.records) == (2, 1, {})
    assert store.size_bytes() > 0


def test_schema_version_is_recorded_and_kept_on_reopen(open_backend) -> None:
    first = open_backend()
    version = first.schema_version()
    assert isinstance(version, int) and version >= 1
    first.add_episodes("ns", [prep("e1", "persisted")])
    first.close()
    again = open_backend()  # must not re-run migrations over existing tables
    assert again.schema_version() == version
    assert again.get_episodes("ns", ["e1"])[0].text == "persisted"


# BM25 parity between backends -------------------------------------------------------------
_WORDS = (
    "run running runs ran runner happiness happy happily relational relate generalization "
    "general caresses caress ponies pony cats cat agreed agree plastered motoring sing "
    "conflated troubled sized hopping tanned falling hissing fizzed failing filing sky skies "
    "conditional valency digitizer radically differently analogously vietnamization operator "
    "feudalism decisiveness hopefulness callousness formality sensitivity triplicate formative "
    "formalize electricity electrical goodness revival allowance inference airliner adjustable "
    "replacement adjustment dependent adoption communism activate effective bowdlerize "
    "the a of and to in is was it for on with as at by I you she he we they "
    "Lisbon Porto Vienna volcano ash piano garden tomatoes basil train chess bread crust"
).split()
_ODD = [
    "Café",
    "naïve",
    "Ærøskøbing",
    "Straße",
    "ÉCOLE",
    "Ünïcödé",
    "Москва",
    "東京",
    "🙂",
    "great🙂",
    "e-mail",
    "it's",
    "3.14",
    "v2",
    "under_score",
    "x₂",
    "Ωmega",
    "ﬁne",
    "a\u0301b",
]


def _parity_corpus(rng: random.Random) -> list[PreparedEpisode]:
    eps = []
    for i in range(300):
        n = rng.choice([1, 2, 3, 5, 8, 13, 30])
        words = [rng.choice(_WORDS) for _ in range(n)]
        if rng.random() < 0.3:
            words.insert(rng.randrange(n + 1), rng.choice(_ODD))
        if rng.random() < 0.2:
            words = [w.upper() if rng.random() < 0.3 else w for w in words]
        sep = rng.choice([" ", " ", ", ", "; ", " - ", "\n"])
        speaker = rng.choice([None, "ana", "ben", "Ünï"])
        eps.append(
            prep(
                f"p{i}",
                sep.join(words) + rng.choice(["", ".", "!", "?"]),
                speaker=speaker,
                session=rng.choice(["s1", "s2", None]),
            )
        )
    return eps


def test_bm25_ranks_alike_on_both_backends(tmp_path: Path) -> None:
    """The PostgreSQL store's BM25 gives the SQLite store's FTS5 order and scores: same
    tokens (porter, unicode61, diacritics), same formula, same statistics."""
    rng = random.Random(7)
    eps = _parity_corpus(rng)
    lite = open_store(tmp_path / "s.db")
    pg = open_store(pgtest.database_url(tmp_path))
    try:
        for store in (lite, pg):
            store.add_episodes("ns", eps)
            store.delete_episodes("ns", ["p3", "p150"])  # totals follow deletions
            store.add_episodes("ns", [prep("late", "late runner with hopeful goodness")])
        ids = [e.external_id for e in eps] + ["late"]
        names = [{v: k for k, v in keys_of(s, "ns", ids).items()} for s in (lite, pg)]
        queries = [[rng.choice(_WORDS + _ODD) for _ in range(rng.randint(1, 4))] for _ in range(60)]
        queries += [
            ["running", "running"],
            ["RUNS"],
            ["cafe"],
            ["naive"],
            ["nowhere"],
            ["the cat", "sky"],
            ["hopping tanned"],
            ["'", "*"],
            ["the", "the", "a"],
        ]
        filters = [None, SearchFilters(speakers=["ana"]), SearchFilters(sessions=["s2"])]
        compared = 0
        for terms in queries:
            for flt in filters:
                for limit in (5, 400):
                    got = [
                        [(name[k], s) for k, s in store.bm25_episodes("ns", terms, limit, flt)]
                        for store, name in zip((lite, pg), names, strict=True)
                    ]
                    want, have = got
                    assert len(want) == len(have), terms
                    for (wid, ws), (hid, hs) in zip(want, have, strict=True):
                        assert hs == pytest.approx(ws, rel=1e-9, abs=1e-12), (terms, wid, hid)
                    # the same order, ties aside (equal scores may come in either order)
                    assert [round(s, 9) for _, s in want] == [round(s, 9) for _, s in have]
                    full = limit == 400
                    if full:
                        assert {i for i, _ in want} == {i for i, _ in have}, terms
                    compared += len(want)
        assert compared > 5000
    finally:
        lite.close()
        pg.close()
        pgtest.drop(tmp_path)


# jobs and what is unbuilt -------------------------------------------------------------------
def test_a_job_reads_its_state_from_the_build_marks(store: Store) -> None:
    store.add_episodes("ns", [prep(f"j{i}", f"turn number {i}") for i in range(4)])
    covered = store.add_job("ns", "job_a", "add", "mnemis", ["b1", "b2"], ["j0", "j1", "j2", "zz"])
    assert covered == 3  # the absent id is left out
    assert store.add_job("nowhere", "job_x", "add", "r", ["b1"], ["j0"]) == 0
    job = store.job("job_a")
    assert job is not None and (job.namespace, job.episodes, job.present) == ("ns", 3, 3)
    assert job.marks == {b: {"done": 0, "failed": 0, "dead": 0} for b in ("b1", "b2")}
    keys = keys_of(store, "ns", ["j0", "j1", "j2", "j3"])
    store.write_records("ns", [], built=("b1", [keys["j0"], keys["j1"], keys["j3"]]))
    store.mark_failed("ns", "b2", [(keys["j1"], "boom")], max_attempts=1, backoff_s=0)
    store.mark_failed("ns", "b2", [(keys["j2"], "later")], max_attempts=3, backoff_s=60)
    job = store.job("job_a")
    assert job is not None
    assert job.marks["b1"] == {"done": 2, "failed": 0, "dead": 0}  # j3 is not the job's
    assert job.marks["b2"] == {"done": 0, "failed": 1, "dead": 1}
    assert job.next_retry_at is not None and job.next_retry_at > 0
    assert {(f.episode, f.status, f.error) for f in job.failures} == {
        ("j1", "dead", "boom"),
        ("j2", "failed", "later"),
    }
    assert store.unbuilt("ns", ["b1"], ["j0", "j1", "j2", "j3", "zz"]) == ["j2"]
    assert store.unbuilt("ns", ["b1", "b2"], ["j3", "j0"]) == ["j3", "j0"]
    assert store.unbuilt("other", ["b1"], ["j0"]) == []
    store.delete_episodes("ns", ["j2"])
    job = store.job("job_a")
    assert job is not None and (job.episodes, job.present) == (3, 2)
    assert store.job("job_unknown") is None
    store.delete_namespace("ns")
    assert store.job("job_a") is None


def test_old_jobs_are_forgotten(store: Store) -> None:
    store.add_episodes("ns", [prep("o1", "an old turn")])
    assert store.add_job("ns", "job_old", "add", "r", ["b"], ["o1"]) == 1
    store.add_job("ns", "job_new", "add", "r", ["b"], ["o1"], keep_s=-1.0)  # all older
    assert store.job("job_old") is None


def test_read_at_once_answers_or_says_it_would_wait(store: Store) -> None:
    """An embedded store reads on the caller's thread while its connection is free and
    says it would wait while another thread holds it; a networked one always says so."""
    import threading

    from memstrata.store.base import WOULD_WAIT

    store.add_episodes("ns", [prep("r1", "a turn")])
    answer = store.read_at_once(store.namespaces)
    if type(store).__name__ != "SQLiteStore":
        assert answer is WOULD_WAIT
        return
    assert answer == ["ns"]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store._write():  # type: ignore[attr-defined]
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        assert store.read_at_once(store.namespaces) is WOULD_WAIT
    finally:
        release.set()
        holder.join()
    assert store.read_at_once(store.namespaces) == ["ns"]
