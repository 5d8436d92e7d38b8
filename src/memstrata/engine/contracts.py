"""The contracts a design is written against: ``Builder``, ``Route``, ``Answerer``, ``Design``.

The engine knows these types and nothing of any particular design. A design is a package
that subclasses them and hands a :class:`Design` to the registry, either as a built-in
(``memstrata.designs``) or through the ``memstrata.designs`` entry-point group.

* A **builder** folds new episodes into its structures. The engine decides *which*
  episodes are pending (those without a done mark for the builder), hands them over in
  batches, and calls :meth:`Builder.finish` once a drain is over. The builder writes its
  records and the done marks of the batch in one store transaction
  (``Store.write_records(..., built=(name, keys))``), so a killed build resumes after the
  last whole batch and never half-applies one. The records it writes are its own
  (``Derived.builder``): it reads them back with ``get_records(..., builder=name)``, and
  no other builder can replace, delete or rebuild them.
* A **route** answers queries from what the builders made; it returns hits best first,
  each with the episodes (and spans) it rests on.
* An **answerer** turns a question and the fused hits into an :class:`Answer`.
* A **reader** (optional, one per design) reads one long document for one question
  (``memstrata read``), outside any recipe.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memstrata.embed.base import Embedder
from memstrata.llm.base import LLMClient
from memstrata.models import Derived, Episode, Hit
from memstrata.store.base import Repairs, SearchFilters, Store

Tier = Literal["heuristic", "llm"]

#: What an answer says when memory does not hold it (``abstained``), in every design and
#: every interface (API, CLI, REST, MCP, the explorer). A model's own way of abstaining
#: (the grounded prompt's ``NO_ANSWER``, PersonalAI's ``<NotEnoughtInfo>``, ...) is read
#: where its reply is parsed and never shown.
NOT_IN_MEMORY = "Not in memory."
S = TypeVar("S")
P = TypeVar("P", bound=BaseModel)


class NoParams(BaseModel):
    """Parameters of a part that has none; unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class Context:
    """What a builder, route or answerer may use. One per open memory, long-lived.

    ``llm`` is None on the heuristic tier. ``shared`` holds state that the parts of one
    design share within a process (for example a loaded graph), created on first use.
    """

    store: Store
    embedder: Embedder
    llm: LLMClient | None = None
    tier: Tier = "heuristic"
    progress: Callable[[int], None] | None = None
    shared: dict[str, Any] = field(default_factory=dict)

    def state(self, key: str, factory: Callable[[], S]) -> S:
        """The process-wide object under ``key``, made by ``factory`` the first time."""
        if key not in self.shared:
            self.shared[key] = factory()
        value: S = self.shared[key]
        return value

    def with_tier(
        self, tier: Tier, llm: LLMClient | None, progress: Callable[[int], None] | None = None
    ) -> Context:
        """The same context (and shared state) for another tier or progress callback."""
        return Context(self.store, self.embedder, llm, tier, progress, self.shared)

    def advance(self, n: int) -> None:
        if self.progress is not None:
            self.progress(n)


class StepResult(BaseModel):
    """What one :meth:`Builder.update` call did.

    ``failed`` maps episode ids the builder could not fold in to the reason; the engine
    records them for a bounded number of retries. Done marks of the other episodes were
    written by the builder with its records.
    """

    failed: dict[str, str] = Field(default_factory=dict)
    work: dict[str, int] = Field(
        default_factory=dict,
        description="units of work done, builder-defined (e.g. aggregates computed)",
    )


class BuildReport(BaseModel):
    """The outcome of building one recipe's builders over one namespace."""

    namespace: str
    builder: str
    tier: Tier
    episodes: int = 0
    failed: int = 0
    errors: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    counts: dict[str, int] = Field(default_factory=dict, description="records per kind")
    details: dict[str, Any] = Field(default_factory=dict, description="builder-specific")
    work: dict[str, int] = Field(
        default_factory=dict, description="the builder's work counters summed over this build"
    )
    llm: dict[str, dict[str, Any]] = Field(default_factory=dict, description="usage per stage")
    skipped: str | None = Field(
        default=None, description="why nothing ran (another process holds the build lease)"
    )
    stopped: bool = Field(
        default=False,
        description="a stop request ended the drain between two batches: episodes may remain "
        "queued, and the builder's finishing step waits for its next drain",
    )
    unreachable: str | None = Field(
        default=None,
        description="why the drain stopped early: the LLM server could not be reached "
        "(llm.breaker_failures calls in a row); the episodes it did not get to are still "
        "queued, and the next build or worker round goes on with them",
    )

    @property
    def llm_failures(self) -> int:
        return sum(int(v.get("failures", 0)) for v in self.llm.values())


class Builder(ABC, Generic[P]):
    """Turns episodes into structures, incrementally and resumably.

    Subclasses set ``name`` (unique; keys progress, leases and the ownership of every
    record it writes), ``kinds`` (the record kinds it writes) and ``Params``, and
    subscript the class with the same model (``class MyBuilder(Builder[MyParams])``) so
    ``self.params`` is typed.
    """

    name: ClassVar[str]
    kinds: ClassVar[tuple[str, ...]] = ()
    Params: ClassVar[type[BaseModel]] = NoParams
    #: stage-name prefix of its LLM calls, for the per-stage usage in its reports
    stage_prefix: ClassVar[str] = ""

    def __init__(self, params: P | None = None) -> None:
        self.params: P = params if params is not None else cast(P, self.Params())

    @abstractmethod
    async def update(self, ctx: Context, namespace: str, episodes: Sequence[Episode]) -> StepResult:
        """Fold ``episodes`` (pending, in insertion order) into the structures; write the
        records and the done marks of the episodes that succeeded in one transaction."""

    async def finish(self, ctx: Context, namespace: str) -> None:  # noqa: B027 - optional hook
        """Called once after a drain (also when nothing was pending): whole-namespace steps
        such as a first hierarchy build. Must be idempotent and cheap when there is
        nothing to do."""

    async def rebuild(self, ctx: Context, namespace: str) -> None:
        """Start the structures over: drop the builder's own records and progress marks
        (another design's records of the same kinds stay). The engine then folds every
        episode in again through :meth:`update` and :meth:`finish`, under its lease and
        failure handling."""
        await asyncio.to_thread(ctx.store.reset_build, namespace, self.name)

    async def repair(self, ctx: Context, namespace: str, work: Repairs) -> None:
        """Re-derive what rested on deleted or replaced episodes (``work``), so that no
        record keeps their text: aggregates (summaries, fact sheets, reports, tree nodes)
        are recomputed from what remains, or dropped. Runs under the builder's lease
        before the delete or update returns (and before the next batch of a drain); the
        engine clears ``work`` afterwards, so it must be safe to run twice.

        This default suits a design whose records each rest on few episodes: every
        record that lost a source is dropped and its remaining episodes are queued
        again, so :meth:`update` derives it anew from them."""

        def drop() -> None:
            again: dict[str, None] = {}
            for kind in sorted(set(work.changed.values())):
                ids = [i for i, k in work.changed.items() if k == kind]
                for rec in ctx.store.get_records(namespace, kind, ids, builder=self.name):
                    again.update((s.episode, None) for s in rec.sources)
            ctx.store.write_records(namespace, [], list(work.changed), owner=self.name)
            ctx.store.forget_builds(namespace, self.name, list(again))

        await asyncio.to_thread(drop)

    async def describe(self, ctx: Context, namespace: str) -> dict[str, Any]:
        """Builder-specific figures for reports (layers, depth, ...)."""
        return {}

    async def check(self, ctx: Context, namespace: str) -> list[str]:
        """Broken invariants of the structures, as sentences; empty when all hold."""
        return []


class Route(ABC, Generic[P]):
    """Answers queries from one namespace's structures; hits best first."""

    name: ClassVar[str]
    Params: ClassVar[type[BaseModel]] = NoParams
    #: builders whose structures the route reads (for the pending count of a search)
    needs: ClassVar[tuple[str, ...]] = ()
    #: the route's hits include episodes its builders have not folded in (it ranks the
    #: raw episodes too); otherwise the engine adds them (:mod:`memstrata.engine.catchup`)
    surfaces_unbuilt: ClassVar[bool] = False

    def __init__(self, params: P | None = None) -> None:
        self.params: P = params if params is not None else cast(P, self.Params())

    @abstractmethod
    async def search(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        """For each query, hits best first. ``k`` is the episode budget; other kinds
        follow the route's own rule (the recipe's fusion budgets cut them). The hits
        must be new objects: fusion sets their ``ranks`` and ``score`` in place."""


class BlockingRoute(Route[P]):
    """A route whose whole search is blocking store and index work: :meth:`search_now`
    runs on a worker thread, so the event loop serves other requests meanwhile."""

    async def search(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        return await asyncio.to_thread(self.search_now, ctx, namespace, queries, k, filters)

    @abstractmethod
    def search_now(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None,
    ) -> list[list[Hit]]:
        """:meth:`search`, on the calling thread."""


@contextmanager
def forgotten_on_failure(forget: Callable[..., object], *args: object) -> Iterator[None]:
    """Call ``forget(*args)`` (a cache's ``forget`` of a namespace) when the block fails in any
    way, cancellation included, and let the failure through: the in-memory structures
    then hold changes that were never written, and the next reader must load them from
    the store again."""
    try:
        yield
    except BaseException:
        forget(*args)
        raise


class Answer(BaseModel):
    """An answer with the episodes it cites. ``abstained``: the context did not hold it;
    its text is then :data:`NOT_IN_MEMORY` and it cites nothing, whoever made it."""

    question: str
    text: str
    sources: list[str] = Field(default_factory=list)
    abstained: bool = False
    extractive: bool = Field(default=False, description="sentences quoted, no model wrote it")
    support: float | None = Field(
        default=None,
        description="extractive: how well the best quoted sentence supports the question "
        "(cosine plus the share of the question's words); below the minimum it abstains",
    )
    usage: dict[str, int] = Field(default_factory=dict)
    hits: list[Hit] = Field(default_factory=list, description="what the answer was given")
    fallback: str | None = Field(
        default=None,
        description="the recipe's answer stage failed and another made this answer: why "
        "(a benchmark counts these apart rather than scoring them as the recipe's)",
    )

    @model_validator(mode="after")
    def _one_abstention(self) -> Answer:
        if self.abstained:
            self.text, self.sources = NOT_IN_MEMORY, []
        return self


class QuestionInfo(BaseModel):
    """What an evaluation knows of a question beyond its words: the data set's category
    ("temporal", "adversarial", ...) and, for an adversarial question, the plausible
    answer the data set offers as a trap. An answerer may use it; ``ask`` never has it."""

    category: str | None = None
    candidate: str | None = None


class Answerer(ABC, Generic[P]):
    """The answer stage of a recipe."""

    name: ClassVar[str]
    Params: ClassVar[type[BaseModel]] = NoParams

    def __init__(self, params: P | None = None) -> None:
        self.params: P = params if params is not None else cast(P, self.Params())

    @abstractmethod
    async def answer(
        self,
        ctx: Context,
        namespace: str,
        question: str,
        hits: list[Hit],
        about: QuestionInfo | None = None,
    ) -> Answer: ...


class Window(BaseModel):
    """A passage of a read document: character offsets ``[start, end)`` into its text."""

    start: int
    end: int
    text: str
    node_ids: list[str] = Field(default_factory=list)


class Reading(BaseModel):
    """What a reader made of one document and one question.

    ``windows`` are the passages the answer stage read, with offsets into the document;
    ``compaction_ratio`` is the answer stage's first input over the document (both in
    the same tokens); ``graph`` holds counts (and the structure with ``graph_only``).
    A reading that ``abstained`` answers :data:`NOT_IN_MEMORY`."""

    question: str
    answer: str | None = None
    abstained: bool = False
    windows: list[Window] = Field(default_factory=list)
    compaction_ratio: float | None = None
    graph: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_abstention(self) -> Reading:
        if self.abstained:
            self.answer = NOT_IN_MEMORY
        return self


class Reader(ABC, Generic[P]):
    """A design's reader mode: one long document, one question, an answer with the
    passages it rests on. The document is stored as the episode ``document`` of a
    namespace of its own, so a reader may keep what it builds there (per question)."""

    name: ClassVar[str]
    Params: ClassVar[type[BaseModel]] = NoParams

    def __init__(self, params: P | None = None) -> None:
        self.params: P = params if params is not None else cast(P, self.Params())

    @abstractmethod
    async def read(
        self,
        ctx: Context,
        namespace: str,
        document: Episode,
        question: str,
        *,
        graph_only: bool = False,
    ) -> Reading: ...


class ShowNode(BaseModel):
    """One line of what ``show`` prints, with its children (a tree). ``design`` names the
    design whose records a top-level node shows (set by the engine)."""

    text: str
    children: list[ShowNode] = Field(default_factory=list)
    design: str = ""


@dataclass
class Design:
    """What a design package contributes. ``recipes`` are the presets it ships (data)."""

    name: str
    builders: Sequence[type[Builder]] = ()
    routes: Sequence[type[Route]] = ()
    answerers: Sequence[type[Answerer]] = ()
    recipes: Sequence[Any] = ()  # memstrata.engine.recipe.Recipe
    #: ``show NAME``: the design's view of a named structure, or None if it has none
    show: Callable[[Context, str, str], list[ShowNode] | None] | None = None
    description: str = ""
    #: ``memstrata read``: the design's reader of one long document, if it has one
    reader: type[Reader] | None = None
    #: pictures of its records for the explorer (memstrata.engine.views.DesignView)
    views: Sequence[Any] = ()
    #: the record kinds it builds beyond the core's Entity and Fact: the stores read them
    #: back by their ``kind`` once the design is loaded
    records: Sequence[type[Derived]] = ()


def elapsed(t0: float) -> float:
    return round(time.perf_counter() - t0, 3)
