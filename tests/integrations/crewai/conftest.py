"""The CrewAI adapter's tests run in the venv of their own that `make crewai-env` builds
(CrewAI's pins do not install beside the other frameworks):
tests/integrations/test_crewai.py runs them there. Where CrewAI is not installed (the
main venv), they are not collected."""

from __future__ import annotations

import importlib.metadata
import os


def _installed(distribution: str) -> bool:
    """By its distribution: this folder would pass for a package named crewai."""
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


collect_ignore_glob = [] if _installed("crewai") else ["test_*.py"]

# no telemetry, no tracing prompt: the tests run offline
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
