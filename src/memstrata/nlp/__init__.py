"""What the LLM-free tier reads text with: one module for every design, the retrieval
layer and the engine (it imports none of them).

* :mod:`~memstrata.nlp.pipeline`: the parse (spaCy's small English pipeline, and its
  blank multilingual tokenizer for other scripts), loaded once, recent parses kept;
* :mod:`~memstrata.nlp.script`: words and sentences in any script (diacritics,
  apostrophes, hyphens; Chinese and Japanese cut by script, matched by bigrams);
* :mod:`~memstrata.nlp.names`: the names of a text (entities and proper nouns,
  possessives, determiners and greetings off);
* :mod:`~memstrata.nlp.clauses`: (subject, predicate lemma, object, negation, tense),
  "I" resolved to the speaker and "you" to the person addressed;
* :mod:`~memstrata.nlp.phrases`: keywords (content words: lemmas, or as written) and noun phrases.

docs/knowledge.md says what each language gets.
"""

from memstrata.nlp.clauses import Clause, clauses
from memstrata.nlp.names import GREETINGS, Name, name_key, names, names_of, stop_words
from memstrata.nlp.phrases import Phrase, keywords, noun_phrases
from memstrata.nlp.pipeline import (
    CACHE_SIZE,
    MODEL,
    analyse,
    is_english,
    multilingual,
    parse,
    pipeline,
)
from memstrata.nlp.script import (
    fold,
    is_cjk,
    is_latin,
    match_terms,
    ngrams,
    segments,
    sentences,
    word_spans,
    words,
)

__all__ = [
    "CACHE_SIZE",
    "GREETINGS",
    "MODEL",
    "Clause",
    "Name",
    "Phrase",
    "analyse",
    "clauses",
    "fold",
    "is_cjk",
    "is_english",
    "is_latin",
    "keywords",
    "match_terms",
    "multilingual",
    "name_key",
    "names",
    "names_of",
    "ngrams",
    "noun_phrases",
    "parse",
    "pipeline",
    "segments",
    "sentences",
    "stop_words",
    "word_spans",
    "words",
]
