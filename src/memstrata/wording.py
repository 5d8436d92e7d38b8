"""How counts read in messages: ``1 episode``, ``2 episodes``, never ``1 episodes`` or
``episode(s)``."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1; ``many`` for a plural that is
    not ``word`` + s (``plural(n, "search", "searches")``)."""
    return f"{n} {word if n == 1 else many or word + 's'}"
