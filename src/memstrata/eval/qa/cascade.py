"""MindGraph's deterministic scoring cascade (appendix D.4), tried before its LLM judge.

A free-text answer is correct, without a judge call, when one of these holds, in order:

1. **exact match**: prediction and gold are equal once normalised (case, punctuation,
   articles and spacing: the normalisation of :mod:`.metrics_answer`);
2. **normalised number**: the gold is a number (digits or a number word up to twenty,
   with thousands separators, a sign or a decimal point) and the prediction states the
   same value;
3. **containment**: the normalised gold occurs in the normalised prediction, on word
   boundaries;
4. **first-sentence containment**: the gold's first sentence, normalised, occurs in the
   prediction (a long gold whose first sentence is the answer);
5. **key-phrase token F1 >= 0.5**: token F1 over content words (stopwords removed,
   Porter stems) of at least 0.5.

The paper names the five steps and the 0.5 bound; how each compares is not given, so the
readings above are ours. Only answers that fail all five go to the judge.
"""

from __future__ import annotations

import re

from memstrata.eval.qa.metrics_answer import normalize, token_f1
from memstrata.retrieval.text import content_terms, sentences, stem

KEY_PHRASE_F1 = 0.5

_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
).split()
_WORD_VALUE = {w: float(i) for i, w in enumerate(_WORDS)}


def _values(text: str) -> list[float]:
    """The numbers a text states, as values: digits (1,200 or 3.5) and number words."""
    out = []
    for m in _NUMBER.finditer(text):
        try:
            out.append(float(m.group().replace(",", "")))
        except ValueError:
            continue
    out += [_WORD_VALUE[w] for w in re.findall(r"[a-z]+", text.lower()) if w in _WORD_VALUE]
    return out


def _gold_number(gold: str) -> float | None:
    """The gold's value when the gold is a number and nothing else (units aside)."""
    text = gold.strip().rstrip(".").lower()
    digits = _NUMBER.fullmatch(text.split()[0]) if text.split() else None
    if digits and len(text.split()) <= 2:
        return float(digits.group().replace(",", ""))
    if text in _WORD_VALUE:
        return _WORD_VALUE[text]
    return None


def _contains(haystack: str, needle: str) -> bool:
    return bool(needle) and f" {needle} " in f" {haystack} "


def _key_f1(predicted: str, gold: str) -> float:
    return token_f1(
        [stem(t) for t in content_terms(predicted)], [stem(t) for t in content_terms(gold)]
    )


def cascade(gold: str, predicted: str) -> str | None:
    """The first rule of the cascade that accepts ``predicted``, or None (the judge
    decides)."""
    g, p = normalize(gold), normalize(predicted)
    if not g or not p:
        return None
    if g == p:
        return "exact_match"
    value = _gold_number(gold)
    if value is not None and value in _values(predicted):
        return "normalised_number"
    if _contains(p, g):
        return "containment"
    spans = sentences(gold)
    if len(spans) > 1:
        first = normalize(gold[spans[0][0] : spans[0][1]])
        if _contains(p, first):
            return "first_sentence_containment"
    if _key_f1(predicted, gold) >= KEY_PHRASE_F1:
        return "key_phrase_f1"
    return None
