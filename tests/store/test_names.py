"""The namespace rule and its regular expression (the OpenAPI document's pattern) say the
same thing of every string, and so do the service's "says something" pattern and the
core's check of empty text: a client that follows the document is never refused."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memstrata.errors import InvalidInputError
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
TEXTS = st.lists(st.one_of(EDGES, st.characters()), max_size=6).map("".join)


def _accepted(name: str) -> bool:
    try:
        check_namespace(name)
    except InvalidInputError:
        return False
    return True


@settings(max_examples=600)
@given(TEXTS)
@example("")
@example(" \x1c ")
@example("acme/prod")
def test_the_pattern_is_the_namespace_rule(name: str) -> None:
    # JSON Schema reads "$" as the very end; Python's "$" also matches before a final "\n"
    body = NAMESPACE_PATTERN.removeprefix("^").removesuffix("$")
    matched = re.fullmatch(body, name) is not None
    assert matched == _accepted(name), repr(name)


@settings(max_examples=600)
@given(TEXTS)
@example("\x1c\x1d")
@example("\u2003")
def test_says_something_is_the_cores_empty_check(text: str) -> None:
    assert (re.search(SAYS, text) is not None) == bool(text.strip()), repr(text)
