"""Errors a user of memstrata can catch. Each carries a message that says what to do."""

from __future__ import annotations


class MemstrataError(Exception):
    """Base class of every error memstrata raises on purpose."""


class InvalidInputError(MemstrataError, ValueError):
    """The caller gave text or parameters memstrata cannot store or use."""


class ConflictError(InvalidInputError):
    """``add`` named ids already stored with different content; nothing was changed."""

    def __init__(self, ids: list[str], namespace: str) -> None:
        self.ids = list(ids)
        self.namespace = namespace
        shown = ", ".join(repr(i) for i in self.ids[:5])
        more = f" and {len(self.ids) - 5} more" if len(self.ids) > 5 else ""
        super().__init__(
            f"episode {shown}{more} is already stored in namespace {namespace!r} with "
            "different content; nothing was changed. To replace it (the stored version is "
            "kept in its history), call update(id, text) or pass replace=True"
        )


class NamespaceNotFoundError(MemstrataError, KeyError):
    """A read or delete named a namespace that holds nothing. ``known``, when given, lists
    the namespaces that do exist, and the message names them."""

    SHOWN = 20  # namespaces named in the message at most

    def __init__(self, namespace: str, known: list[str] | None = None) -> None:
        super().__init__(namespace)
        self.namespace = namespace
        self.known = known

    def __str__(self) -> str:
        text = f"unknown namespace {self.namespace!r} (nothing has been added to it)"
        if self.known is None:
            return text
        if not self.known:
            return f"{text}; the store holds no namespace yet"
        names = ", ".join(self.known[: self.SHOWN])
        more = len(self.known) - self.SHOWN
        return f"{text}; namespaces: {names}" + (f" and {more} more" if more > 0 else "")


class NotFound(MemstrataError):
    """A job, key or episode that was asked for is not there (or, to a key of the service,
    not within its reach: the two look the same)."""


class EpisodeNotFoundError(NotFound, InvalidInputError):
    """An update or a history named an episode id the namespace does not hold."""

    def __init__(self, id: str, namespace: str) -> None:
        super().__init__(
            f"no episode {id!r} in namespace {namespace!r}; add it with add() "
            "(or `memstrata import`)"
        )
        self.id = id
        self.namespace = namespace


class StoreError(MemstrataError):
    """The store could not be opened or written (corrupt, locked, wrong version)."""


class StoreNotFoundError(StoreError):
    """A store was opened for reading (``create=False``) but there is no file at its path."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path

    def __str__(self) -> str:
        return f"no memstrata database at {self.path}"


class StoreClosedError(StoreError):
    """A verb was called on a memory (or store) after it was closed."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: the store has been closed; open it again")
        self.path = path


class StoreLockedError(StoreError):
    """Another process held the write lock for longer than the busy timeout."""


class ConfigError(MemstrataError):
    """The configuration is incomplete or contradictory."""


class Misdirected(MemstrataError):
    """The service was asked under a host name that is not its own (HTTP 421): an open
    server answers only to its own address, against DNS rebinding."""


class RequestTimeout(MemstrataError):
    """A request body did not reach the service in time (HTTP 408)."""


class Overloaded(MemstrataError):
    """Every slot of the service this caller may take is in use (HTTP 429); retry
    shortly."""
