"""``AsyncMemory.open`` returns an :class:`Opening`: await it, or enter it with ``async with``."""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from typing import Any, Generic, Protocol, TypeVar


class _Closable(Protocol):
    async def close(self) -> None: ...


T = TypeVar("T", bound=_Closable)


class Opening(Generic[T]):
    """An object being opened. ``await`` gives it to the caller, who closes it;
    ``async with`` gives it to the block and closes it on the way out."""

    def __init__(self, opening: Coroutine[Any, Any, T]) -> None:
        self._opening = opening
        self._opened: T | None = None

    def __await__(self) -> Generator[Any, None, T]:
        return self._opening.__await__()

    async def __aenter__(self) -> T:
        self._opened = await self._opening
        return self._opened

    async def __aexit__(self, *exc: object) -> None:
        if self._opened is not None:
            await self._opened.close()
