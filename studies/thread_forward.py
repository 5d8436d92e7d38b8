"""Run a ``memstrata`` command with the speaker's thread looking forward only.

System-1's thread (:func:`memstrata.retrieval.sessions.thread`) raises the named
speaker's turns within ``thread_window`` turns of the best candidate, before and after
it. This study keeps only the turns after it (a reply follows what it answers), for a
bench run::

    python -m studies.thread_forward bench qa FILE --format locomo --recipes default \\
        --no-answers --no-cache --out DIR
"""

from __future__ import annotations

import sys
from typing import Any

from memstrata.cli.main import main as cli
from memstrata.retrieval import sessions
from memstrata.store.base import Store

_thread = sessions.thread


class _Forward:
    """The store, whose session neighbours of a turn are only those stored after it."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def session_neighbours(self, keys: list[int], window: int) -> dict[int, list[int]]:
        found = self._store.session_neighbours(keys, window)
        return {key: [n for n in near if n > key] for key, near in found.items()}


def forward(store: Store, *args: Any, **kwargs: Any) -> Any:
    return _thread(_Forward(store), *args, **kwargs)  # type: ignore[arg-type]


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sessions.thread = forward
    sys.argv = ["memstrata", *sys.argv[1:]]
    cli()


if __name__ == "__main__":
    main()
