"""The OpenAPI document with every status an operation can answer, read off the routes:
FastAPI lists only success and 422, while the guard, the keys and the error mapping add
401/403 (a key), 404 (a path naming something), 400/408/413 (a body), 421, 429 and 503
(any request), 502 (a call to the model). Every error has the one JSON shape, and a
namespace in a path the pattern every store checks it against."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from memstrata.service.http import route_scope
from memstrata.service.shapes import install_shapes
from memstrata.store.names import NAMESPACE_PATTERN

ERROR = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "what went wrong, for programs"},
                "message": {"type": "string", "description": "what went wrong, for people"},
                "problems": {
                    "type": "array",
                    "description": "per field, for a request that does not match its schema",
                    "items": {"type": "object"},
                },
                "ids": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}
WHY = {
    400: "invalid input, malformed JSON or an unknown recipe (`invalid_input`, "
    "`malformed_json`, `invalid_config`)",
    401: "no valid API key (`unauthorized`)",
    403: "the key's scope is short, or it may not make such a key (`forbidden`)",
    404: "not found, or not reached by the key (`namespace_not_found`, `not_found`)",
    408: "the body did not arrive in time (`request_timeout`); the connection is closed",
    409: "ids stored with other content (`conflict`)",
    413: "the body is over the size limit (`too_large`)",
    422: "the request does not match its schema (`invalid_request`, with the problems)",
    421: "an open server asked under another host name (`misdirected_request`)",
    429: "too many requests in flight (`too_many_requests`, with Retry-After)",
    502: "the model answered with an error or unusable output (`llm_bad_reply`)",
    503: "the store or the model cannot be reached (`store_unavailable`, `store_busy`, "
    "`llm_unavailable`)",
}
#: tags whose operations may call the model
MODEL_TAGS = {"reading", "building", "episodes"}


def statuses(route: APIRoute, method: str) -> set[int]:
    """The error statuses an operation can answer besides 422."""
    if route.path == "/v1/health":
        return set()
    found = {421, 429, 503}
    if route_scope(route) is not None:
        found |= {401, 403}
    elif route.path != "/v1/ready":
        found.add(401)  # a presented key that is not valid
    if "{" in route.path:
        found |= {400, 404}
    if method in ("POST", "PUT", "PATCH"):
        found |= {400, 408, 413}
    if method in ("POST", "PUT") and "/episodes" in route.path:
        found.add(409)
    if MODEL_TAGS & set(route.tags or ()):
        found.add(502)
    return found


def _name_recipes(schema: Any, recipes: list[str]) -> None:
    """Every ``recipe`` property of the request bodies lists the recipes the store knows
    (the service answers 400 ``invalid_config`` to any other name)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "recipe" and isinstance(value, dict):
                for branch in value.get("anyOf", [value]):
                    if branch.get("type") == "string":
                        branch["enum"] = recipes
            else:
                _name_recipes(value, recipes)
    elif isinstance(schema, list):
        for item in schema:
            _name_recipes(item, recipes)


def install_openapi(app: FastAPI, recipes: list[str]) -> None:
    """Replace ``app.openapi`` by one that documents every status and names the
    ``recipes`` a body may ask for (built once)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            openapi_version=app.openapi_version,
            description=app.description,
            routes=app.routes,
        )
        schema.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR
        install_shapes(schema)
        _name_recipes(schema["components"]["schemas"], sorted(recipes))
        shape = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        for route in app.routes:
            if not isinstance(route, APIRoute) or not route.include_in_schema:
                continue
            for method in route.methods or ():
                operation = schema["paths"][route.path_format][method.lower()]
                for parameter in operation.get("parameters", ()):
                    if parameter["in"] == "path" and parameter["name"] == "namespace":
                        parameter["schema"]["pattern"] = NAMESPACE_PATTERN
                responses = operation["responses"]
                if "422" in responses:  # the service's own shape, not FastAPI's
                    responses["422"] = {"description": WHY[422], "content": shape}
                for status in sorted(statuses(route, method)):
                    responses.setdefault(
                        str(status), {"description": WHY[status], "content": shape}
                    )
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
