"""The REST routes, one router per resource, in the order the app serves them (which is
also the order of the OpenAPI document's paths)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute

from memstrata.service.routes import building, episodes, health, jobs, keys, namespaces, reading

ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    namespaces.router,
    episodes.router,
    reading.router,
    building.router,
    jobs.router,
    keys.router,
)


def add_routes(app: FastAPI, router: APIRouter) -> None:
    """Make ``router``'s routes the app's own, one by one. FastAPI's ``include_router``
    adds a router as one entry resolved per request, which what reads the app's routes
    (the guard's scopes, the Allow header of a 405, the OpenAPI statuses) would not see
    through."""
    for route in router.routes:
        assert isinstance(route, APIRoute), route
        app.add_api_route(
            route.path,
            route.endpoint,
            methods=sorted(route.methods or ()),
            name=route.name,
            tags=route.tags,
            dependencies=route.dependencies,
            response_model=route.response_model,
            include_in_schema=route.include_in_schema,
        )


def install(app: FastAPI) -> None:
    """Every router's routes, in :data:`ROUTERS` order."""
    for router in ROUTERS:
        add_routes(app, router)


__all__ = ["ROUTERS", "add_routes", "install"]
