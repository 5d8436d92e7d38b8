"""The heuristic tier: date resolution, the affiliation rules, extractive events, the
relative-score filter, ``show`` and ``--explain``, and the evidence-set metrics."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path

import pytest
from higmem_helpers import NS, add_turns
from typer.testing import CliRunner

from memstrata.cli.main import app
from memstrata.designs.higmem.builder import HiGMemBuilder, HiGMemParams
from memstrata.designs.higmem.layer import Layers, layer_problems
from memstrata.designs.higmem.notes import analyse, resolve_dates
from memstrata.designs.higmem.records import TurnNote
from memstrata.designs.higmem.route import (
    Candidate,
    GuidedParams,
    GuidedRoute,
    _Scorer,
    date_span,
    in_period,
    overlap,
)
from memstrata.engine.contracts import Context
from memstrata.eval.metrics import evidence_set_metrics
from memstrata.memory import Memory
from memstrata.models import Episode
from memstrata.retrieval.system1 import parse_period
from memstrata.retrieval.text import stem, stems

BASE = datetime(2023, 5, 8, 13, 56)  # a Monday


def test_relative_dates_resolve_against_the_turn_time() -> None:
    def dates(text: str) -> dict[str, str]:
        return {d["phrase"]: d["date"] for d in resolve_dates(text, BASE)}

    assert dates("I went to a support group yesterday.") == {"yesterday": "2023-05-07"}
    assert dates("Last Saturday I painted a sunrise.") == {"Last Saturday": "2023-05-06"}
    assert dates("I'm going camping next month!") == {"next month": "2023-06"}
    assert dates("I started painting 3 years ago.") == {"3 years ago": "2020"}
    assert dates("We moved there on 12 June 2022.") == {"12 June 2022": "2022-06-12"}
    # words that only look like dates: "We" (Wednesday), the verb "may"
    assert dates("We may go hiking, it was great.") == {}
    assert resolve_dates("yesterday", None) == []


def test_the_note_is_derived_from_the_turn_and_its_window(store, embedder) -> None:
    eps = add_turns(
        store,
        [
            ("s1", "Ana", "I adopted a puppy named Biscuit."),
            ("s1", "Ben", "Biscuit sounds adorable! Did you take Biscuit to the vet yesterday?"),
        ],
    )
    note = analyse(eps[1], eps[:1])
    assert "vet" in note.keywords and "biscuit" in note.keywords
    assert note.keywords.index("vet") < note.keywords.index("biscuit")  # new words first
    assert "ben" not in note.keywords  # speakers are not keywords
    # as written, not lemmas: they are embedded with the turn ("adopted", not "adopt")
    assert "adopted" in analyse(eps[0], []).keywords
    assert {"question", "dated"} <= set(note.tags)
    assert note.context.startswith("Ben on 08 May 2023, replying to Ana: “I adopted")
    assert note.dates == [{"phrase": "yesterday", "date": "2023-05-07", "unit": "day"}]
    assert note.turn_id == eps[1].id and [s.episode for s in note.sources] == [eps[1].id]


def test_a_reply_links_to_the_question_it_answers(store, embedder) -> None:
    eps = add_turns(
        store,
        [
            ("s1", "Ana", "Did you take Biscuit to the vet?"),
            ("s1", "Ben", "Yes, on Monday."),
            ("s1", "Ben", "Did I tell you?"),
            ("s1", "Ben", "The vet was kind."),
        ],
    )
    assert analyse(eps[1], eps[:1]).links_to == [eps[0].id]  # another speaker asked
    assert analyse(eps[2], eps[:2]).links_to == []  # the last turn asks nothing
    assert analyse(eps[3], eps[:3]).links_to == []  # the same speaker asked
    assert analyse(eps[0], []).links_to == [] and analyse(eps[1], eps[:1]).profile == []


TALK = [
    ("s1", "Ana", "I adopted a puppy named Biscuit from the animal shelter."),
    ("s1", "Ben", "A shelter puppy! How is Biscuit settling in at home?"),
    ("s1", "Ana", "Wow, thanks!"),
    ("s1", "Ben", "My band plays a jazz concert downtown on Friday night."),
    ("s2", "Ana", "The puppy Biscuit I adopted from the animal shelter is settling in at home."),
]


def build(store, embedder, params: HiGMemParams | None = None) -> tuple[list, Layers]:  # type: ignore[type-arg]
    eps = add_turns(store, TALK, embedder)
    ctx = Context(store, embedder)
    assert not asyncio.run(HiGMemBuilder(params or HiGMemParams()).update(ctx, NS, eps)).failed
    return eps, Layers.load(store, embedder, NS)


def test_affiliation_by_similarity_and_locality(store, embedder) -> None:
    eps, lay = build(store, embedder)
    ev = {e.id: set(lay.events_of[e.id]) for e in eps}
    assert ev[eps[1].id] == ev[eps[0].id]  # same topic next door: joins the recent event
    assert ev[eps[2].id] == ev[eps[1].id]  # a back-channel joins the event it answers
    assert not ev[eps[3].id] & ev[eps[0].id]  # a new subject: NEW_EVENT
    assert ev[eps[4].id] & ev[eps[0].id]  # the topic again, a session later, very close
    assert layer_problems(lay) == []


def test_extractive_events_keep_their_links(store, embedder) -> None:
    eps, lay = build(store, embedder)
    (eid,) = lay.events_of[eps[0].id]
    event = lay.events[eid]
    assert event.turn_ids[:3] == [e.id for e in eps[:3]]
    assert "Biscuit" in event.summary and "(topics:" in event.summary
    assert [f.turns for f in event.facts][:3] == [[e.id] for e in eps[:3]]
    assert event.facts[0].text.startswith("Ana: I adopted a puppy")
    assert event.facts[0].when == "2023-05-08"


def test_append_at_or_above_tau(store, embedder) -> None:
    eps, lay = build(store, embedder, HiGMemParams(tau=1))
    (eid,) = lay.events_of[eps[0].id]
    event = lay.events[eid]
    # τ = 1: the summary stays the first turn's; later turns only append their fact
    assert "adopted a puppy" in event.summary and "settling" not in event.summary
    assert len(event.facts) == len(event.turn_ids)


def test_the_filter_keeps_scores_within_the_relative_cut() -> None:
    def cands(scores: list[float]) -> list[Candidate]:
        return [Candidate(ep=None, score=s) for s in scores]  # type: ignore[arg-type]

    tight = GuidedRoute(GuidedParams(keep=0.9))
    assert [c.score for c in tight._cut(cands([1.0, 0.95, 0.5, 0.85]), 10)] == [1.0, 0.95]
    loose = GuidedRoute(GuidedParams(keep=0.5))
    assert [c.score for c in loose._cut(cands([1.0, 0.95, 0.5, 0.85, 0.2]), 3)] == [1.0, 0.95, 0.85]
    assert loose._cut([], 3) == []


def test_terms_meet_by_stem_weighted_by_idf() -> None:
    assert stems("We camped, they camp; camping!") == [stem("camped")]
    assert stem("researching") == stem("research") and stem("signed") == stem("sign")
    weights = {stem("camping"): 3.0, stem("lake"): 1.0}
    terms = list(weights)
    assert overlap(terms, "We camped by the river", lambda t: weights[t]) == 0.75
    assert overlap(terms, "Lakes and camps", lambda t: weights[t]) == 1.0
    assert overlap([], "anything", lambda t: 1.0) == 0.0


def test_a_turn_is_in_a_period_by_its_time_or_a_resolved_date() -> None:
    may = parse_period("What did Ana do in May 2023?")
    assert may is not None and date_span("2023-05") == may
    assert date_span("2022") == parse_period("in 2022")
    day = date_span("2023-05-07")
    assert day is not None and day[1] - day[0] == 86400
    assert date_span("soon") is None and date_span("2023-13") is None

    def turn(when: datetime) -> Episode:
        return Episode(id="e0", namespace="t", text="x", occurred_at=when, created_at=when)

    said_in_may, said_in_june = turn(datetime(2023, 5, 8, 13, 56)), turn(datetime(2023, 6, 2))
    note = TurnNote(
        namespace="t", turn_id="e0", dates=[{"phrase": "last month", "date": "2023-05"}]
    )
    year_note = TurnNote(namespace="t", turn_id="e0", dates=[{"phrase": "x", "date": "2022"}])
    assert in_period(said_in_may, None, may)
    assert not in_period(said_in_june, None, may)
    assert in_period(said_in_june, note, may)  # "last month", said in June
    assert not in_period(said_in_june, year_note, may)


def test_session_context_is_read_from_the_sessions_own_turns(store, embedder) -> None:
    eps = add_turns(
        store,
        [
            ("s1", "Ana", "Guess where we went last weekend?"),
            ("s1", "Ben", "The lake?"),
            ("s1", "Ana", "Yes, we camped at the lake with the kids."),
            ("s2", "Ben", "How was work today?"),
        ],
        embedder,
    )
    ctx = Context(store, embedder)
    scores = {e.id: float(i + 1) for i, e in enumerate(eps)}  # 1, 2, 3, 4

    def score(batch: list[Episode]) -> dict[str, float]:
        return {e.id: scores[e.id] for e in batch}

    route = GuidedRoute(GuidedParams(neighbour_weight=0.5))
    alone = route._with_neighbours(ctx, [eps[1]], score, None)  # type: ignore[arg-type]
    assert alone == {eps[1].id: 2.0 + 0.5 * 3.0}  # the best adjacent turn, not in the list
    # the same context whichever other turns are candidates; none across sessions
    many = route._with_neighbours(ctx, eps, score, None)  # type: ignore[arg-type]
    assert many[eps[1].id] == alone[eps[1].id]
    assert many == {eps[0].id: 1 + 1.0, eps[1].id: 2 + 1.5, eps[2].id: 3 + 1.0, eps[3].id: 4.0}
    flat = GuidedRoute(GuidedParams(neighbour_weight=0.0))
    assert flat._with_neighbours(ctx, eps, score, None) == scores  # type: ignore[arg-type]


def test_the_score_takes_system1s_date_factor_in_a_named_period(store, embedder) -> None:
    eps = add_turns(
        store,
        [("s1", "Ana", "We camped at the lake."), ("s1", "Ben", "We camped at the lake.")],
        embedder,
    )
    lay = Layers(store, embedder, NS)
    lay.notes[eps[1].id] = TurnNote(namespace=NS, turn_id=eps[1].id, dates=[])
    route = GuidedRoute()
    ctx = Context(store, embedder)
    qvec = embedder.embed(["Where did Ana camp?"])[0]
    terms = [stem("camp")]
    plain = _Scorer(route, ctx, lay, qvec, terms, {"Ana"}, None)(eps)
    assert plain[eps[0].id] > plain[eps[1].id] + route.params.speaker_bonus  # Ana is named
    may = parse_period("in May 2023")
    june = parse_period("in June 2023")
    dated = _Scorer(route, ctx, lay, qvec, terms, {"Ana"}, may)(eps)
    factor = 1 + route.params.system1.date_boost
    assert dated == pytest.approx({k: v * factor for k, v in plain.items()})  # said in May
    assert _Scorer(route, ctx, lay, qvec, terms, {"Ana"}, june)(eps) == pytest.approx(plain)


def test_evidence_set_metrics_macro_average() -> None:
    rows = [
        (["a", "b", "a"], ["a"]),  # K 2, P 1/2, R 1
        (["c"], ["d", "e"]),  # K 1, P 0, R 0
        ([], ["x"]),  # K 0, P 0, R 0
        (["z"], []),  # no gold: skipped
    ]
    m = evidence_set_metrics(rows)
    assert m == {"n": 3, "avg_k": 1.0, "precision": round(0.5 / 3, 4), "recall": round(1 / 3, 4)}
    assert evidence_set_metrics([])["n"] == 0


def test_search_explain_and_show_through_the_cli(tmp_path: Path, embedder, sample) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=embedder, recipe="higmem", **{"build.mode": "manual"}) as m:
        m.add_many(sample)
        (report,) = m.build()
        assert report.counts["turn_note"] == len(sample) and report.counts["event"] >= 2
        r = m.search("Where is the conference?", k=10, max_tokens=None)
        assert 1 <= len(r.hits) <= 10 and all(h.kind == "episode" for h in r.hits)
        lay = Layers.load(m.store, embedder, "default")
        eid = next(iter(lay.events))
        answer = m.ask("When is the conference?")
        assert answer.extractive and answer.sources
    runner = CliRunner()
    found = runner.invoke(
        app,
        [
            "search",
            "Where is the conference?",
            "--db",
            str(db),
            "--recipe",
            "higmem",
            "--explain",
            "--json",
        ],
    )
    assert found.exit_code == 0, found.output
    hits = json.loads(found.output)["hits"]
    assert any(r.startswith("semantic#") for h in hits for r in h["routes"])
    assert all(h["ranks"] == {"higmem": i} for i, h in enumerate(hits, start=1))
    shown = runner.invoke(app, ["show", eid[:10], "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "summary:" in shown.output and "fact sheet" in shown.output
    assert "linked turns" in shown.output and lay.events[eid].turn_ids[0] in shown.output
    turn = runner.invoke(app, ["show", lay.events[eid].turn_ids[0], "--db", str(db)])
    assert turn.exit_code == 0 and "keywords:" in turn.output and eid in turn.output


def test_bench_locomo_reports_evidence_sets_for_every_recipe(tmp_path: Path, embedder) -> None:
    from memstrata.eval import bench_locomo
    from memstrata.memory import AsyncMemory

    data = Path(__file__).resolve().parents[2] / "data" / "tiny_locomo.json"

    async def go() -> dict:  # type: ignore[type-arg]
        memory = await AsyncMemory.open(tmp_path / "b.db", embedder=embedder)
        try:
            return await bench_locomo.run(memory, data, ["bm25", "default", "higmem"])
        finally:
            await memory.close()

    report = asyncio.run(go())
    for system in ("bm25", "default", "higmem"):
        ev = report["systems"][system]["evidence_set"]["overall"]
        assert ev["n"] == 5 and 0 < ev["avg_k"] <= 10
        assert 0 <= ev["precision"] <= 1 and 0 <= ev["recall"] <= 1
    from memstrata.importers import locomo

    # a fixed-size recipe fills its k = 10, or returns every turn of a shorter conversation
    sizes = [
        min(10, len(c.turns))
        for c in locomo.load(data)
        for q in c.questions
        if q.evidence and q.category in (1, 2, 3, 4)
    ]
    assert report["systems"]["default"]["evidence_set"]["overall"]["avg_k"] == round(
        sum(sizes) / len(sizes), 3
    )
    text = bench_locomo.markdown(report)
    assert "| Avg K | P@K | R@K |" in text and "| higmem | overall (1-4) | 5 |" in text
