"""The engine: contracts that designs implement, recipes as data, fusion, the runner.

* :mod:`.contracts`: ``Builder``, ``Route``, ``Answerer``, ``Design``, ``Context``;
* :mod:`.recipe`: ``Recipe`` and its parts (pydantic, also written in TOML);
* :mod:`.registry`: built-in and entry-point designs, recipes by name;
* :mod:`.fusion`: routes' hits into one budgeted list;
* :mod:`.engine`: drains builders under a lease, runs routes, answers;
* :mod:`.worker`: the queue worker; :mod:`.answer`: the generic ``grounded`` answerer;
* :mod:`.removal`: what a design's ``repair`` needs after a delete or an update.
"""

from memstrata.engine.contracts import (
    NOT_IN_MEMORY,
    Answer,
    Answerer,
    Builder,
    BuildReport,
    Context,
    Design,
    NoParams,
    Reader,
    Reading,
    Route,
    ShowNode,
    StepResult,
    Tier,
    Window,
)
from memstrata.engine.engine import BuildBusyError, Engine
from memstrata.engine.recipe import AnswererSpec, BuilderSpec, FusionSpec, Recipe, RouteSpec
from memstrata.engine.registry import ENTRY_POINT_GROUP, Registry
from memstrata.engine.worker import WorkerReport, run_worker
from memstrata.store.base import Repairs

__all__ = [
    "ENTRY_POINT_GROUP",
    "NOT_IN_MEMORY",
    "Answer",
    "Answerer",
    "AnswererSpec",
    "BuildBusyError",
    "BuildReport",
    "Builder",
    "BuilderSpec",
    "Context",
    "Design",
    "Engine",
    "FusionSpec",
    "NoParams",
    "Recipe",
    "Reader",
    "Reading",
    "Registry",
    "Repairs",
    "Route",
    "RouteSpec",
    "ShowNode",
    "StepResult",
    "Tier",
    "Window",
    "WorkerReport",
    "run_worker",
]
