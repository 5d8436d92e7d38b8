"""One question's candidates as System-1's stages re-rank them (:mod:`.refine`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memstrata.models import Episode, Hit
from memstrata.retrieval import documents
from memstrata.retrieval.system1.moves import Ledger
from memstrata.retrieval.system1.params import System1Params
from memstrata.retrieval.system1.plan import QueryPlan
from memstrata.retrieval.system1.sessions import Said
from memstrata.store.base import EpisodeMeta, SearchFilters, Store


@dataclass
class Candidates:
    """What every stage reads and changes. A stage may add candidates (a reply, a turn
    of the speaker's thread): ``meta``, ``routes`` and ``base`` gain them in place, which
    is why they are the very dicts the search built, never copies."""

    store: Store
    params: System1Params
    namespace: str
    #: the search's filters; both routes applied them in the store already
    filters: SearchFilters | None
    plan: QueryPlan
    #: the candidates' positions, by key
    meta: dict[int, EpisodeMeta]
    #: the candidate lists (routes) each candidate was found by
    routes: dict[int, list[str]]
    #: the fused lists' scores, before any stage
    base: dict[int, float]
    #: the scores the stages change
    final: dict[int, float]
    #: the texts read so far (an :class:`Episode` when it was read whole)
    texts: dict[int, Said] = field(default_factory=dict)
    #: what moved each candidate (:class:`~.moves.Ledger`)
    ledger: Ledger = field(default_factory=Ledger)

    def best(self, n: int) -> list[int]:
        """The ``n`` best candidates by their present scores."""
        return sorted(self.final, key=lambda key: -self.final[key])[:n]

    def top(self, k: int) -> tuple[list[Hit], dict[int, Episode]]:
        """The ``k`` best as hits, and their episodes (by key, in order), read whole
        where only their texts were read."""
        top = self.best(k)
        whole = {key: e for key in top if isinstance(e := self.texts.get(key), Episode)}
        whole.update(self.store.episodes_by_key([key for key in top if key not in whole]))
        turns = {key: whole[key] for key in top if key in whole}
        hits = [
            documents.episode_hit(e, self.final[key], self.routes[key]) for key, e in turns.items()
        ]
        return hits, turns
