"""The shared parse: the real pipeline, loaded once, with lemmas, dependencies and named
entities, names with diacritics kept whole, and recent parses reused."""

from __future__ import annotations

from memstrata import nlp


def test_a_parse_keeps_letters_and_reads_roles() -> None:
    (doc,) = nlp.parse(["Łukasz works at Škoda in Mladá Boleslav."])
    assert [t.text for t in doc][:4] == ["Łukasz", "works", "at", "Škoda"]
    works = doc[1]
    assert works.lemma_ == "work" and works.dep_ == "ROOT"
    assert doc[0].dep_ == "nsubj" and doc[0].head.i == works.i
    assert "Škoda" in {e.text for e in doc.ents}


def test_texts_parsed_recently_are_not_parsed_again() -> None:
    text = "Zoë moved to Zürich in May."
    first = nlp.parse([text])[0]
    again = nlp.parse(["Another line.", text])
    assert again[1] is first and nlp.pipeline() is nlp.pipeline()


def test_typographic_apostrophes_read_as_plain_ones() -> None:
    """ "that’s" and "I’ll" parse as "that's" and "I'll" do, and every offset still points
    into the text as written."""
    text = "That’s the best. I’ll move to Zürich, it isn’t cheap."
    (doc,) = nlp.parse([text])
    assert [t.lemma_ for t in doc if t.text in ("'s", "'ll", "n't")] == ["be", "will", "not"]
    assert all(text[t.idx : t.idx + len(t)] == t.text.replace("'", "’") for t in doc)
