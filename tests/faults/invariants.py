"""The store invariants the fault tests assert, for reuse by other tests.

The checker itself lives in :mod:`memstrata.eval.invariants` (``memstrata bench faults``
runs it too and cannot import from tests); this module adds the assertions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memstrata.eval.invariants import (
    Findings,
    all_episodes,
    builder_records,
    check_store,
    design_problems,
    expected_lines,
)
from memstrata.store import Store

__all__ = [
    "Findings",
    "all_episodes",
    "assert_sound",
    "builder_records",
    "check_store",
    "design_problems",
    "expected_lines",
]


def assert_sound(
    store: Store,
    namespace: str,
    expected: Mapping[str, Mapping[str, Any]],
    builders: Sequence[str] = (),
    **kw: Any,
) -> Findings:
    """Fail with every broken invariant (see :func:`check_store`) named."""
    findings = check_store(store, namespace, expected, builders, **kw)
    assert findings.ok, findings.problems()
    return findings
