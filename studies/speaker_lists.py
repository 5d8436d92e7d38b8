"""Would a question about a speaker gain from BM25 over her own turns, as a list of its own?

    python -m studies.speaker_lists WEIGHT bench qa FILE --format F \\
        --recipes default --no-answers --no-cache --out DIR

System-1 reads a question about one speaker (or two) in her voice and adds the dense
hits of that reading among her own turns to the fusion; its BM25 list is over everyone's
turns, with hers raised after the fusion. Here the question's BM25 terms are also
searched among each named speaker's own turns, and each such list joins the fusion,
weighted WEIGHT.
"""

from __future__ import annotations

from memstrata.retrieval import system1
from memstrata.store.base import SearchFilters
from studies import extra_lists


def install(weight: float) -> None:
    def make(
        route: system1.EpisodeRoute,
        namespace: str,
        queries: list[str],
        filters: SearchFilters | None,
    ) -> list[extra_lists.Lists]:
        speakers = route.store.speakers(namespace)
        out: list[extra_lists.Lists] = []
        for q in queries:
            plan = system1.plan_query(q, speakers, route.params)
            lists: extra_lists.Lists = []
            if 1 <= len(plan.speakers) <= 2:
                for speaker in plan.speakers:
                    only = (filters or SearchFilters()).model_copy(update={"speakers": [speaker]})
                    hits = route.store.bm25_episodes(namespace, plan.terms, 100, only)
                    lists.append(([k for k, _ in hits], weight))
            out.append(lists)
        return out

    extra_lists.install(make)


def main() -> None:
    extra_lists.weighted_bench(__doc__ or "", install)


if __name__ == "__main__":
    main()
