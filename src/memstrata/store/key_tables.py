"""What every store keeps for the service's API keys (a part of :class:`~.base.Store`,
apart so that module stays readable): keys by digest, named by a random public id, and
whether the store is guarded."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from memstrata.store.reports import ApiKey


class KeyTables(ABC):
    @abstractmethod
    def add_api_key(
        self, digest: str, prefix: str, namespaces: Sequence[str], scope: str, label: str | None
    ) -> ApiKey:
        """Store a key by its SHA-256 ``digest`` (the key itself is never stored), under a
        new public id (:meth:`ApiKey.new_id`)."""

    @abstractmethod
    def api_key(self, digest: str) -> ApiKey | None:
        """The key with this digest, revoked or not; None if there is none."""

    @abstractmethod
    def api_keys(self) -> list[ApiKey]:
        """Every key, revoked ones included, in the order they were made."""

    @abstractmethod
    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key by its public id; False if there is no such live key."""

    @abstractmethod
    def keys_guarded(self) -> bool:
        """Whether the store needs a key: it has had one (live, or revoked and not
        reopened since by :meth:`lift_key_guard`)."""

    @abstractmethod
    def lift_key_guard(self) -> int:
        """The operator's reopening: revoked keys stop guarding the store (their rows stay,
        stamped ``opened_at``); live keys still do. The number of keys it stamped."""
