"""The optional reader part of a design: found by design name, the configured one, or
the only one; a clear error otherwise."""

from __future__ import annotations

import pytest

from memstrata.engine import Design, Reader, Reading, Registry
from memstrata.engine.registry import _builtin_designs
from memstrata.errors import ConfigError


class EchoReader(Reader):
    name = "echo"

    async def read(self, ctx, namespace, document, question, *, graph_only=False):  # type: ignore[no-untyped-def]
        return Reading(question=question, answer=document.text[:10])


def test_the_only_reader_is_the_default() -> None:
    reg = Registry(_builtin_designs())
    found = reg.readers()
    assert len(found) == 1
    (name,) = found
    assert type(reg.reader(None)) is found[name]
    assert type(reg.reader(name)) is found[name]
    with pytest.raises(ConfigError, match="has no reader"):
        reg.reader("system1")


def test_several_readers_need_a_choice() -> None:
    reg = Registry([*_builtin_designs(), Design(name="echo", reader=EchoReader)])
    assert len(reg.readers()) == 2
    with pytest.raises(ConfigError, match="choose a reader with --design"):
        reg.reader(None)
    assert isinstance(reg.reader("echo"), EchoReader)
    with pytest.raises(ConfigError, match="invalid parameters"):
        reg.reader("echo", {"unknown": 1})
