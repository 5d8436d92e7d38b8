"""Metrics against examples computed by hand."""

from __future__ import annotations

import math

import pytest

from memstrata.eval.qa import metrics_answer as ma
from memstrata.eval.qa import metrics_retrieval as mr


# LoCoMo scoring -------------------------------------------------------------------------
def test_normalisation_drops_commas_punctuation_articles_and_and() -> None:
    assert ma.normalize("The cat, a dog and AN owl!") == "cat dog owl"


def test_porter_stemming_makes_inflections_match() -> None:
    # "running" -> "run", "dogs" -> "dog": every token matches.
    assert ma.f1("running dogs", "run dog") == 1.0


def test_f1_partial_overlap() -> None:
    # pred tokens {went, to, pari}, gold {pari}: P = 1/3, R = 1, F1 = 0.5
    assert ma.f1("went to Paris", "Paris") == pytest.approx(0.5)
    assert ma.f1("nothing alike", "Paris") == 0.0


def test_multi_hop_splits_at_commas_and_averages_gold_parts() -> None:
    # gold parts: "hiking" (best 1.0 against "hiking"), "pottery classes" (best F1 vs
    # "painting": 0; vs "hiking": 0) -> mean 0.5. Plain F1 would compare the whole strings.
    assert ma.multi_hop_f1("hiking, painting", "hiking, pottery classes") == pytest.approx(0.5)
    assert ma.locomo_f1("painting, hiking", "hiking, painting", "multi-hop", False) == 1.0
    # plain F1 of the same pair: tokens {hike, paint} vs {hike, potteri, class}: 2PR/(P+R)
    p, r = 1 / 2, 1 / 3
    assert ma.f1("hiking, painting", "hiking, pottery classes") == pytest.approx(
        2 * p * r / (p + r)
    )


def test_open_domain_scores_only_the_first_alternative() -> None:
    assert ma.locomo_f1("Likely yes", "Likely yes; she likes it", "open-domain", False) == 1.0
    assert ma.locomo_f1("Likely yes", "Likely yes; she likes it", "single-hop", False) < 1.0


def test_adversarial_rule() -> None:
    assert ma.locomo_f1("That is not mentioned.", None, "adversarial", True) == 1.0
    assert ma.locomo_f1("No information available", None, "adversarial", True) == 1.0
    assert ma.locomo_f1("She bought a glaze", None, "adversarial", True) == 0.0
    # an abstention (NO_ANSWER) reads as "not mentioned"
    s = ma.scores("NO_ANSWER", True, None, "adversarial", True)
    assert s == {"f1": 1.0, "abstention": 1.0}
    s = ma.scores("a glaze", False, None, "adversarial", True)
    assert s == {"f1": 0.0, "abstention": 0.0}


def test_bleu1_clipped_precision_and_brevity_penalty() -> None:
    # pred "cat cat" vs gold "cat sat mat": clipped matches 1, precision 1/2,
    # brevity: len 2 < 3 -> exp(1 - 3/2)
    assert ma.bleu1("cat cat", "cat sat mat") == pytest.approx(0.5 * math.exp(1 - 3 / 2))
    # longer prediction: no penalty; 1 of 4 tokens matches
    assert ma.bleu1("the cat sat on a mat yesterday", "cat") == pytest.approx(1 / 5)


def test_exact_match_ignores_case_and_punctuation_only() -> None:
    assert ma.exact_match("Paris.", "paris") == 1.0
    assert ma.exact_match("  Paris,  France ", "paris france") == 1.0
    assert ma.exact_match("Paris", "Paris France") == 0.0


def test_scores_of_an_answered_question() -> None:
    s = ma.scores("7 May 2023", False, "7 May 2023", "temporal", False)
    assert s == {
        "f1": 1.0,
        "bleu1": 1.0,
        "exact_match": 1.0,
        "rouge_l_recall": 1.0,
        "false_abstention": 0.0,
    }
    s = ma.scores("NO_ANSWER", True, "7 May 2023", "temporal", False)
    assert s["f1"] == 0.0 and s["false_abstention"] == 1.0


# retrieval ------------------------------------------------------------------------------
def test_recall_any_against_recall_all() -> None:
    ranked = ["a", "x", "b", "y", "c"]
    gold = ["a", "c"]
    assert mr.recall_any(ranked, gold, 1) == 1.0
    assert mr.recall_all(ranked, gold, 1) == 0.0
    assert mr.recall_all(ranked, gold, 4) == 0.0
    assert mr.recall_all(ranked, gold, 5) == 1.0
    assert mr.recall_any(["x", "y"], gold, 2) == 0.0


def test_ndcg_with_several_relevant_items() -> None:
    # LongMemEval's DCG: rank 1 weighs 1, rank r >= 2 weighs 1 / log2(r).
    ranked = ["x", "a", "y", "b"]
    gold = ["a", "b", "c"]
    dcg = 1 / math.log2(2) + 1 / math.log2(4)  # ranks 2 and 4
    ideal = 1 + 1 / math.log2(2) + 1 / math.log2(3)  # three relevant items at ranks 1..3
    assert mr.ndcg(ranked, gold, 4) == pytest.approx(dcg / ideal)
    # k below the number of relevant items: the ideal has k ones
    assert mr.ndcg(["a", "b"], gold, 2) == pytest.approx(1.0)
    assert mr.ndcg(["x", "a"], gold, 2) == pytest.approx(1 / 2)
    assert mr.ndcg(["x"], [], 5) == 0.0


def test_sessions_in_order_of_first_appearance() -> None:
    session_of = {"s1:0": "s1", "s1:1": "s1", "s2:0": "s2", "s3:4": "s3"}
    assert mr.to_sessions(["s2:0", "s1:1", "s2:0", "s1:0", "s3:4"], session_of) == [
        "s2",
        "s1",
        "s3",
    ]


def test_question_metrics_by_hand() -> None:
    ranked = ["t3", "t9", "t1", "t7"]
    evset = ["t3", "t9"]
    gold = ["t1", "t3"]
    session_of = {"t1": "A", "t3": "A", "t7": "B", "t9": "C"}
    m = mr.question_metrics(ranked, evset, gold, ["A"], session_of, ks=(1, 3))
    assert m["recall@1"] == 0.5 and m["precision@1"] == 1.0
    assert m["recall@3"] == 1.0 and m["precision@3"] == pytest.approx(2 / 3)
    assert (m["evidence_k"], m["evidence_p"], m["evidence_r"]) == (2.0, 0.5, 0.5)
    assert m["turn_recall_any@5"] == 1.0 and m["turn_recall_all@5"] == 1.0
    assert m["session_recall_all@5"] == 1.0 and m["session_ndcg@5"] == 1.0
    # no evidence: nothing to measure
    assert mr.question_metrics(ranked, evset, [], [], {}, ks=(1,)) == {}


def test_evidence_set_of_an_empty_result() -> None:
    assert mr.evidence_set([], ["a"]) == {"size": 0.0, "precision": 0.0, "recall": 0.0}


def test_latency_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    lat = mr.latency(values)
    assert lat["p50"] in (50.0, 51.0) and lat["p95"] in (95.0, 96.0)
