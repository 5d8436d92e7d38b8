"""What the routers of the REST app share: what the app serves, the memory a route
reads, the scope a route declares (which :class:`~memstrata.service.http.Guard` reads
before the app runs) and the path of a namespace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request

from memstrata.config import Config
from memstrata.errors import NamespaceNotFoundError
from memstrata.memory import AsyncMemory
from memstrata.service import keys
from memstrata.service.http import KEY, SCOPE_ATTR
from memstrata.store.base import ApiKey

#: a namespace is any printable text, "/" included: one path segment (a "/" in it sent as
#: %2F, see :class:`~memstrata.service.http.Segment`)
NS = "/v1/namespaces/{namespace:segment}"


@dataclass
class Served:
    """What one app serves: the configuration its memory opens with, the address it
    binds, its build workers, its MCP server (None without the SDK), and the memory,
    opened in the app's lifespan."""

    config: Config
    host: str
    workers: int
    agent: Any | None = None
    memory: AsyncMemory | None = None

    def mem(self) -> AsyncMemory:
        if self.memory is None:
            raise RuntimeError("the app's memory is opened when the app starts")
        return self.memory


def served(app: FastAPI) -> Served:
    found: Served = app.state.served
    return found


def memory(request: Request) -> AsyncMemory:
    """The app's memory, for a route to read (a dependency)."""
    return served(request.app).mem()


#: a route's parameter that receives the app's memory
Mem = Annotated[AsyncMemory, Depends(memory)]


async def caller(request: Request, scope: str) -> ApiKey | None:
    """The request's key (None while the store is open); 401 or 403 as it deserves."""
    app = served(request.app)
    loopback = keys.loopback(app.host)
    text = keys.carried(request.headers)
    return await app.mem().keys.check(text, scope, bound_to_loopback=loopback)


def scoped(scope: str) -> Any:
    """The dependency that declares a route's scope: the guard reads it and checks the
    key, and the route receives the key the guard found."""

    async def check(request: Request) -> ApiKey | None:
        if KEY in request.scope:
            return request.scope[KEY]
        key = await caller(request, scope)  # not behind the guard: check here
        namespace = request.path_params.get("namespace")
        if key is not None and namespace is not None and not key.reaches(namespace):
            raise NamespaceNotFoundError(namespace)  # as if it did not exist
        return key

    setattr(check, SCOPE_ATTR, scope)
    return Depends(check)


read, write, admin = scoped("read"), scoped("write"), scoped("admin")


def key_of(request: Request) -> ApiKey | None:
    """The key the guard let this request in with (None: the store is open)."""
    found: ApiKey | None = request.scope.get(KEY)
    return found


__all__ = ["NS", "Mem", "Served", "admin", "caller", "key_of", "read", "served", "write"]
