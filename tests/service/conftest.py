"""Fixtures of the service tests (see service_helpers)."""

from service_helpers import served

__all__ = ["served"]
