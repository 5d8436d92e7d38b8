"""System-1's searches of a narrower scope: the day a question names, the thread of the
best candidate, and the question it answers (SQLite + MiniLM, real stores)."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata.embed import MiniLMEmbedder
from memstrata.memory import Memory
from memstrata.models import Hit
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1, EpisodeRoute
from memstrata.store import SearchFilters, SQLiteStore

DAY1 = datetime(2023, 6, 3, 18, 0, tzinfo=UTC)

# Maria's new activity of 3 June shares no word with the question but "started"; the
# other days hold many turns about starting things, which the whole namespace ranks first
DAYS = [
    ("d1", DAY1 - timedelta(days=30), "John", "I started a new job at the bank this week."),
    ("d2", DAY1 - timedelta(days=30), "Maria", "I started a pottery class, it is a new hobby."),
    ("d3", DAY1 - timedelta(days=20), "John", "We started a new routine of morning runs."),
    ("d4", DAY1 - timedelta(days=20), "Maria", "I started learning a new recipe every week."),
    ("d5", DAY1 - timedelta(days=10), "John", "The kids started a new school term recently."),
    ("d6", DAY1 - timedelta(days=10), "Maria", "My neighbour started a new garden recently."),
    ("e1", DAY1, "John", "We adopted a puppy from the pound last weekend."),
    ("e2", DAY1 + timedelta(minutes=1), "Maria", "I just started helping at a dog shelter."),
    ("e3", DAY1 + timedelta(minutes=2), "John", "That is kind of you."),
    ("f1", DAY1 + timedelta(days=9), "John", "A new bakery opened near the office."),
]


#: the rules that would also find the turns these tests are about
OTHERS_OFF = {
    "session_weight": 0.0,
    "neighbour_weight": 0.0,
    "reply_weight": 0.0,
    "voice_weight": 0.0,
}


def _store(
    path: Path, embedder: MiniLMEmbedder, turns: list[dict], **more: list[dict]
) -> Iterator[SQLiteStore]:
    """A store holding ``turns`` in namespace "d" (and ``more``, by namespace)."""
    with Memory.open(path, embedder=embedder) as memory:
        for namespace, batch in {"d": turns, **more}.items():
            memory.add_many(batch, namespace=namespace)
    store = SQLiteStore(str(path))
    yield store
    store.close()


@pytest.fixture
def days_store(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[SQLiteStore]:
    turns = [
        {"id": i, "text": t, "speaker": s, "occurred_at": at, "session": at.date().isoformat()}
        for i, at, s, t in DAYS
    ]
    yield from _store(tmp_path / "days.db", embedder, turns)


def _hits(
    store: SQLiteStore, embedder: MiniLMEmbedder, question: str, **knobs: object
) -> list[Hit]:
    params = DEFAULT_SYSTEM1.model_copy(update=knobs)
    (hits,) = EpisodeRoute(store, embedder, params).search("d", [question], 10)
    return hits


def _ids(store: SQLiteStore, embedder: MiniLMEmbedder, question: str, **knobs: object) -> list[str]:
    return [h.id for h in _hits(store, embedder, question, **knobs)]


def test_the_turns_of_the_day_a_question_names_are_searched_alone(
    days_store: SQLiteStore, embedder: MiniLMEmbedder
) -> None:
    question = "What new activity did Maria start, as mentioned on 3 June, 2023?"
    # three candidates from each list over the whole namespace: the other days' turns
    few = {"candidates": 3, **OTHERS_OFF}
    assert "e2" not in _ids(days_store, embedder, question, period_weight=0.0, **few)
    found = _ids(days_store, embedder, question, period_weight=1.0, **few)
    assert found[0] == "e2"
    # a question naming no date searches nothing more
    plain = "What new activity did Maria start?"
    assert _ids(days_store, embedder, plain, period_weight=1.0, **few) == _ids(
        days_store, embedder, plain, period_weight=0.0, **few
    )


def test_the_days_search_keeps_the_searchs_own_filters(
    days_store: SQLiteStore, embedder: MiniLMEmbedder
) -> None:
    question = "What new activity did Maria start, as mentioned on 3 June, 2023?"
    params = DEFAULT_SYSTEM1.model_copy(update={"period_weight": 1.0, "candidates": 3})
    route = EpisodeRoute(days_store, embedder, params)
    (johns,) = route.search("d", [question], 10, SearchFilters(speakers=["John"]))
    assert {h.id for h in johns} <= {"d1", "d3", "d5", "e1", "e3", "f1"}
    later = SearchFilters(since=DAY1 + timedelta(days=1))
    (after,) = route.search("d", [question], 10, later)
    assert [h.id for h in after] == ["f1"]


def test_filters_within_narrow_their_time_window() -> None:
    start, end = DAY1, DAY1 + timedelta(days=2)
    assert SearchFilters().within(start, end).since == start
    naive = SearchFilters(since=datetime(2023, 6, 4), speakers=["Maria"]).within(start, end)
    assert naive.since == datetime(2023, 6, 4, tzinfo=UTC)
    assert naive.until == end and naive.speakers == ["Maria"]
    wide = SearchFilters(until=datetime(2024, 1, 1, tzinfo=UTC)).within(start, end)
    assert wide.until == end


OPENING = [
    ("s1", "j1", "Jon", "The official opening night of my dance studio is tomorrow!"),
    ("s1", "g1", "Gina", "So soon! Are you nervous about it?"),
    ("s1", "j2", "Jon", "A bit, but I want to savor every second and soak up the good vibes."),
    ("s1", "g2", "Gina", "You deserve every bit of it."),
    ("s1", "j3", "Jon", "Thanks, talk soon."),
    ("s1", "g3", "Gina", "Bye!"),
    ("s1", "j4", "Jon", "My cousin is visiting next month."),
    ("s2", "g4", "Gina", "The opening of my store went well, the night was busy."),
    ("s2", "j5", "Jon", "Next spring I might repaint the kitchen."),
    ("s3", "g5", "Gina", "My plan for the night is a quiet dinner."),
]


@pytest.fixture
def opening_store(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[SQLiteStore]:
    turns = [{"id": i, "text": t, "speaker": s, "session": ss} for ss, i, s, t in OPENING]
    yield from _store(tmp_path / "opening.db", embedder, turns)


def _scores(
    store: SQLiteStore, embedder: MiniLMEmbedder, question: str, **knobs: object
) -> dict[str, float]:
    return {h.id: h.score for h in _hits(store, embedder, question, **knobs)}


def test_the_named_speakers_turns_around_the_best_candidate_are_raised(
    opening_store: SQLiteStore, embedder: MiniLMEmbedder
) -> None:
    question = "What does Jon plan to do at the opening night of his studio?"
    before = _scores(opening_store, embedder, question, thread_weight=0.0)
    after = _scores(opening_store, embedder, question, thread_weight=0.3, thread_window=3)
    wider = _scores(opening_store, embedder, question, thread_weight=0.3, thread_window=4)
    best = max(before, key=before.__getitem__)
    assert best == "j1"
    changed = {i for i in after if after[i] != pytest.approx(before.get(i, 0.0))}
    # Jon's turn within three of j1 (j2, two on); not Gina's between, not j3 four on,
    # not Jon's turns of other sessions; j1 gains as much, so it stays first
    assert changed == {"j1", "j2"}
    assert after["j2"] == pytest.approx(before["j2"] + 0.3 * before["j1"])
    assert after["j1"] == pytest.approx(1.3 * before["j1"])
    assert sorted(after, key=after.__getitem__, reverse=True)[:2] == ["j1", "j2"]
    assert wider["j3"] == pytest.approx(before["j3"] + 0.3 * before["j1"])
    # a question naming nobody raises nothing
    nobody = "What is planned for the opening night of the studio?"
    assert _scores(opening_store, embedder, nobody, thread_weight=0.3) == pytest.approx(
        _scores(opening_store, embedder, nobody, thread_weight=0.0)
    )


def test_a_thread_turn_joins_the_candidates_only_through_the_filters(
    opening_store: SQLiteStore, embedder: MiniLMEmbedder
) -> None:
    question = "What does Jon plan to do at the opening night of his studio?"
    # one candidate from each list: j2 is none of them and joins through j1
    few = {"candidates": 1, "thread_weight": 0.3, **OTHERS_OFF}
    route = EpisodeRoute(opening_store, embedder, DEFAULT_SYSTEM1.model_copy(update=few))
    (hits,) = route.search("d", [question], 10)
    joined = {h.id: h for h in hits}
    assert "j2" in joined and joined["j2"].routes == ["thread"]
    off = DEFAULT_SYSTEM1.model_copy(update={**few, "thread_weight": 0.0})
    (plain,) = EpisodeRoute(opening_store, embedder, off).search("d", [question], 10)
    assert "j2" not in {h.id for h in plain}
    # the thread around Gina's best turn is Jon's, whom the filter leaves out
    (ginas,) = route.search("d", [question], 10, SearchFilters(speakers=["Gina"]))
    assert ginas and {h.id for h in ginas} <= {"g1", "g2", "g3", "g4", "g5"}


RUNNING = [
    ("s1", "m1", "Mel", "Just got back from a long walk by the river this morning."),
    ("s1", "c1", "Caro", "Wow! What got you into it?"),
    ("s1", "m2", "Mel", "Running helps me de-stress and clear my head after work."),
    ("s1", "c2", "Caro", "Nice, keep it up."),
    ("s2", "c3", "Caro", "I painted a sunset over the lake."),
    ("s2", "m3", "Mel", "Beautiful colors!"),
]


@pytest.fixture
def running_store(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[SQLiteStore]:
    """The chat twice: between two people (namespace "d") and, the asker being the
    assistant, between a user and an assistant (namespace "a")."""
    roles = {"Mel": "user", "Caro": "assistant"}
    people = [{"id": i, "text": t, "speaker": s, "session": ss} for ss, i, s, t in RUNNING]
    assisted = [{**turn, "speaker": roles[turn["speaker"]]} for turn in people]
    yield from _store(tmp_path / "running.db", embedder, people, a=assisted)


ASK_ALONE = {"thread_weight": 0.0, **OTHERS_OFF}


def _ask_scores(
    store: SQLiteStore, embedder: MiniLMEmbedder, namespace: str, **knobs: object
) -> dict[str, float]:
    params = DEFAULT_SYSTEM1.model_copy(update={**ASK_ALONE, **knobs})
    question = "How does running help Mel?"
    (hits,) = EpisodeRoute(store, embedder, params).search(namespace, [question], 10)
    return {h.id: h.score for h in hits}


def test_the_question_the_best_candidate_answers_is_raised(
    running_store: SQLiteStore, embedder: MiniLMEmbedder
) -> None:
    before = _ask_scores(running_store, embedder, "d", ask_weight=0.0)
    after = _ask_scores(running_store, embedder, "d", ask_weight=0.3, ask_pool=1)
    assert max(before, key=before.__getitem__) == "m2"
    changed = {i for i in after if after[i] != pytest.approx(before.get(i, 0.0))}
    # Caro's question just before Mel's answer; nothing else, the answer included
    assert changed == {"c1"}
    # hit scores are rounded to six decimals
    assert after["c1"] == pytest.approx(before.get("c1", 0.0) + 0.3 * before["m2"], abs=2e-5)


def test_a_question_joins_the_candidates_only_through_the_filters(
    running_store: SQLiteStore, embedder: MiniLMEmbedder
) -> None:
    few = {"candidates": 1, "ask_weight": 0.3}
    hits = _ask_scores(running_store, embedder, "d", **few)
    assert "c1" in hits
    (joined,) = EpisodeRoute(
        running_store, embedder, DEFAULT_SYSTEM1.model_copy(update={**ASK_ALONE, **few})
    ).search("d", ["How does running help Mel?"], 10)
    assert next(h for h in joined if h.id == "c1").routes == ["asked"]
    assert "c1" not in _ask_scores(running_store, embedder, "d", candidates=1, ask_weight=0.0)
    only_mel = EpisodeRoute(
        running_store, embedder, DEFAULT_SYSTEM1.model_copy(update={**ASK_ALONE, **few})
    ).search("d", ["How does running help Mel?"], 10, SearchFilters(speakers=["Mel"]))
    assert {h.id for h in only_mel[0]} <= {"m1", "m2", "m3"}


def test_an_assistants_question_lends_nothing(
    running_store: SQLiteStore, embedder: MiniLMEmbedder
) -> None:
    before = _ask_scores(running_store, embedder, "a", ask_weight=0.0)
    after = _ask_scores(running_store, embedder, "a", ask_weight=0.3, ask_pool=3)
    assert max(before, key=before.__getitem__) == "m2"
    assert after == pytest.approx(before)
