"""Names in every script, read whole: diacritics, possessives, hyphens, Chinese and
Japanese (issue 59, item 1), and the words text is matched on."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.designs.multilingual import ALL_NAMES, FRAGMENTS, FRAMES, NAMES, SAID, typed

from memstrata import nlp
from memstrata.retrieval.text import content_terms


def test_the_table_spans_ten_scripts_and_languages() -> None:
    assert len(NAMES) >= 10
    scripts = {unicodedata.name(n[0]).split()[0] for n in ALL_NAMES}
    assert scripts >= {"LATIN", "GREEK", "CYRILLIC", "ARABIC", "HEBREW", "DEVANAGARI"}
    assert scripts >= {"CJK", "HANGUL", "THAI"}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(ALL_NAMES), st.sampled_from(FRAMES))
def test_a_name_in_any_script_is_found_exactly(name: str, frame: str) -> None:
    """Whatever its script, a name in an English sentence is one name, as written
    (possessive off), and no fragment of it is another."""
    text = frame.format(n=name)
    found = [n.text for n in nlp.names(text)]
    assert name in found, (text, found)
    assert not {nlp.fold(f) for f in found} & FRAGMENTS
    assert nlp.name_key(typed(name)) == nlp.name_key(name) == nlp.name_key(f"{name}'s")


def test_the_issues_sentences_and_other_scripts_give_their_names() -> None:
    for text, want in SAID.items():
        found = [n.text for n in nlp.names(text)]
        assert found == list(want), (text, found)


def test_words_keep_diacritics_and_cjk_is_matched_by_bigrams() -> None:
    """The words every design and System-1 match on: a decomposed "Zürich" is one word,
    "Evan's" is Evan, and "東京" is found in a Japanese sentence that has no spaces."""
    assert content_terms(typed("Zürich") + " and Evan's car") == ["zürich", "evan", "car"]
    assert "東京" in content_terms("田中さんは東京に住んでいます。")
    assert "北京" in content_terms("我住在北京")
    assert nlp.match_terms("北京") <= nlp.match_terms("我住在北京")
    assert content_terms("Plan B for the second-hand van") == ["plan", "second", "hand", "van"]


def test_a_connector_outside_the_entity_splits_it() -> None:
    """The small model labels "Polo on the Rheinkniebrücke" one place; "on" hangs on the
    verb, so these are two names. "of" in "Bank of America" hangs inside and joins."""
    text = "I sat in my Polo on the Rheinkniebrücke for 40 minutes, near the Bank of America."
    assert [n.text for n in nlp.names(text)] == ["Polo", "Rheinkniebrücke", "Bank of America"]


def test_turkish_dotless_i_in_capitals_is_the_same_name() -> None:
    """Upper-cased, "ı" is "I": a user typing "KADIKÖY" means Kadıköy."""
    for name in ("Kadıköy", "Karşıyaka", "İzmir", "İstanbul"):
        assert nlp.name_key(name.upper()) == nlp.name_key(name)


def test_a_name_keeps_its_lower_case_part_and_ends_with_its_script() -> None:
    text = "Chiang Kai-shek, a Zürich-based firm, and Ancient Greek πτερον for wing."
    assert [n.text for n in nlp.names(text)] == [
        "Chiang Kai-shek",
        "Zürich",
        "Ancient Greek",
        "πτερον",
    ]
