"""The service's caps, defined once for REST, MCP and the remote client."""

from memstrata.verbs import MAX_PAGE

#: the most hits a search or an ask over the service returns (``k``), REST and MCP alike
MAX_K = 200
#: the most queries one ``search_many`` request carries (the client splits longer lists)
MAX_QUERIES = 100
#: the most episodes one add request carries (the client splits longer batches)
MAX_EPISODES = 10_000
#: the most ids one delete request carries (they travel in the URL; the client splits)
MAX_IDS = 100

__all__ = ["MAX_EPISODES", "MAX_IDS", "MAX_K", "MAX_PAGE", "MAX_QUERIES"]
