"""Secrets out of whatever memstrata shows: one function masks them in a text, one in a
configuration tree. Every output that may hold a store URL, an LLM endpoint or a
configuration goes through these (CLI lines, service responses and errors, logs), so a
password never reaches a screen, a response or a log file."""

from __future__ import annotations

import re
from typing import Any

MASK = "********"
#: configuration keys whose values are secrets whatever they hold
SECRET_KEYS = frozenset({"api_key", "password", "secret", "token"})

# scheme://user:password@host -> the password; the user name stays (it says which account)
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)[^\s@]*@")
# password=... in a libpq keyword string or a URL's query; api_key=... likewise
_PARAMS = re.compile(
    r"(?i)(?P<head>\b(?:password|passwd|pwd|api_key|apikey|access_token|token|secret)=)"
    r"[^\s&;]+"
)


def redact(text: str) -> str:
    """``text`` with the password of every URL in it and every ``password=``-like
    parameter replaced by ``********``; anything else is left as it is."""
    text = _USERINFO.sub(lambda m: f"{m['head']}{MASK}@", text)
    return _PARAMS.sub(lambda m: f"{m['head']}{MASK}", text)


def redact_tree(value: Any, key: str = "") -> Any:
    """A JSON-like tree with secret keys' values masked and every string redacted."""
    if isinstance(value, dict):
        return {k: redact_tree(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_tree(v, key) for v in value]
    if key in SECRET_KEYS and value:
        return MASK
    if isinstance(value, str):
        return redact(value)
    return value


__all__ = ["MASK", "SECRET_KEYS", "redact", "redact_tree"]
