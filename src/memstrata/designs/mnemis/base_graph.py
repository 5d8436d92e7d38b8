"""Mnemis base graph builder (paper section 2.1): entities, facts and episodic edges.

Episodic edges are the entities' provenance: every mention adds a span of the episode
it occurs in, so ``episode_idx`` is the list of distinct episodes in ``sources``.

Two tiers share de-duplication and writing:

* ``heuristic`` (this module's :class:`HeuristicBaseGraph`): mentions from
  :mod:`memstrata.designs.mnemis.extract`, extractive summaries (the first sentences that
  mention the entity), facts as sentences naming two or more entities (questions left
  out; a sentence stating something is a fact of that slot), a later value of a slot
  that holds one value superseding the earlier one
  (:mod:`memstrata.designs.mnemis.supersede`);
* ``llm`` (:mod:`memstrata.designs.mnemis.base_graph_llm`): the paper's extraction,
  reflection, de-duplication, attribute and edge prompts.

De-duplication, both tiers: a name whose key (case-folded, singular, determiners off)
is known is that entity, whatever its cosine. Otherwise the candidates are entities
sharing a name word (the full-text side) plus the nearest ``name_embedding``; the
heuristic tier merges when the cosine reaches ``merge_cosine`` and the names share a
word, or reaches ``merge_cosine_any`` alone. The values were chosen by reading the
merges they make on the LoCoMo dev split, where 0.90 began to join different people.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memstrata import nlp
from memstrata.designs.mnemis.extract import Mention, mentions, name_key
from memstrata.designs.mnemis.graph import Graph, fact_key
from memstrata.designs.mnemis.supersede import MENTIONED, Supersession, stated_in, value_mentions
from memstrata.embed.cache import embed_cached
from memstrata.models import Entity, Episode, Fact, Span
from memstrata.retrieval.record_index import matvec
from memstrata.retrieval.text import content_terms


@dataclass(frozen=True)
class BaseGraphParams:
    merge_cosine: float = 0.93
    merge_cosine_any: float = 0.97
    summary_sentences: int = 3
    summary_chars: int = 400


def _speaker_line(ep: Episode, text: str) -> str:
    return f"{ep.speaker}: {text}" if ep.speaker else text


class HeuristicBaseGraph:
    """LLM-free base graph builder; one call handles a batch of episodes."""

    def __init__(self, graph: Graph, params: BaseGraphParams | None = None) -> None:
        self.graph = graph
        self.params = params or BaseGraphParams()
        self.supersession = Supersession(graph)

    def add(self, episodes: list[Episode]) -> list[str]:
        """Fold episodes into the graph; returns the ids of entities created."""
        g = self.graph
        speakers = {ep.speaker for ep in episodes if ep.speaker}
        # A speaker new to the graph (or an entity that turns out to be one) is returned
        # with the created entities, so an existing hierarchy places it under Speaker.
        created: list[str] = [
            eid for eid in (self._speaker(name) for name in sorted(speakers)) if eid
        ]
        known = frozenset(n.lower() for n in speakers)
        nlp.analyse([ep.text for ep in episodes])  # one pass of the pipeline for the batch
        said = self.supersession.said(episodes)
        parsed = [(ep, mentions(ep.text, ep.speaker, known)) for ep in episodes]
        for ep, sents in parsed:
            value_mentions(ep.text, sents, said[ep.id])
        new_names: dict[str, str] = {}
        for _, sents in parsed:
            for s in sents:
                for m in s.mentions:
                    if m.key not in g.by_key and not m.speaker:
                        new_names.setdefault(m.key, m.name)
        vecs = embed_cached(g.store, g.embedder, list(new_names.values()))
        name_vec = dict(zip(new_names, vecs, strict=True))
        for ep, sents in parsed:
            for s in sents:
                ids: list[str] = []
                of_mention: dict[int, str] = {}
                sentence = ep.text[s.start : s.end]
                for n, m in enumerate(s.mentions):
                    ent, is_new = self._resolve(m, ep, name_vec.get(m.key))
                    if is_new:
                        created.append(ent.id)
                    g.add_span(ent, Span(episode=ep.id, start=m.start, end=m.end))
                    self._summarise(ent, _speaker_line(ep, sentence))
                    g.touch(ent)
                    of_mention[n] = ent.id
                    if ent.id not in ids:
                        ids.append(ent.id)
                stated = stated_in(sentence, said[ep.id], s.mentions, of_mention, g)
                if stated is not None:
                    ids = [stated[1], *(i for i in ids if i != stated[1])]
                if stated is not None or (len(ids) >= 2 and not sentence.rstrip().endswith("?")):
                    self._fact(ep, s.start, s.end, ids, stated)
        for changed in self.supersession.apply(episodes):
            g.touch(changed)
        return created

    def _resolve(self, m: Mention, ep: Episode, vec: np.ndarray | None) -> tuple[Entity, bool]:
        g = self.graph
        key = m.key
        if key in g.by_key:
            return g.entities[g.by_key[key]], False
        if vec is not None:
            match = self._similar(m.name, vec)
            if match is not None:
                g.alias(key, match.id)
                if m.name not in match.aliases and m.name != match.name:
                    match.aliases.append(m.name)
                return match, False
        kind = m.kind
        ent = Entity(
            namespace=g.namespace,
            name=m.name,
            entity_type=kind,
            tags=[kind],
        )
        g.add_entity(ent)
        if vec is not None:
            g._name_vecs[ent.id] = vec
        return ent, True

    def _speaker(self, name: str) -> str | None:
        """Speakers are entities of their own kind, whatever mention came first. Returns
        the entity's id when it is new or has just become a speaker."""
        g = self.graph
        eid = g.by_key.get(name_key(name))
        if eid is None:
            ent = Entity(namespace=g.namespace, name=name, entity_type="speaker", tags=["speaker"])
            return g.add_entity(ent).id
        if g.entities[eid].entity_type != "speaker":
            g.entities[eid].entity_type = "speaker"
            g.entities[eid].tags = ["speaker"]
            g.touch(g.entities[eid])
            return eid
        return None

    def _similar(self, name: str, vec: np.ndarray) -> Entity | None:
        """Best de-duplication candidate over name words and name embedding, if close."""
        g = self.graph
        pool, matrix = g.entity_index()
        if not pool:
            return None
        sims = matvec(matrix, vec)
        best = int(np.argmax(sims))
        cand = g.entities[pool[best]]
        cos = float(sims[best])
        shares = bool(set(content_terms(name)) & set(content_terms(cand.name)))
        p = self.params
        if cos >= p.merge_cosine_any or (shares and cos >= p.merge_cosine):
            return cand
        return None

    def _summarise(self, ent: Entity, line: str) -> None:
        p = self.params
        have = ent.summary.split("\n") if ent.summary else []
        if len(have) >= p.summary_sentences or line in have:
            return
        if len(ent.summary) + len(line) > p.summary_chars and have:
            return
        ent.summary = "\n".join([*have, line[: p.summary_chars]])

    def _fact(
        self,
        ep: Episode,
        start: int,
        end: int,
        ids: list[str],
        stated: tuple[str, str, str] | None = None,
    ) -> None:
        """A fact per sentence naming two entities or more (questions ask, state nothing)
        or stating something (its relation is the slot; see
        :mod:`memstrata.designs.mnemis.supersede`)."""
        g = self.graph
        text = _speaker_line(ep, ep.text[start:end])
        span = Span(episode=ep.id, start=start, end=end)
        known = g.by_fact.get(fact_key(text))
        if known is not None:
            if g.add_span(g.facts[known], span):
                g.touch(g.facts[known])
            return
        relation, subject, obj = stated or (MENTIONED, ids[0], ids[1])
        g.add_fact(
            Fact(
                namespace=g.namespace,
                subject_id=subject,
                object_id=obj,
                entity_ids=[subject, obj, *(i for i in ids if i not in (subject, obj))],
                relation=relation,
                fact=text,
                valid_at=ep.occurred_at,
                sources=[span],
            )
        )


__all__ = ["BaseGraphParams", "HeuristicBaseGraph", "name_key"]
