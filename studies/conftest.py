"""The studies' own checks run with the suite (``testpaths``) and on its fixtures: one
MiniLM embedder per session and no ``MEMSTRATA_*`` variable from the environment."""

from tests.conftest import _no_memstrata_env, embedder

__all__ = ["_no_memstrata_env", "embedder"]
