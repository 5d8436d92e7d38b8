"""Links between two pieces of evidence: a name the best candidate mentions."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.embed import MiniLMEmbedder
from memstrata.memory import Memory
from memstrata.retrieval.system1.hops import cover_words, link_words, word_strengths
from memstrata.store import Store

ANCHOR = (
    "Leland is a town in North Carolina. Horror fans know that Maximum Overdrive was shot "
    "around Leland in 1986."
)
OTHERS = {
    "about": "Maximum Overdrive is a horror film directed by Stephen King. Overdrive flopped.",
    "once": (
        "A long review of the year's releases: comedies, dramas, westerns, thrillers, "
        "musicals and cartoons, with box office figures for each, the studios that made "
        "them, their stars and their critics, and a word on Overdrive among many others, "
        "then sequels, remakes, festivals, awards, trailers, posters and soundtracks."
    ),
    "common": "Horror films fill the cinema every Friday in town.",
    "year": "The 1986 season ended in a draw.",
    "asked": "Leland Stanford was a businessman.",
    "none": "Sourdough bread needs a long rise.",
}
FILLER = [f"Filler note number {i} about the weather in town." for i in range(20)]


@pytest.fixture
def store(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[Store]:
    texts = [ANCHOR, *OTHERS.values(), *FILLER]
    with Memory.open(tmp_path / "l.db", embedder=embedder) as memory:
        memory.add_many([{"id": str(i), "text": t} for i, t in enumerate(texts)], namespace="ns")
        yield memory.store


def strengths(store: Store, asked: set[str]) -> dict[str, float]:
    got = word_strengths(
        link_words(ANCHOR, asked), list(OTHERS.values()), lambda found: store.doc_freqs("ns", found)
    )
    return dict(zip(OTHERS, got, strict=True))


def test_the_text_about_the_named_thing_links_strongest(store: Store) -> None:
    s = strengths(store, asked={"leland", "north", "carolina", "film", "shot", "1986"})
    # "Overdrive" is written as a name in the anchor, and the first text is about it
    assert s["about"] == max(s.values()) > 0
    # a long text that names it once among many others is not about it
    assert 0 < s["once"] < s["about"]
    # "Horror" opens its sentence in the anchor: not a name, so no link
    assert s["common"] == 0
    # the question's own words ("1986", "Leland") and texts sharing nothing link nothing
    assert s["year"] == s["asked"] == s["none"] == 0
    assert all(0 <= v < 1 for v in s.values())


def test_a_number_is_a_link_when_the_question_does_not_name_it(store: Store) -> None:
    s = strengths(store, asked={"leland"})
    assert s["year"] > 0  # "1986" holds a digit
    assert s["asked"] == 0  # "Leland" is asked


def test_no_link_without_counts(store: Store) -> None:
    links = link_words(ANCHOR, set())
    empty = word_strengths(links, ["Maximum Overdrive"], lambda found: (0, {}))
    assert empty == [0.0]
    assert word_strengths(links, [], lambda found: (10, {})) == []


def test_cover_words_are_the_asked_names_the_anchor_leaves_out() -> None:
    question = "Which singer is American, Mark King or Nick Hexum?"
    anchor = "Nick Hexum is an American singer and guitarist of the band 311."
    assert cover_words(question, anchor, speakers=set()) == {"mark", "king"}
    # a speaker's name is left to the speaker match
    assert cover_words(question, anchor, speakers={"mark"}) == {"king"}
    # the anchor holds every name: nothing left to cover
    both = anchor + " Mark King plays bass."
    assert cover_words(question, both, speakers=set()) == set()


def test_no_cover_when_the_anchor_holds_none_of_the_names() -> None:
    # the names did not find the anchor (a nickname, a name said only in greetings):
    # raising the texts that hold them would follow the wrong thread
    question = "What countries has Kate visited?"
    assert cover_words(question, "I flew to Lisbon and then Rome.", speakers=set()) == set()


def test_cover_strength_follows_the_uncovered_name(store: Store) -> None:
    # "Stanford" is the name the anchor leaves out of "Leland Stanford's horror film"
    question = "Did Leland Stanford shoot Maximum Overdrive?"
    found = cover_words(question, ANCHOR, speakers=set())
    assert found == {"stanford"}
    got = dict(
        zip(
            OTHERS,
            word_strengths(found, list(OTHERS.values()), lambda ws: store.doc_freqs("ns", ws)),
            strict=True,
        )
    )
    assert got["asked"] > 0 and all(v == 0 for k, v in got.items() if k != "asked")
