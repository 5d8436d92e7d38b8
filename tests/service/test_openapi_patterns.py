"""The patterns of the OpenAPI document say what the core's own checks say of every
string: the namespace rule, an episode id, and text that must say something (a query, a
question, an episode's text). A client that follows the document is never refused."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memstrata.config import Config
from memstrata.errors import InvalidInputError
from memstrata.ingest import ID_PATTERN, prepare_episode
from memstrata.service.app import SAYS
from memstrata.store.names import NAMESPACE_PATTERN, check_namespace

# every code point class that matters here: controls (C0, DEL, C1), the separators
# str.strip takes, Unicode spaces, surrogates, and ordinary letters of several scripts
EDGES = st.sampled_from(
    [
        "\x00",
        "\t",
        "\n",
        "\x1c",
        "\x1f",
        " ",
        "\x7f",
        "\x85",
        "\x9f",
        "\xa0",
        "\u2003",
        "\u3000",
        "\ud800",
        "a",
        "Z",
        "/",
        "%",
        "é",
        "ß",
        "Ж",
        "東",
        "🙂",
    ]
)
# what can reach the service: text that UTF-8 can carry (a lone surrogate cannot)
TEXTS = (
    st.lists(st.one_of(EDGES, st.characters(blacklist_categories=("Cs",))), max_size=6)
    .map("".join)
    .filter(lambda t: "\ud800" not in t)
)


def _accepted(name: str) -> bool:
    try:
        check_namespace(name)
    except InvalidInputError:
        return False
    return True


@settings(max_examples=600, deadline=None)
@given(TEXTS)
@example("")
@example(" \x1c ")
@example("acme/prod")
def test_the_pattern_is_the_namespace_rule(name: str) -> None:
    # JSON Schema reads "$" as the very end; Python's "$" also matches before a final "\n"
    body = NAMESPACE_PATTERN.removeprefix("^").removesuffix("$")
    matched = re.fullmatch(body, name) is not None
    assert matched == _accepted(name), repr(name)


@settings(max_examples=600, deadline=None)
@given(TEXTS)
@example("\x1c\x1d")
@example("\u2003")
def test_says_something_is_the_cores_empty_check(text: str) -> None:
    assert (re.search(SAYS, text) is not None) == bool(text.strip()), repr(text)


@settings(max_examples=600, deadline=None)
@given(TEXTS)
@example("\x85")
@example("a\x7f")
def test_the_id_pattern_is_the_id_rule(id: str) -> None:
    body = ID_PATTERN.removeprefix("^").removesuffix("$")
    try:
        prepare_episode({"id": id, "text": "some text"}, Config())
        accepted = True
    except InvalidInputError:
        accepted = False
    assert (re.fullmatch(body, id) is not None) == accepted, repr(id)
