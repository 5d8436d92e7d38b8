"""memstrata as a service: the REST app (:mod:`memstrata.service.app`)."""

from memstrata.service.app import MAX_BODY, create_app

__all__ = ["MAX_BODY", "create_app"]
