"""Errors a user of memstrata can catch. Each carries a message that says what to do."""

from __future__ import annotations


class MemstrataError(Exception):
    """Base class of every error memstrata raises on purpose."""


class InvalidInputError(MemstrataError, ValueError):
    """The caller gave text or parameters memstrata cannot store or use."""


class NamespaceNotFoundError(MemstrataError, KeyError):
    """A read or delete named a namespace that holds nothing."""

    def __init__(self, namespace: str) -> None:
        super().__init__(namespace)
        self.namespace = namespace

    def __str__(self) -> str:
        return f"unknown namespace {self.namespace!r} (nothing has been added to it)"


class StoreError(MemstrataError):
    """The store could not be opened or written (corrupt, locked, wrong version)."""


class StoreLockedError(StoreError):
    """Another process held the write lock for longer than the busy timeout."""


class ConfigError(MemstrataError):
    """The configuration is incomplete or contradictory."""
