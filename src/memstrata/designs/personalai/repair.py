"""PersonalAI after a delete or an update: no object, triplet or thesis keeps removed text.

The store's cascade took the records that rested on removed episodes only. Here, on both
tiers (no LLM call: what is left is re-derived from the remaining sources):

* an **object** named with words no remaining mention says (its name is the wording of
  its first mention) takes the wording of its first remaining mention;
* a **triplet** is ``subject relation object``: its text follows renamed objects; one
  whose object went, or whose words only the removed text had (an LLM triplet), goes;
* a **thesis** whose words only the removed text had goes; its object links drop objects
  that went;
* a triplet or thesis superseded only by records that went is current again.
"""

from __future__ import annotations

from memstrata.designs.personalai.graph import PAGraph
from memstrata.designs.personalai.records import Thesis
from memstrata.engine.removal import episodes_by_id, leaked, removed_terms, said_by
from memstrata.models import Fact
from memstrata.retrieval.text import content_terms
from memstrata.store.base import Repairs


def repair_graph(g: PAGraph, work: Repairs) -> None:
    """Apply the rules above to ``g`` in memory; the caller flushes."""
    removed = removed_terms(work)
    changed = set(work.changed)

    def suspect(rec_id: str, text: str) -> bool:
        return rec_id in changed or bool(removed & set(content_terms(text)))

    objects = [o for o in g.objects.values() if suspect(o.id, o.name)]
    triplets = [f for f in g.triplets.values() if suspect(f.id, f.fact)]
    theses = [t for t in g.theses.values() if suspect(t.id, t.text)]
    spans = [s for r in [*objects, *triplets, *theses] for s in r.sources]
    episodes = episodes_by_id(g.store, g.namespace, (s.episode for s in spans))
    renamed: set[str] = set()
    for obj in objects:
        kept = said_by(obj.sources, episodes)
        first = next((s for s in obj.sources if s.episode in episodes), None)
        if first is not None and leaked(obj.name, removed, kept):
            wording = episodes[first.episode].text[first.start : first.end].strip()
            if wording and wording != obj.name:
                obj.name = wording
                g.touch(obj)
                renamed.add(obj.id)
    for fact in list(g.triplets.values()):
        if fact.subject_id not in g.objects or fact.object_id not in g.objects:
            g.drop(fact.id)
            continue
        if {fact.subject_id, fact.object_id} & renamed:
            subj, obj = g.objects[fact.subject_id], g.objects[fact.object_id]
            fact.fact = f"{subj.name} {fact.relation} {obj.name}"
            g.touch(fact)
    for fact in triplets:
        if fact.id in g.triplets:
            names = [g.objects[e].name for e in (fact.subject_id, fact.object_id)]
            if leaked(fact.fact, removed, [*said_by(fact.sources, episodes), *names]):
                g.drop(fact.id)
    for th in list(g.theses.values()):
        if any(e not in g.objects for e in th.entity_ids):
            th.entity_ids = [e for e in th.entity_ids if e in g.objects]
            g.touch(th)
    for th in theses:
        if th.id in g.theses and leaked(th.text, removed, said_by(th.sources, episodes)):
            g.drop(th.id)
    current = set(g.triplets) | set(g.theses)
    retired: list[Fact | Thesis] = [*g.triplets.values(), *g.theses.values()]
    for rec in retired:
        if rec.replaced_by and not current & set(rec.replaced_by):
            _revive(g, rec)


def _revive(g: PAGraph, rec: Fact | Thesis) -> None:
    rec.invalid_at, rec.replaced_by = None, []
    g.touch(rec)
