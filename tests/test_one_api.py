"""One API: ``Memory``, ``AsyncMemory``, ``RemoteMemory`` and ``AsyncRemoteMemory`` have the
same verbs with the same signatures (names, kinds, defaults, annotations) and return
types (sync ``T``, async a coroutine of ``T``), apart from what is listed here; and every
error a user can meet is importable from ``memstrata``."""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import pkgutil
import typing
from typing import Any

import memstrata
from memstrata import AsyncMemory, AsyncRemoteMemory, Memory, RemoteMemory
from memstrata.errors import MemstrataError

#: verbs of an in-process memory only: the queue worker runs in the process that holds
#: the store (the service runs its own), and ``read`` reads a document given in the call
LOCAL_ONLY = {"work", "read"}
#: verbs of the async core only: a background task lives on the caller's event loop
ASYNC_LOCAL_ONLY = {"start_worker", "request_stop", "stop_worker"}
#: verbs of the service's client only: jobs are what the service's adds and updates start
REMOTE_ONLY = {"job", "wait"}
#: parameters of the in-process classes only, by verb: a flag set to stop a build after
#: its current batch is looked at in the process that runs the build
LOCAL_PARAMS = {"build": {"stop"}}
#: every class's constructor is its own (a store's path or a service's URL)
CONSTRUCTORS = {"open"}

CLASSES = (Memory, AsyncMemory, RemoteMemory, AsyncRemoteMemory)


def verbs(cls: type) -> set[str]:
    return {
        name
        for name in dir(cls)
        if not name.startswith("_") and callable(getattr(cls, name)) and name not in CONSTRUCTORS
    }


def shape(cls: type, verb: str) -> tuple[list[tuple[Any, ...]], Any]:
    """The parameters (name, kind, default, resolved annotation) and the return type."""
    fn = getattr(cls, verb)
    hints = typing.get_type_hints(fn)
    skipped = LOCAL_PARAMS.get(verb, set()) if cls in (Memory, AsyncMemory) else set()
    params = [
        (p.name, p.kind, p.default, hints.get(p.name))
        for p in inspect.signature(fn).parameters.values()
        if p.name not in skipped
    ]
    return params, hints.get("return")


def test_the_four_classes_have_the_same_verbs() -> None:
    common = verbs(AsyncRemoteMemory) - REMOTE_ONLY
    assert verbs(AsyncMemory) == common | LOCAL_ONLY | ASYNC_LOCAL_ONLY
    assert verbs(Memory) == common | LOCAL_ONLY
    assert verbs(RemoteMemory) == common | REMOTE_ONLY
    assert {"add", "get", "list", "delete", "delete_namespace", "search_many", "ask"} <= common
    for verb in sorted(common | LOCAL_ONLY | REMOTE_ONLY):
        having = [c for c in CLASSES if verb in verbs(c)]
        shapes = {c.__name__: shape(c, verb) for c in having}
        first_params, first_return = shapes[having[0].__name__]
        for name, (params, returns) in shapes.items():
            assert params == first_params, f"{name}.{verb}{params} != {first_params}"
            # the same type, or a subclass (the remote add report carries its jobs too)
            same = returns == first_return or (
                isinstance(returns, type)
                and isinstance(first_return, type)
                and (issubclass(returns, first_return) or issubclass(first_return, returns))
            )
            assert same, f"{name}.{verb} returns {returns}, not {first_return}"
        for cls in having:
            fn = getattr(cls, verb)
            is_async = cls in (AsyncMemory, AsyncRemoteMemory)
            assert inspect.iscoroutinefunction(fn) == is_async, f"{cls.__name__}.{verb}"
            assert fn.__doc__, f"{cls.__name__}.{verb} says nothing of itself"


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_every_error_a_user_can_meet_is_importable_from_memstrata() -> None:
    for info in pkgutil.walk_packages(memstrata.__path__, "memstrata."):
        # CrewAI installs in a venv of its own (make crewai-env): its adapter is read there
        # (by its distribution: tests/integrations/crewai/ would pass for the package)
        apart = info.name == "memstrata.integrations.crewai" and not _installed("crewai")
        if not info.name.endswith("__main__") and not apart:
            importlib.import_module(info.name)
    seen: set[type] = set()
    todo = [MemstrataError]
    while todo:
        cls = todo.pop()
        seen.add(cls)
        todo.extend(c for c in cls.__subclasses__() if c not in seen)
    ours = {c for c in seen if c.__module__.startswith("memstrata")}  # not the tests' own
    public = {c for c in ours if not c.__name__.startswith("_")}
    assert {"Unauthorized", "Forbidden", "NotFound", "LLMError", "LLMBackendError"} <= {
        c.__name__ for c in public
    }
    for cls in public:
        assert getattr(memstrata, cls.__name__, None) is cls, f"memstrata.{cls.__name__}"
        assert cls.__name__ in memstrata.__all__
    assert not ours - public, "a private error class reaches users"
