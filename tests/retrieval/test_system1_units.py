import math
import random
from datetime import UTC, datetime

from memstrata.retrieval.rank_fusion import rrf
from memstrata.retrieval.system1 import (
    System1Params,
    parse_period,
    plan_query,
)
from memstrata.retrieval.system1.sessions import asks, in_session
from memstrata.retrieval.text import at_most_content_words, content_terms, content_words
from memstrata.store.base import EpisodeMeta


def test_rrf_sums_reciprocal_ranks() -> None:
    scores = rrf([["a", "b"], ["b", "c"]], k=60)
    assert scores["b"] == 1 / 62 + 1 / 61
    assert max(scores, key=scores.__getitem__) == "b"
    weighted = rrf([["a"], ["b"]], k=1, weights=[2.0, 1.0])
    assert weighted == {"a": 1.0, "b": 0.5}


def test_content_terms_drop_stopwords_and_possessives() -> None:
    assert content_terms("What did Caroline's dog eat at the park?") == [
        "caroline",
        "dog",
        "eat",
        "park",
    ]
    assert content_terms("the of and") == []


def test_at_most_content_words_agrees_with_counting_them() -> None:
    texts = [
        "",
        "Hey!",
        "What about you Kate?",
        "Kate's dog's bed, 2 x 4",
        "I’m fine, thanks a lot",
        "We drove from Lisbon to Porto in May and camped by the river " * 20,
    ]
    for text in texts:
        for n in range(6):
            assert at_most_content_words(text, n) == (len(content_words(text)) <= n), (text, n)
    assert at_most_content_words("What about you Kate?", 1)
    assert not at_most_content_words("We drove from Lisbon to Porto", 2)


def test_plan_query_finds_speakers_and_drops_their_names() -> None:
    params = System1Params(drop_speaker_terms=True)
    plan = plan_query("What did Melanie paint?", ["Caroline", "Melanie"], params)
    assert plan.speakers == ["Melanie"]
    assert plan.terms == ["paint"]
    # a question that is only a name keeps it, otherwise BM25 would have nothing
    assert plan_query("Melanie?", ["Melanie"], params).terms == ["melanie"]
    # without the option names stay
    assert "melanie" in plan_query("What did Melanie paint?", ["Melanie"], System1Params()).terms


def test_plan_query_reads_a_speakers_other_name() -> None:
    params = System1Params(drop_speaker_terms=True)
    aliases = {"kate": "Emi"}
    plan = plan_query("What did Kate's class cook?", ["Emi", "elise"], params, aliases)
    assert plan.speakers == ["Emi"] and plan.alias_words == ["kate"]
    assert plan.terms == ["class", "cook"]
    # the label and the other name together name the speaker once
    assert plan_query("Did Emi (Kate) cook?", ["Emi", "elise"], params, aliases).speakers == ["Emi"]
    assert plan_query("What did Elise cook?", ["Emi", "elise"], params, aliases).alias_words == []


def test_plan_query_drops_words_about_the_conversation_itself() -> None:
    params = System1Params(drop_meta_terms=True)
    question = "Can you summarize how my budget tracker evolved across our conversations?"
    assert plan_query(question, [], params).terms == ["budget", "tracker", "evolved"]
    # a question made only of such words keeps them
    assert plan_query("What did we discuss?", [], params).terms == ["discuss"]
    assert "conversations" in plan_query(question, [], System1Params()).terms


def test_plan_query_drops_the_words_of_the_present() -> None:
    """ "Where does Jonas live now?": "now" says when, not what; matched, it raises every
    turn that also says "now" (the issue's current turn fell to rank 6)."""
    params = System1Params(drop_meta_terms=True)
    assert plan_query("Where does Jonas live now?", [], params).terms == ["jonas", "live"]
    assert plan_query("What car does Kwame drive these days?", [], params).terms == [
        "car",
        "kwame",
        "drive",
    ]
    assert plan_query("Is Ayşe currently in Kadıköy?", [], params).terms == ["ayşe", "kadıköy"]
    assert plan_query("What happened now?", [], params).terms == ["happened"]
    assert plan_query("Now?", [], params).terms == ["now"]  # nothing else to search for


def test_parse_period() -> None:
    start, end = parse_period("What happened in May 2023?") or (0, 0)
    assert datetime.fromtimestamp(start, UTC) == datetime(2023, 5, 1, tzinfo=UTC)
    assert datetime.fromtimestamp(end, UTC) == datetime(2023, 6, 1, tzinfo=UTC)
    year = parse_period("plans for 2022") or (0, 0)
    assert datetime.fromtimestamp(year[1], UTC) == datetime(2023, 1, 1, tzinfo=UTC)
    dec = parse_period("december 2021") or (0, 0)
    assert datetime.fromtimestamp(dec[1], UTC) == datetime(2022, 1, 1, tzinfo=UTC)
    assert parse_period("no dates here") is None


def _meta(*rows: tuple[int, str | None, int]) -> dict[int, EpisodeMeta]:
    return {key: EpisodeMeta(key, session, seq, None, None) for key, session, seq in rows}


def test_in_session_sums_the_lexical_evidence_around_a_turn() -> None:
    # 2 shares no word with the question but sits between two turns that do.
    meta = _meta(
        (1, "s1", 1), (2, "s1", 2), (3, "s1", 3), (4, "s2", 2), (5, "s1", 30), (6, None, 2)
    )
    bm25 = [(1, 2.0), (3, 1.5), (4, 3.0), (6, 9.0)]
    # one turn either side: 2 holds 2.0 + 1.5 around it, more than any turn alone
    assert in_session(bm25, meta, window=1) == [(2, 1), (4, 2), (1, 3), (3, 4)]
    # ten either side: 1, 2 and 3 each see all of s1's evidence and share the first
    # rank (their order in the store decides nothing); 5, 27 turns away, sees none
    assert in_session(bm25, meta, window=10) == [(1, 1), (2, 1), (3, 1), (4, 4)]
    assert in_session(bm25, meta, window=0) == [(4, 1), (1, 2), (3, 3)]  # alone: each its own score
    # 6 belongs to no session (a document's passage): it has no surroundings to add, and
    # its own BM25 rank is already in the fusion, so it is never ranked here


def test_in_session_matches_its_definition_on_random_chats() -> None:
    """Each turn's sum is its own BM25 score and those of the candidates of its session
    within ``window`` places of it, summed here the plain way."""
    rng = random.Random(7)
    for _ in range(200):
        rows = [(key, rng.choice(["a", "b", None]), rng.randrange(40)) for key in range(1, 60)]
        meta = _meta(*rows)
        bm25 = [(key, rng.choice([0.5, 1.0, 1.25, 2.0])) for key in rng.sample(range(1, 60), 20)]
        window = rng.choice([0, 1, 3, 10])
        lexical = dict(bm25)
        want: dict[int, float] = {}
        for key, m in meta.items():
            if m.session is None:
                continue
            total = sum(
                lexical.get(o.key, 0.0)
                for o in meta.values()
                if o.session == m.session and abs(o.seq - m.seq) <= window
            )
            if total > 0:
                want[key] = total
        got = in_session(bm25, meta, window)
        assert {key for key, _ in got} == set(want)
        ranks = dict(got)
        for a in want:  # a higher sum never ranks below a lower one; equal sums share a rank
            for b in want:
                if math.isclose(want[a], want[b], rel_tol=1e-9):
                    assert ranks[a] == ranks[b]
                elif want[a] > want[b]:
                    assert ranks[a] < ranks[b]


def test_a_turn_asks_when_its_last_sentence_is_a_question() -> None:
    assert asks("Congratulations! What are your plans for the summer?")
    assert asks("How was it? 😊")
    assert not asks("What a day? No, what a week.")
    assert not asks("")
