"""Mnemis after a delete or an update: no entity, fact or category keeps removed text.

What the store's cascade already did: records resting only on removed episodes are gone,
the others lost those spans, and categories lost links to records that went. What is
left to do here, on both tiers (the re-derivation is extractive, so it needs no LLM and
cannot fail; the next LLM pass over an entity refines it again):

* **entities** that lost a source, or whose summary, name, aliases or tags hold a word
  only the removed text had (an LLM summary accumulates over the recent episodes too):
  the summary is re-derived from the remaining mentions as the heuristic tier writes
  it, a name or alias no remaining source says is replaced by the text of the first
  remaining mention (speakers keep theirs: it comes from the turns' metadata);
* **facts** whose text holds a word only the removed text had (an LLM fact read its
  recent episodes), or that name an entity that went, are dropped; a fact superseded
  by facts that all went is valid again;
* **categories**: one the removal took although members remain is put back; one left
  without members goes; one left with fewer than ``n`` members is dissolved into lone
  categories (the compression ratio); affected ones get their sources from their
  members again, and their member-derived summary and tags, or a name or LLM summary
  that only the removed text supported, are derived again from the members.
"""

from __future__ import annotations

from memstrata.designs.mnemis.base_graph import BaseGraphParams, _speaker_line
from memstrata.designs.mnemis.graph import SPEAKER_CATEGORY, Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy, _merge_sources
from memstrata.designs.mnemis.records import Category
from memstrata.engine.removal import episodes_by_id, leaked, removed_terms, said_by
from memstrata.models import Entity, Episode
from memstrata.retrieval.text import content_terms, sentences
from memstrata.store.base import Repairs


def repair_graph(g: Graph, hier: Hierarchy, work: Repairs, base: BaseGraphParams) -> None:
    """Apply the rules above to ``g`` in memory; the caller flushes."""
    removed = removed_terms(work)
    changed_entities = {i for i, k in work.changed.items() if k == "entity" and i in g.entities}
    touched: set[str] = {i for i, k in work.changed.items() if k == "category"}
    for cid in touched & set(g.categories):  # the store took a member from its list
        hier.mark_changed(g.categories[cid])
    suspects = changed_entities | {
        i for i, e in g.entities.items() if removed & set(content_terms(_entity_text(e)))
    }
    episodes = episodes_by_id(
        g.store, g.namespace, (s.episode for i in suspects for s in g.entities[i].sources)
    )
    for eid in sorted(suspects):
        ent = g.entities[eid]
        kept = said_by(ent.sources, episodes)
        if eid in changed_entities or leaked(_entity_text(ent), removed, kept):
            _rederive_entity(ent, episodes, removed, base)
            g.touch(ent)
            touched.update(c.id for c in g.categories.values() if eid in c.child_ids)
    _repair_facts(g, removed)
    touched |= _restore_categories(g, hier, work)
    touched |= _settle_categories(g, hier)
    touched |= {
        c.id
        for c in g.categories.values()
        if removed & set(content_terms(f"{c.name} {c.summary} {' '.join(c.tags)}"))
    }
    # lower layers first: a category renamed changes what its parents say of it
    while touched:
        cat = min(
            (g.categories[c] for c in touched if c in g.categories),
            key=lambda c: (c.layer, c.id),
            default=None,
        )
        if cat is None:
            break
        touched.discard(cat.id)
        if _rederive_category(g, hier, cat, removed):
            touched.update(cat.parent_ids)


def _entity_text(ent: Entity) -> str:
    return " ".join([ent.name, *ent.aliases, ent.summary, *ent.tags])


def _rederive_entity(
    ent: Entity, episodes: dict[str, Episode], removed: frozenset[str], p: BaseGraphParams
) -> None:
    spans = [s for s in ent.sources if s.episode in episodes]
    lines: list[str] = []
    size = 0
    for span in spans:
        ep = episodes[span.episode]
        bounds = next(
            ((a, b) for a, b in sentences(ep.text) if a <= span.start < b), (span.start, span.end)
        )
        line = _speaker_line(ep, ep.text[bounds[0] : bounds[1]])[: p.summary_chars]
        if line in lines:
            continue
        if len(lines) >= p.summary_sentences or (lines and size + len(line) > p.summary_chars):
            break
        lines.append(line)
        size += len(line)
    ent.summary = "\n".join(lines)
    kept = said_by(spans, episodes)
    if ent.entity_type != "speaker" and spans and leaked(ent.name, removed, kept):
        first = episodes[spans[0].episode].text[spans[0].start : spans[0].end].strip()
        if first and len(first) <= 80:
            ent.name = first
    ent.aliases = [a for a in ent.aliases if a != ent.name and not leaked(a, removed, kept)]
    ent.tags = [t for t in ent.tags if not leaked(t, removed, kept)] or (
        [ent.entity_type] if ent.entity_type else []
    )


def _repair_facts(g: Graph, removed: frozenset[str]) -> None:
    episodes: dict[str, Episode] | None = None
    for fid, fact in list(g.facts.items()):
        ends = [fact.subject_id, fact.object_id]
        if any(e not in g.entities for e in ends):
            _drop_fact(g, fid)
            continue
        if any(e not in g.entities for e in fact.entity_ids):
            fact.entity_ids = [e for e in fact.entity_ids if e in g.entities]
            g.touch(fact)
        if fact.replaced_by and not any(r in g.facts for r in fact.replaced_by):
            fact.invalid_at, fact.replaced_by = None, []
            g.touch(fact)
        if removed & set(content_terms(fact.fact)):
            if episodes is None:
                episodes = episodes_by_id(
                    g.store, g.namespace, (s.episode for f in g.facts.values() for s in f.sources)
                )
            names = [g.entities[e].name for e in fact.entity_ids or ends]
            if leaked(fact.fact, removed, [*said_by(fact.sources, episodes), *names]):
                _drop_fact(g, fid)


def _drop_fact(g: Graph, fid: str) -> None:
    fact = g.facts.pop(fid)
    for eid in fact.entity_ids or [fact.subject_id, fact.object_id]:
        g.facts_of.get(eid, set()).discard(fid)
    g.delete(fid)


def _restore_categories(g: Graph, hier: Hierarchy, work: Repairs) -> set[str]:
    """Categories the cascade took (they rest on their members' first mentions) while
    members remain are put back, linked both ways."""
    out: set[str] = set()
    alive = set(g.entities) | set(g.categories)
    dropped = [r for r in work.dropped if isinstance(r, Category)]
    alive |= {r.id for r in dropped}  # a dropped parent may come back too
    for rec in sorted(dropped, key=lambda c: c.layer):
        kids = [k for k in rec.child_ids if k in alive]
        if not kids:
            continue
        cat = rec.model_copy(update={"child_ids": kids, "sources": []})
        cat.parent_ids = [p for p in rec.parent_ids if p in alive]
        g.categories[cat.id] = cat
        if kids != rec.child_ids:
            hier.mark_changed(cat)
        g.touch(cat)
        out.add(cat.id)
    for cid in list(out):
        cat = g.categories[cid]
        for kid in cat.child_ids:
            sub = g.categories.get(kid)
            if sub is not None and cid not in sub.parent_ids:
                sub.parent_ids.append(cid)
                g.touch(sub)
        for pid in cat.parent_ids:
            parent = g.categories.get(pid)
            if parent is not None and cid not in parent.child_ids:
                parent.child_ids.append(cid)
                g.touch(parent)
                out.add(pid)
        cat.parent_ids = [p for p in cat.parent_ids if p in g.categories]
        cat.child_ids = [k for k in cat.child_ids if k in g.entities or k in g.categories]
    hier._vec.clear()
    return out


def _settle_categories(g: Graph, hier: Hierarchy) -> set[str]:
    """Empty categories go (upwards); one below the compression ratio is dissolved
    into lone categories, one per member. Returns the categories changed."""
    out: set[str] = set()
    n = hier.p.n
    again = True
    while again:
        again = False
        for cat in sorted(g.categories.values(), key=lambda c: c.layer):
            if cat.id not in g.categories:
                continue
            kids = [k for k in cat.child_ids if k in g.entities or k in g.categories]
            if kids != cat.child_ids:
                cat.child_ids = kids
                hier.mark_changed(cat)
                g.touch(cat)
                out.add(cat.id)
            if not kids:
                out.update(cat.parent_ids)
                hier._drop(cat)
                again = True
            elif cat.name != SPEAKER_CATEGORY and 1 < len(kids) < n:
                out.update(cat.parent_ids)
                lone = [hier._new_category(cat.layer, hier._name(k), [k]).id for k in kids]
                hier._replace(cat, lone)
                out.update(lone)
                again = True
    return {c for c in out if c in g.categories}


def _rederive_category(g: Graph, hier: Hierarchy, cat: Category, removed: frozenset[str]) -> bool:
    """Sources, name, summary and tags of ``cat`` from its members; True if renamed."""
    before = cat.name
    members = [g.entities.get(k) or g.categories.get(k) for k in cat.child_ids]
    present = [m for m in members if m is not None]
    cat.sources = []
    for m in present:
        cat.sources = _merge_sources(cat.sources, m.sources[:1])
    said = [f"{m.name} {m.summary} {' '.join(m.tags)}" for m in present]
    member_derived = not cat.summary or cat.summary.startswith(f"{cat.name}: ")
    if cat.name != SPEAKER_CATEGORY and leaked(cat.name, removed, said):
        names = [m.name for m in present]
        cat.name = hier._label(names, None, list(range(len(names)))) if names else cat.name
    if member_derived or leaked(f"{cat.summary} {' '.join(cat.tags)}", removed, said):
        cat.summary = ""
        hier.describe(cat)
    hier._invalidate(cat.id)
    g.touch(cat)
    return cat.name != before
