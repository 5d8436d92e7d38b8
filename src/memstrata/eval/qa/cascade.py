"""MindGraph's deterministic scoring cascade (appendix D.4), tried before its LLM judge.

A free-text answer is correct, without a judge call, when one of these holds, in order:

1. **exact match**: prediction and gold are equal once normalised (case, punctuation,
   articles and spacing: the normalisation of :mod:`.metrics_answer`);
2. **normalised number**: the gold is a number (digits or a number word up to twenty,
   with thousands separators, a sign or a decimal point) and the prediction states the
   same value;
3. **containment**: the normalised gold occurs in the normalised prediction, on word
   boundaries, and not only denied ("not Lisbon", "never moved to Lisbon": a negation
   among the three words before it in its clause; such an answer goes to the judge);
4. **first-sentence containment**: the gold's first sentence, normalised, occurs in the
   prediction (a long gold whose first sentence is the answer), under the same
   condition;
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


#: words that deny what follows them in their clause ("not Lisbon", "never in Lisbon",
#: "isn't Lisbon"), as :func:`normalize` leaves them (apostrophes dropped)
NEGATIONS = frozenset(
    "not no never neither nor without cannot isnt arent wasnt werent dont doesnt didnt "
    "cant wont couldnt shouldnt wouldnt hasnt havent hadnt aint".split()
)
#: words before a mention in which a negation denies it
NEGATION_REACH = 3
_CLAUSE = re.compile(r"[,.;:!?()\[\]\u2013\u2014]+|\s-\s")


def _affirmed(predicted: str, needle: str) -> bool:
    """Whether the normalised ``needle`` occurs in ``predicted`` at least once with no
    negation among the :data:`NEGATION_REACH` words before it in its clause: "not Lisbon"
    and "she never moved to Lisbon" do not state Lisbon; "No, it was Lisbon" does (the
    "no" is in another clause). A needle that is itself a negation is compared as is."""
    words: list[str] = []
    clause: list[int] = []
    for n, part in enumerate(_CLAUSE.split(predicted)):
        for w in normalize(part).split():
            words.append(w)
            clause.append(n)
    want = needle.split()
    if not want:
        return False
    for i in range(len(words) - len(want) + 1):
        if words[i : i + len(want)] != want:
            continue
        before = range(max(0, i - NEGATION_REACH), i)
        if not any(words[j] in NEGATIONS and clause[j] == clause[i] for j in before):
            return True
    return False


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
        # a gold named only where it is denied is for the judge, not for a looser rule
        return "containment" if _affirmed(predicted, g) else None
    spans = sentences(gold)
    if len(spans) > 1:
        first = normalize(gold[spans[0][0] : spans[0][1]])
        if _contains(p, first) and _affirmed(predicted, first):
            return "first_sentence_containment"
    if _key_f1(predicted, gold) >= KEY_PHRASE_F1:
        return "key_phrase_f1"
    return None
