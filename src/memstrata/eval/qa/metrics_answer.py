"""Answer scores: LoCoMo's official F1, BLEU-1 on the same tokens, exact match, abstention.

LoCoMo's scoring (its ``task_eval/evaluation.py``), reproduced:

* normalisation: commas dropped, lower case, punctuation removed, the words ``a``, ``an``,
  ``the`` and ``and`` removed, whitespace collapsed; every token Porter-stemmed (NLTK's
  stemmer, as the official script);
* multi-hop: prediction and gold are split at commas; each gold part takes its best F1
  against any predicted part, and the parts are averaged;
* open-domain: only the gold answer's first ``;`` alternative counts;
* adversarial (``abstain``): 1 when the reply says "not mentioned" or "no information
  available", else 0. An answer that abstained (``abstained``) counts as "not mentioned".

BLEU-1 is the clipped unigram precision times the brevity penalty, on the normalised and
stemmed tokens. Exact match ignores case, punctuation and spacing only. ROUGE-L recall
(MemTree's metric) is the longest common token subsequence over the gold's length.

Knowledge-update data adds ``current_answer`` for a question whose gold answer is a value
that replaced another (``stale_answer``): 1 when the answer holds the current value and
does not give the stale one as the answer, that is, the stale value is absent or comes
only after the current one (an answer may say what the value replaced: "Cardiff, since
May 2024; before that Bristol"). A value is held when its words appear in a row in the
answer, case and thousands separators aside, diacritics kept ("Zürich" is not "Zurich").
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from functools import lru_cache

from nltk.stem import PorterStemmer

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_STEMMER = PorterStemmer()
ABSTAIN_PHRASES = ("no information available", "not mentioned")


def normalize(text: str) -> str:
    text = text.replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stem(word)


def tokens(text: str) -> list[str]:
    return [_stem(w) for w in normalize(text).split()]


def f1(prediction: str, gold: str) -> float:
    return token_f1(tokens(prediction), tokens(gold))


def token_f1(pred: list[str], ref: list[str]) -> float:
    """F1 of two token lists by their multiset overlap."""
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_hop_f1(prediction: str, gold: str) -> float:
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(f1(p, g) for p in preds) for g in golds) / len(golds)


def says_not_mentioned(prediction: str) -> bool:
    low = prediction.lower()
    return any(phrase in low for phrase in ABSTAIN_PHRASES)


def locomo_f1(prediction: str, gold: str | None, category: str, abstain: bool) -> float | None:
    """The official per-question score; None when there is no gold answer to score."""
    if abstain:
        return 1.0 if says_not_mentioned(prediction) else 0.0
    if gold is None:
        return None
    if category == "open-domain":
        gold = gold.split(";")[0].strip()
    if category == "multi-hop":
        return multi_hop_f1(prediction, gold)
    return f1(prediction, gold)


def bleu1(prediction: str, gold: str) -> float:
    pred, ref = tokens(prediction), tokens(gold)
    if not pred or not ref:
        return 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    precision = clipped / len(pred)
    brevity = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return precision * brevity


def rouge_l_recall(prediction: str, gold: str) -> float:
    """ROUGE-L recall (MemTree's second metric, section 4): the longest common
    subsequence of the two token lists over the gold's length, on the normalised tokens
    without stemming (as the ``rouge-score`` package scores by default)."""
    pred, ref = normalize(prediction).split(), normalize(gold).split()
    if not pred or not ref:
        return 0.0
    row = [0] * (len(pred) + 1)
    for r in ref:
        prev = 0
        for j, p in enumerate(pred, start=1):
            keep = row[j]
            row[j] = prev + 1 if r == p else max(row[j], row[j - 1])
            prev = keep
    return row[-1] / len(ref)


def exact_match(prediction: str, gold: str) -> float:
    def norm(s: str) -> str:
        return " ".join(s.lower().translate(_PUNCT).split())

    return float(norm(prediction) == norm(gold))


_WORD = re.compile(r"\w+")
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0'](?=\d{3}\b)")


def value_words(text: str) -> list[str]:
    """The words of ``text`` as :func:`holds` compares them: NFC, case folded, digit
    groups joined ("2,250" is "2250"), punctuation dropped, diacritics kept."""
    text = _THOUSANDS.sub("", unicodedata.normalize("NFC", text))
    return [w.casefold() for w in _WORD.findall(text)]


def first_position(answer: list[str], value: str) -> int | None:
    """Where the words of ``value`` first appear in a row in ``answer``; None if not."""
    words = value_words(value)
    if not words:
        return None
    for i in range(len(answer) - len(words) + 1):
        if answer[i : i + len(words)] == words:
            return i
    return None


def current_answer(prediction: str, abstained: bool, current: str, stale: str) -> float:
    """1.0 when the answer holds ``current`` and gives ``stale`` only after it (or not)."""
    if abstained:
        return 0.0
    words = value_words(prediction)
    now, old = first_position(words, current), first_position(words, stale)
    return float(now is not None and (old is None or old > now))


def scores(
    prediction: str,
    abstained: bool,
    gold: str | None,
    category: str,
    abstain: bool,
    stale: str | None = None,
) -> dict[str, float]:
    """Every string score of one answer. An abstention reads as "not mentioned";
    ``stale``: the value the gold one replaced (knowledge-update data)."""
    text = "Not mentioned in the conversation." if abstained else prediction
    out: dict[str, float] = {}
    score = locomo_f1(text, gold, category, abstain)
    if score is not None:
        out["f1"] = score
    if abstain:
        out["abstention"] = 1.0 if (abstained or says_not_mentioned(prediction)) else 0.0
    elif gold is not None:
        out["bleu1"] = bleu1(text, gold)
        out["exact_match"] = exact_match(text, gold)
        out["rouge_l_recall"] = rouge_l_recall(text, gold)
        out["false_abstention"] = float(abstained)
        if stale is not None:
            out["current_answer"] = current_answer(prediction, abstained, gold, stale)
    return out
