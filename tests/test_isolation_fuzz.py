"""Tenant isolation, fuzzed: no namespace ever sees, counts or changes another's data.

One store holds eight tenants with awkward names (SQL wildcards, a prefix of another,
case, spaces, quotes, '/', unicode, 500 characters) and the same episode ids, speakers,
sessions and vocabulary; only one invented name (the *marker*) tells them apart, so a
leaked hit, record or answer shows another tenant's marker. Every recipe is searched on
it (heuristic tier, real MiniLM); write operations are fuzzed on fresh stores. The CLI is
checked through real subprocesses. ``MEMSTRATA_FUZZ_SCALE=10`` runs ten times as many
examples (docs/reliability.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memstrata import Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.engine import Registry, ShowNode
from memstrata.errors import InvalidInputError
from memstrata.models import Hit
from memstrata.store import SearchFilters

SCALE = float(os.environ.get("MEMSTRATA_FUZZ_SCALE", "1"))


def fuzz(examples: int) -> settings:
    """``examples`` runs (times MEMSTRATA_FUZZ_SCALE), no deadline: builds take time."""
    return settings(
        max_examples=max(1, round(examples * SCALE)),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    )


# tenant -> marker: the one word only that tenant's episodes hold.
TENANTS: dict[str, str] = {
    "acme": "Zorbak",
    "acme%": "Quillon",  # LIKE wildcard; "acme" is its prefix
    "ac_e": "Brevic",  # '_' would match the 'm' of "acme" in a LIKE
    "Acme": "Tarvold",  # differs by case only
    " acme ": "Yelbin",  # spaces around
    "-n acme": "Fenwick",  # looks like a CLI option
    "acme/ünï 😀 'q\" %_": "Morwen",
    "acme" + "x" * 496: "Drask",  # 500 characters, "acme" its prefix
}
NAMES = list(TENANTS)
MARKERS = list(TENANTS.values())
SHARED_IDS = ["s1", "s2", "s3", "s4"]
TURNS = [  # (id, text, speaker, at, session); the same in every tenant but the marker
    ("s1", "{m} adopted a greyhound called Pepper in Lisbon.", "Maya", "2024-03-02T10:00", "s1"),
    ("s2", "{m} gives a talk on gardens at the Lisbon fair.", "Tomas", "2024-03-03T10:00", "s1"),
    ("s3", "Pepper loves the beach; {m} walks her each morning.", "Maya", "2024-04-01T09:00", "s2"),
    ("u{t}-1", "{m} works as a nurse at the hospital in Porto.", "Tomas", "2024-05-01T09:00", "s2"),
    (
        "u{t}-2",
        "On weekends {m} goes hiking with Pepper and Maya.",
        "Maya",
        "2024-06-01T09:00",
        "s3",
    ),
    ("s4", "{m} said the talk in Lisbon moved to Friday.", "Tomas", "2024-06-02T09:00", "s3"),
]
WORDS = "Pepper Lisbon talk nurse hospital Porto hiking weekends greyhound Maya Tomas Friday"

REGISTRY = Registry.load({})
RECIPES = sorted(REGISTRY.recipes)
# One recipe per set of builders: building these builds what every recipe reads.
BUILDS: dict[tuple[str, ...], str] = {}
for _name in RECIPES:
    BUILDS.setdefault(tuple(b.name for b in REGISTRY.recipes[_name].builders), _name)
BUILD_RECIPES = sorted(r for b, r in BUILDS.items() if b)
WRITE_RECIPES = sorted(BUILDS.values())


def turns(marker: str, tag: int) -> list[dict[str, Any]]:
    return [
        dict(
            id=i.format(t=tag),
            text=text.format(m=marker),
            speaker=speaker,
            at=at,
            session=session,
            metadata={"tenant": marker, "team": "north"},
        )
        for i, text, speaker, at, session in TURNS
    ]


def foreign(ns: str, names: list[str] | None = None) -> list[str]:
    """The markers of every tenant but ``ns`` (lowercase)."""
    markers = dict(zip(names or NAMES, MARKERS, strict=False))
    return [m.lower() for n, m in markers.items() if n != ns]


def assert_clean(ns: str, texts: list[str], what: str, names: list[str] | None = None) -> None:
    for text in texts:
        low = text.lower()
        for marker in foreign(ns, names):
            assert marker not in low, f"{what} of {ns!r} shows {marker!r}: {text!r}"


def episode_ids(memory: Memory, ns: str) -> set[str]:
    return {e.id for e in memory.store.iter_episodes(ns, limit=100_000)}


def assert_hits_own(
    memory: Memory, ns: str, hits: list[Hit], names: list[str] | None = None
) -> None:
    """Every hit and every source is ``ns``'s: episodes by id, records by a lookup scoped
    to ``ns``, and no text names another tenant's marker."""
    ids = episode_ids(memory, ns)
    kinds = list(memory.stats(ns)["namespaces"][0]["records"]) if hits else []
    for hit in hits:
        assert_clean(ns, [hit.text], f"{hit.kind} hit", names)
        assert set(hit.sources) <= ids, f"{ns!r}: sources {hit.sources} not among {ids}"
        if hit.kind == "episode":
            assert hit.id in ids
        else:  # a hit's kind may be a view of another (Mnemis shows categories as entities)
            assert any(
                memory.store.get_records(ns, kind, [hit.id], builder=None) for kind in kinds
            ), f"{hit.kind} {hit.id} is not a record of {ns!r}"


def tree_texts(nodes: list[ShowNode]) -> list[str]:
    out: list[str] = []
    for node in nodes:
        out += [node.text, *tree_texts(node.children)]
    return out


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder
) -> Iterator[tuple[Memory, Path]]:
    """Every tenant's episodes, every design built over them, in one store file."""
    path = tmp_path_factory.mktemp("isolation") / "memory.db"
    memory = Memory.open(path, embedder=embedder, **{"build.mode": "manual"})
    for tag, (ns, marker) in enumerate(TENANTS.items()):
        memory.add_many(turns(marker, tag), namespace=ns)
    for recipe in BUILD_RECIPES:
        for ns in NAMES:
            memory.build(ns, recipe=recipe)
    yield memory, path
    memory.close()


# reads ----------------------------------------------------------------------------------

ODD_QUERIES = [
    "Quillon",
    "Zorbak OR Quillon OR Brevic OR Drask",
    '"Pepper" NEAR("Lisbon")',
    "body:Quillon",
    "tenant:Quillon",
    "Quill*",
    "acme%",
    "ac_e",
    "' OR 1=1 --",
    '"',
    "*",
    "-Zorbak",
    "Pepper AND",
    "😀 ünï",
    "x" * 300,
]


@st.composite
def queries(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return draw(st.sampled_from(ODD_QUERIES))
    if kind == 1:
        words = draw(st.lists(st.sampled_from(WORDS.split() + MARKERS), min_size=1, max_size=5))
        return " ".join(words)
    return draw(st.text(min_size=1, max_size=40).filter(lambda s: s.strip()))


DAYS = st.sampled_from([None, "2024-01-01", "2024-03-03T00:00", "2024-05-01T09:00", "2025-01-01"])


@st.composite
def filters(draw: st.DrawFn) -> SearchFilters | None:
    if draw(st.booleans()):
        return None
    speakers = draw(st.none() | st.lists(st.sampled_from(["Maya", "Tomas", "Nobody"]), max_size=2))
    sessions = draw(st.none() | st.lists(st.sampled_from(["s1", "s2", "s3", "s9"]), max_size=2))
    since, until = draw(DAYS), draw(DAYS)
    return SearchFilters(
        speakers=speakers,
        sessions=sessions,
        since=datetime.fromisoformat(since) if since else None,
        until=datetime.fromisoformat(until) if until else None,
    )


@fuzz(120)
@given(
    ns=st.sampled_from(NAMES),
    recipe=st.sampled_from(RECIPES),
    query=queries(),
    filt=filters(),
    k=st.integers(1, 8),
)
def test_search_and_ask_stay_in_their_namespace(
    built: tuple[Memory, Path],
    ns: str,
    recipe: str,
    query: str,
    filt: SearchFilters | None,
    k: int,
) -> None:
    memory, _ = built
    result = memory.search(query, namespace=ns, recipe=recipe, filters=filt, k=k)
    assert result.namespace == ns
    assert result.pending == 0
    assert_hits_own(memory, ns, result.hits)
    assert_clean(ns, [result.context], "context")
    for hit in result.hits:
        if hit.kind == "episode" and filt is not None:
            (episode,) = memory.get([hit.id], namespace=ns)
            assert filt.admits(episode), f"{hit.id} passed {filt}"
    answer = memory.ask(query, namespace=ns, recipe=recipe, filters=filt, k=k)
    assert_clean(ns, [answer.text], "answer")
    assert set(answer.sources) <= episode_ids(memory, ns)


@fuzz(30)
@given(
    spread=st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
    recipe=st.sampled_from(RECIPES),
    query=queries(),
)
def test_search_many_stays_in_its_namespace(
    built: tuple[Memory, Path], spread: list[str], recipe: str, query: str
) -> None:
    """The same queries, batched, in several tenants: each batch sees only its own."""
    memory, _ = built
    for ns in spread:
        batch = memory.search_many([query, f"{query} Pepper", WORDS], namespace=ns, recipe=recipe)
        for result in batch:
            assert result.namespace == ns
            assert_hits_own(memory, ns, result.hits)


@fuzz(60)
@given(
    ns=st.sampled_from(NAMES),
    name=st.sampled_from(MARKERS + WORDS.split() + ["acme", "%", "_", "*", "'"]) | st.text(),
)
def test_show_stays_in_its_namespace(built: tuple[Memory, Path], ns: str, name: str) -> None:
    memory, _ = built
    try:
        nodes = memory.show(name, namespace=ns)
    except InvalidInputError:
        return  # a name show refuses, with a message
    assert_clean(ns, tree_texts(nodes), f"show {name!r}")
    if name.lower() in foreign(ns):
        assert nodes == [], f"show {name!r} in {ns!r} found another tenant's structures"


def test_every_record_belongs_to_its_namespace(built: tuple[Memory, Path]) -> None:
    """The records routes' material: each tenant's records, of every kind and builder."""
    memory, _ = built
    total = 0
    for ns in NAMES:
        ids = episode_ids(memory, ns)
        (row,) = memory.stats(ns)["namespaces"]
        assert row["namespace"] == ns and row["episodes"] == len(TURNS) == len(ids)
        for kind in row["records"]:
            records = memory.store.get_records(ns, kind, builder=None)
            assert len(records) == row["records"][kind]
            for rec in records:
                assert rec.namespace == ns
                assert {s.episode for s in rec.sources} <= ids
                assert_clean(ns, [rec.model_dump_json()], f"{kind} record")
            total += len(records)
        # the build queue: every builder done with this tenant's episodes, nothing else
        assert set(row["builds"]) >= {b[0] for b in BUILDS if b}
        for counts in row["builds"].values():
            assert counts == {"done": len(TURNS), "failed": 0, "dead": 0, "queued": 0}
        assert row["failures"] == [] and row["repairs"] == {}
        for builder in row["builds"]:
            assert {e.id for e in memory.store.pending_episodes(ns, builder)} == set()
        for sid in SHARED_IDS:
            assert memory.history(sid, namespace=ns) == []
            (episode,) = memory.get([sid], namespace=ns)
            assert episode.namespace == ns and TENANTS[ns] in episode.text
    assert total > 0
    everything = memory.stats()
    assert sorted(r["namespace"] for r in everything["namespaces"]) == sorted(NAMES)
    assert memory.namespaces() == sorted(NAMES)


# writes ---------------------------------------------------------------------------------

TRICKY = ["acme", "%", "_", "a%", "a_", "%%", "'", '"', "a/b", "ü", "😀", "x" * 300, "-n", "*"]
SUFFIXES = ["", "%", "_", "/", " ", "'", "😀", "x" * 200, "/%"]
NAME_TEXT = st.text(st.characters(exclude_categories=["Cc", "Cs"]), min_size=1, max_size=24)


@st.composite
def tenant_names(draw: st.DrawFn) -> list[str]:
    """Three distinct valid names, the first often a prefix of the second."""
    base = draw(st.sampled_from(TRICKY) | NAME_TEXT.filter(lambda s: s.strip()))
    second = base + draw(st.sampled_from(SUFFIXES[1:]) | NAME_TEXT)
    third = draw(st.sampled_from(TRICKY) | NAME_TEXT.filter(lambda s: s.strip()))
    names = [base, second, third]
    if draw(st.booleans()):
        names = [second, base, third]  # the longer name is the one written to
    if len(set(names)) < 3:
        names[2] = names[0] + names[1] + "~"
    return names


def snapshot(memory: Memory, ns: str, recipe: str) -> dict[str, Any]:
    """Everything a tenant can observe: episodes, versions, records, counts, a search."""
    episodes = memory.store.iter_episodes(ns, limit=100_000)
    (row,) = memory.stats(ns)["namespaces"]
    records = {
        kind: sorted(r.model_dump_json() for r in memory.store.get_records(ns, kind, builder=None))
        for kind in row["records"]
    }
    result = memory.search("who adopted Pepper in Lisbon?", namespace=ns, recipe=recipe, k=4)
    return {
        "episodes": [e.model_dump(mode="json") for e in episodes],
        "history": {e.id: memory.history(e.id, namespace=ns) for e in episodes},
        "records": records,
        "stats": row,
        "hits": [(h.kind, h.text, h.sources, round(h.score, 6)) for h in result.hits],
    }


OPS = ["delete_ids", "delete_namespace", "update", "replace", "add", "rebuild", "retry"]


@pytest.mark.slow
@fuzz(16)
@given(
    names=tenant_names(),
    recipe=st.sampled_from(WRITE_RECIPES),
    op=st.sampled_from(OPS),
    chosen=st.lists(st.sampled_from(SHARED_IDS), min_size=1, max_size=3, unique=True),
)
def test_writes_never_change_another_namespace(
    embedder: MiniLMEmbedder, names: list[str], recipe: str, op: str, chosen: list[str]
) -> None:
    with Memory.open(":memory:", embedder=embedder, recipe=recipe) as memory:
        for tag, ns in enumerate(names):
            memory.add_many(turns(MARKERS[tag], tag), namespace=ns)
        victim, others = names[0], names[1:]
        before = {ns: snapshot(memory, ns, recipe) for ns in others}
        mine = MARKERS[0]
        if op == "delete_ids":
            assert memory.delete(chosen, namespace=victim) == len(chosen)
            assert memory.get(chosen, namespace=victim) == []
        elif op == "delete_namespace":
            assert memory.delete_namespace(victim) == len(TURNS)
            assert victim not in memory.namespaces()
        elif op == "update":
            memory.update(chosen[0], f"{mine} moved to Madrid with Pepper.", namespace=victim)
            assert len(memory.history(chosen[0], namespace=victim)) == 1
        elif op == "replace":
            items = [dict(id=i, text=f"{mine} sold the boat in Lisbon ({i}).") for i in chosen]
            assert sorted(memory.add_many(items, namespace=victim, replace=True).updated) == sorted(
                chosen
            )
        elif op == "add":
            memory.add(f"{mine} met Pepper in Lisbon again.", namespace=victim, id="s1-bis")
        elif op == "rebuild":
            memory.build(victim, recipe=recipe, rebuild=True)
        else:
            assert memory.retry(victim) == 0
        for ns in others:
            assert snapshot(memory, ns, recipe) == before[ns], f"{op} in {victim!r} changed {ns!r}"
            for sid in SHARED_IDS:
                assert memory.history(sid, namespace=ns) == []
        if op != "delete_namespace":
            result = memory.search(f"{WORDS} {' '.join(MARKERS)}", namespace=victim, recipe=recipe)
            assert_hits_own(memory, victim, result.hits, names)
            assert_clean(victim, [memory.ask("Who has Pepper?", namespace=victim).text], "", names)


# refusals -------------------------------------------------------------------------------

BAD_NAMES = st.sampled_from(["", " ", "\t", "a\x00b", "a\nb", "\ud800", "a\x7f", "\x85"]) | (
    st.sampled_from([5, b"acme", 1.5, ["acme"]])
)


@fuzz(20)
@given(bad=BAD_NAMES)
def test_names_that_cannot_be_namespaces_are_refused(built: tuple[Memory, Path], bad: Any) -> None:
    """Refused by every verb with an InvalidInputError, never stored under another name
    (an empty name is not the default namespace)."""
    memory, _ = built
    calls = [
        lambda: memory.add("Pepper in Lisbon", namespace=bad, id="s1"),
        lambda: memory.add_many(["Pepper in Lisbon"], namespace=bad),
        lambda: memory.search("Pepper", namespace=bad),
        lambda: memory.ask("Pepper?", namespace=bad),
        lambda: memory.get(["s1"], namespace=bad),
        lambda: memory.show("Pepper", namespace=bad),
        lambda: memory.history("s1", namespace=bad),
        lambda: memory.update("s1", "changed", namespace=bad),
        lambda: memory.delete(["s1"], namespace=bad),
        lambda: memory.delete_namespace(bad),
        lambda: memory.list(namespace=bad),
        lambda: memory.stats(bad),
        lambda: memory.build(bad),
        lambda: memory.retry(bad),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError, match="namespace"):
            call()
    assert memory.namespaces() == sorted(NAMES)


@pytest.mark.parametrize("bad", ["", " ", "\ud800"])
def test_episode_ids_that_cannot_be_ids_are_refused(built: tuple[Memory, Path], bad: str) -> None:
    memory, _ = built
    with pytest.raises(InvalidInputError, match="episode id"):
        memory.add("Pepper in Lisbon", namespace="acme", id=bad)
    assert len(episode_ids(memory, "acme")) == len(TURNS)


# the command line -----------------------------------------------------------------------


def cli(env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**env, "COLUMNS": "400", "PYTHONIOENCODING": "utf-8"},
        timeout=120,
    )
    if ok:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


@pytest.mark.slow
def test_cli_reads_stay_in_their_namespace(
    built: tuple[Memory, Path], subprocess_env: dict[str, str], tmp_path: Path
) -> None:
    memory, path = built
    lines = [
        {"id": f"{i}:{q}", "query": q, "namespace": ns}
        for i, ns in enumerate(NAMES)
        for q in ["who adopted Pepper?", " ".join(MARKERS), "Lisbon talk", "acme%"]
    ]
    file = tmp_path / "queries.jsonl"
    file.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    for recipe in ["default", "mnemis"]:  # episodes only; episodes, facts and entities
        out = cli(subprocess_env, "search", "--queries", str(file), "--db", str(path), "--json",
                  "--recipe", recipe, "--k", "5").stdout  # fmt: skip
        answers = {row["id"]: row for row in map(json.loads, out.splitlines())}
        assert len(answers) == len(lines)
        for line in lines:
            ns = line["namespace"]
            ids = episode_ids(memory, ns)
            for hit in answers[line["id"]]["hits"]:
                assert_clean(ns, [hit["text"]], f"CLI {recipe} hit")
                assert set(hit["sources"]) <= ids
    stats = json.loads(cli(subprocess_env, "stats", "--db", str(path), "--json").stdout)
    assert sorted(r["namespace"] for r in stats["namespaces"]) == sorted(NAMES)
    db = str(path)
    one = json.loads(cli(subprocess_env, "stats", "--db", db, "-n", NAMES[-1], "--json").stdout)
    assert [r["namespace"] for r in one["namespaces"]] == [NAMES[-1]]
    assert one["namespaces"][0]["episodes"] == len(TURNS)
    for ns in ["acme%", NAMES[-1]]:
        got = json.loads(
            cli(subprocess_env, "history", "--db", db, "-n", ns, "--id", "s1", "--json").stdout
        )
        assert got["namespace"] == ns and got["versions"] == []
        assert TENANTS[ns] in got["current"]["text"]
        assert_clean(ns, [json.dumps(got, ensure_ascii=False)], "CLI history")
        asked = cli(subprocess_env, "ask", "who adopted Pepper?", "--db", db, "-n", ns,
                    "--recipe", "mnemis", "--json")  # fmt: skip
        answer = json.loads(asked.stdout)
        assert_clean(ns, [answer["text"]], "CLI ask")
        assert set(answer["sources"]) <= episode_ids(memory, ns)
        shown = cli(subprocess_env, "show", "Pepper", "--db", db, f"--namespace={ns}")
        assert "Pepper" in shown.stdout
        assert_clean(ns, [shown.stdout], "CLI show")
    missing = cli(subprocess_env, "show", "Quillon", "--db", db, "--namespace=acme", ok=False)
    assert missing.returncode != 0 and "quillon adopted" not in missing.stdout.lower()


@pytest.mark.slow
def test_cli_writes_never_change_another_namespace(
    embedder: MiniLMEmbedder, subprocess_env: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "cli.db")
    names = ["acme", "acme%", "ac_e"]
    for tag, ns in enumerate(names):
        file = tmp_path / f"{tag}.jsonl"
        file.write_text(
            "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in turns(MARKERS[tag], tag)),
            encoding="utf-8",
        )
        cli(subprocess_env, "import", str(file), "--db", db, "-n", ns)

    def state(via_cli: bool = False) -> dict[str, Any]:
        with Memory.open(db, embedder=embedder) as memory:
            eps = {ns: [e.model_dump(mode="json") for e in memory.store.iter_episodes(ns)]
                   for ns in memory.namespaces()}  # fmt: skip
            data = memory.stats()
        if via_cli:
            data = json.loads(cli(subprocess_env, "stats", "--db", db, "--json").stdout)
        return {"stats": {r["namespace"]: r for r in data["namespaces"]}, "episodes": eps}

    before = state()
    cli(subprocess_env, "update", "Zorbak moved to Madrid.", "--db", db, "-n", "acme", "--id", "s1")
    cli(subprocess_env, "delete", "--db", db, "-n", "acme", "--id", "s2", "--yes")
    after = state(via_cli=True)
    for ns in names[1:]:
        assert after["stats"][ns] == before["stats"][ns]
        assert after["episodes"][ns] == before["episodes"][ns]
    got = json.loads(
        cli(subprocess_env, "history", "--db", db, "-n", "acme%", "--id", "s1", "--json").stdout
    )
    assert got["versions"] == [] and MARKERS[1] in got["current"]["text"]
    assert after["stats"]["acme"]["episodes"] == len(TURNS) - 1
    cli(subprocess_env, "delete", "--db", db, "-n", "acme%", "--yes")
    last = state()
    assert set(last["episodes"]) == {"acme", "ac_e"}
    assert last["episodes"]["ac_e"] == before["episodes"]["ac_e"]
    assert last["stats"]["ac_e"] == before["stats"]["ac_e"]
    # an empty name is refused, as JSON, never read as the default namespace
    refused = cli(subprocess_env, "search", "Pepper", "--db", db, "-n", "", "--json", ok=False)
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["kind"] == "InvalidInputError"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "Pepper", "namespace": ""}\n', encoding="utf-8")
    refused = cli(subprocess_env, "search", "--queries", str(bad), "--db", db, "--json", ok=False)
    assert refused.returncode == 2 and "line 1" in json.loads(refused.stdout)["error"]
