"""What a service needs of :class:`~memstrata.memory.AsyncMemory` beside its verbs: the
store's API keys, the jobs adds and updates start, and a look inside the structures.
They are attributes, not verbs: the four memory classes share verbs only
(``tests/test_one_api.py``), and these belong to the process that holds the store."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, cast

from memstrata.inspection import Inspection
from memstrata.jobs import Jobs
from memstrata.keyring import Keys

if TYPE_CHECKING:
    from memstrata.config import Config
    from memstrata.memory import AsyncMemory
    from memstrata.store import Store


class Surfaces:
    """Mixin of :class:`~memstrata.memory.AsyncMemory`: ``namespace``, ``keys``, ``jobs``
    and ``inspect``."""

    if TYPE_CHECKING:
        config: Config
        store: Store

    @property
    def namespace(self) -> str:
        """The namespace the verbs use when given none (as the remote clients' own)."""
        return self.config.namespace

    @cached_property
    def keys(self) -> Keys:
        """The store's API keys: check a request's key, list, create and revoke keys."""
        return Keys(self.store)

    @cached_property
    def jobs(self) -> Jobs:
        """The jobs that follow what an add or an update left to build."""
        return Jobs(cast("AsyncMemory", self))

    @cached_property
    def inspect(self) -> Inspection:
        """The designs' views of a namespace and the records derived from an episode."""
        return Inspection(cast("AsyncMemory", self))


__all__ = ["Surfaces"]
