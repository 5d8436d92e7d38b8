"""What may name a namespace (every store and verb checks names the same way)."""

from __future__ import annotations

import unicodedata

from memstrata.errors import InvalidInputError

#: :func:`check_namespace` as a regular expression (JSON Schema's dialect, for the service's
#: OpenAPI document): no control character, one character not white space (``str.strip``
#: also strips U+001C..U+001F, control characters anyway). A lone surrogate cannot travel
#: in a URL or in UTF-8, so the pattern leaves it to the check (and validators of JSON
#: Schema written in Rust refuse surrogates in a pattern)
_NOT = r"\x00-\x1f\x7f-\x9f"  # the control characters (C0, DEL, C1)
NAMESPACE_PATTERN = rf"^[^{_NOT}]*[^\s{_NOT}][^{_NOT}]*$"


def check_namespace(name: object) -> str:
    """``name`` if it can name a namespace, else :class:`InvalidInputError`.

    A namespace is a non-blank string of printable text: no control characters (NUL,
    newlines, tabs), no lone surrogates. Nothing else is changed or refused, so names
    that differ only by case, spaces, ``/`` or SQL wildcards are distinct tenants."""
    if not isinstance(name, str):
        raise InvalidInputError(f"a namespace is a string, not {type(name).__name__}")
    if not name.strip():
        raise InvalidInputError(
            f"namespace {name!r} is empty; give a name, or leave it out for the default"
        )
    for i, char in enumerate(name):
        if unicodedata.category(char) in ("Cc", "Cs"):
            what = "a lone surrogate" if "\ud800" <= char <= "\udfff" else "a control character"
            raise InvalidInputError(f"namespace {name!r} has {what} ({char!r}) at position {i}")
    return name
