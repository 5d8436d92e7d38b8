"""The shared chunker: token-bounded, sentence-aware, character spans of the original."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.retrieval.chunking import chunk_spans, chunks
from memstrata.retrieval.context import count_tokens


def test_a_short_text_is_one_span_over_all_of_it() -> None:
    assert chunk_spans("  Hello there. How are you?  ", 64) == [(0, 29)]
    assert chunk_spans("   ", 64) == [] and chunk_spans("", 64) == []


def test_long_text_is_cut_between_sentences_within_the_bound() -> None:
    text = " ".join(f"This is sentence {i} about the river and the hotel." for i in range(40))
    spans = chunk_spans(text, 50)
    assert len(spans) > 4
    for s, e in spans:
        assert count_tokens(text[s:e]) <= 50
        assert text[s:e].startswith("This") and text[s:e].endswith(".")
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_a_sentence_longer_than_the_bound_is_cut_between_words() -> None:
    text = "word " * 300 + "end."
    spans = chunk_spans(text, 40)
    assert len(spans) > 5 and all(count_tokens(text[s:e]) <= 40 for s, e in spans)
    assert "".join(chunks(text, 40)).replace(" ", "") == text.replace(" ", "")


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet="ab .!?\n", max_size=400), st.integers(min_value=1, max_value=30))
def test_chunks_cover_every_word_in_order(text: str, bound: int) -> None:
    spans = chunk_spans(text, bound, count=lambda t: len(t.split()))
    assert all(0 <= s < e <= len(text) for s, e in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    words = [w for s, e in spans for w in text[s:e].split()]
    assert "".join(words).replace(".", "").replace("!", "").replace("?", "") == "".join(
        text.split()
    ).replace(".", "").replace("!", "").replace("?", "")


def test_a_line_without_end_punctuation_is_a_sentence() -> None:
    from memstrata.retrieval.text import sentences

    text = "first line\nsecond. third\nlast"
    assert [text[s:e] for s, e in sentences(text)] == ["first line", "second.", "third", "last"]
    assert chunks("a\na", 1, count=lambda t: len(t.split())) == ["a", "a"]


def test_a_point_inside_a_word_or_number_does_not_end_a_sentence() -> None:
    from memstrata.retrieval.text import sentences

    text = 'It rose 0.4 points, e.g., on example.com. He said "fine." (Then left.) Done?! Yes'
    assert [text[s:e] for s, e in sentences(text)] == [
        "It rose 0.4 points, e.g., on example.com.",
        'He said "fine."',
        "(Then left.)",
        "Done?!",
        "Yes",
    ]
    # Runs of terminators of any length are one end, and only alphanumeric text counts.
    assert sentences("!?" * 50_000) == []
    assert [(s, e) for s, e in sentences("a" + "." * 50_000 + "b")] == [(0, 50_002)]
