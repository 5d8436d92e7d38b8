"""Token budgets of retrieval/context.py: shortening a list of texts to a room."""

from __future__ import annotations

from memstrata.retrieval.context import count_tokens, shorten_longest


def test_texts_that_fit_stay_whole_and_only_the_longest_are_cut() -> None:
    short = ["Maya flies to Lisbon.", "Tom repaired the fence."]
    long = [" ".join(f"word{i}" for i in range(n)) for n in (300, 500)]
    texts = short + long
    total = sum(count_tokens(t) for t in texts)
    assert shorten_longest(texts, total) == texts
    room = total // 3
    cut = shorten_longest(texts, room)
    assert cut[:2] == short and all(t.endswith("…") for t in cut[2:])
    assert sum(count_tokens(t) for t in cut) <= room
    # one common length, as long as the room allows
    sizes = [count_tokens(t) for t in cut[2:]]
    assert max(sizes) - min(sizes) <= 1
    assert sum(count_tokens(t) for t in short) + 2 * (max(sizes) + 2) > room
