"""Reading what memory holds: search, a batch of searches, an answer, a name's
structures. The hot routes write their answer with pydantic once (:func:`_json`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel

from memstrata.engine import Answer
from memstrata.models import SearchResult
from memstrata.service.bodies import AskBody, SearchBody, SearchManyBody
from memstrata.service.routes.common import NS, Mem, read

router = APIRouter()


@router.post(NS + "/search", tags=["reading"], dependencies=[read], response_model=SearchResult)
async def search(namespace: str, body: SearchBody, memory: Mem) -> Response:
    """Best hits with the episodes they rest on, and the context they render to."""
    return _json(await memory.search(body.query, namespace=namespace, **body.options()))


@router.post(NS + "/search_many", tags=["reading"], dependencies=[read])
async def search_many(namespace: str, body: SearchManyBody, memory: Mem) -> Response:
    """A search per query, the queries embedded together (faster than one by one):
    ``{"results": [...]}`` in the order of ``queries``."""
    found = await memory.search_many(body.queries, namespace=namespace, **body.options())
    results = ",".join(r.model_dump_json() for r in found)
    return Response('{"results":[' + results + "]}", media_type="application/json")


@router.post(NS + "/ask", tags=["reading"], dependencies=[read], response_model=Answer)
async def ask(namespace: str, body: AskBody, memory: Mem) -> Response:
    """An answer citing episode ids, or ``abstained`` when memory does not hold it."""
    return _json(await memory.ask(body.question, namespace=namespace, **body.options()))


@router.get(NS + "/show/{name:segment}", tags=["reading"], dependencies=[read])
async def show(namespace: str, name: str, memory: Mem) -> dict[str, Any]:
    nodes = await memory.show(name, namespace=namespace)
    return {"nodes": [n.model_dump(mode="json") for n in nodes]}


def _json(model: BaseModel) -> Response:
    """A model as the response body, written once by pydantic: the hot reading routes
    skip the dump, re-validation and re-encoding a returned dict goes through (their
    ``response_model`` still documents the shape)."""
    return Response(model.model_dump_json(), media_type="application/json")
