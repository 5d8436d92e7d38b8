"""The shapes of the service's answers, for its OpenAPI document.

Most routes build their answer as a mapping (an episode without the store's key, a
report with its job), which FastAPI documents as "any object". These models say what each
answer holds, so a client generated from the document is typed end to end (the
TypeScript client in ``clients/typescript`` is). They document only: the routes do not
validate their answers against them; ``tests/service/test_openapi_shapes.py`` checks
every answer against its shape instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from memstrata.engine import BuildReport, ShowNode
from memstrata.jobs import JobStatus
from memstrata.models import JSONDict, SearchResult
from memstrata.store import AddReport
from memstrata.store.base import EpisodeVersion
from memstrata.store.reports import ApiKey

#: every field is in the answer, those with a default too: the document says so
ALWAYS = ConfigDict(json_schema_serialization_defaults_required=True)


class Shape(BaseModel):
    """An answer of the service: each field is always in it."""

    model_config = ALWAYS


class Status(Shape):
    status: str


class NamespaceList(Shape):
    namespaces: list[str] = Field(description="the namespaces the key reaches")


class RecipeList(Shape):
    recipes: list[dict[str, Any]] = Field(
        description="name, description, builders, routes, answerer of each"
    )


class StoredEpisode(Shape):
    """An episode as the service shows it (without the store's internal key)."""

    id: str
    namespace: str
    text: str
    speaker: str | None
    role: str | None
    occurred_at: datetime | None
    session: str | None
    seq: int
    metadata: JSONDict
    created_at: datetime


class Added(AddReport):
    """What an add did, per id, and the job that builds the episodes' structures."""

    model_config = ALWAYS

    job: JobStatus | None = Field(description="null when the recipe builds nothing")


class Updated(StoredEpisode):
    """The episode as updated, and the job that rebuilds what rests on it."""

    job: JobStatus | None = Field(description="null when the recipe builds nothing")


class EpisodeList(Shape):
    episodes: list[StoredEpisode]
    next: str | None = Field(description="the `after` of the next page; null on the last")


class Versions(Shape):
    versions: list[EpisodeVersion] = Field(description="oldest first")


class Deleted(Shape):
    deleted: int
    missing: list[str] = Field(description="the ids given that were not stored")


class NamespaceDeleted(Shape):
    deleted: int = Field(description="the episodes the namespace held")


class Results(Shape):
    results: list[SearchResult] = Field(description="in the order of the queries")


class Nodes(Shape):
    nodes: list[ShowNode]


class Builds(Shape):
    reports: list[BuildReport] = Field(description="one per builder")


class Queued(Shape):
    queued: int = Field(description="episodes queued again")


class KeyList(Shape):
    keys: list[ApiKey]


class NewKey(ApiKey):
    model_config = ALWAYS

    key: str = Field(description="the key itself, shown this once")


class Revoked(Shape):
    revoked: bool


NS = "/v1/namespaces/{namespace}"
#: the answer of each operation (path, method) whose route returns a mapping
SHAPES: dict[tuple[str, str], type[BaseModel]] = {
    ("/v1/health", "get"): Status,
    ("/v1/ready", "get"): Status,
    ("/v1/namespaces", "get"): NamespaceList,
    ("/v1/recipes", "get"): RecipeList,
    (NS + "/episodes", "post"): Added,
    (NS + "/episodes", "get"): EpisodeList,
    (NS + "/episodes", "delete"): Deleted,
    (NS + "/episodes/{id}", "get"): StoredEpisode,
    (NS + "/episodes/{id}", "put"): Updated,
    (NS + "/episodes/{id}/history", "get"): Versions,
    (NS, "delete"): NamespaceDeleted,
    (NS + "/search_many", "post"): Results,
    (NS + "/show/{name}", "get"): Nodes,
    (NS + "/build", "post"): Builds,
    (NS + "/retry", "post"): Queued,
    ("/v1/jobs/{job_id}", "get"): JobStatus,
    ("/v1/keys", "get"): KeyList,
    ("/v1/keys", "post"): NewKey,
    ("/v1/keys/{key_id}", "delete"): Revoked,
}


def install_shapes(schema: dict[str, Any]) -> None:
    """Point each operation of :data:`SHAPES` at its model, adding the models (and those
    they name) to the document's components. A name FastAPI has already written stands
    for the same model, so its schema is kept."""
    models = sorted(set(SHAPES.values()), key=lambda m: m.__name__)
    refs, defs = models_json_schema(
        [(m, "serialization") for m in models], ref_template="#/components/schemas/{model}"
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in defs.get("$defs", {}).items():
        components.setdefault(name, definition)
    for (path, method), model in SHAPES.items():
        operation = schema["paths"][path][method]
        content = operation["responses"]["200"].setdefault("content", {})
        content["application/json"] = {"schema": refs[(model, "serialization")]}


__all__ = ["SHAPES", "install_shapes"]
