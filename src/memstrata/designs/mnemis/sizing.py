"""The Mnemis reply bounds that follow the model (:data:`memstrata.llm.budgets.BOUNDS`).

The models in :mod:`memstrata.designs.mnemis.prompts` declare the small profile's
bounds, which the bundled 135M model was tuned with; a capable model's replies may hold
more names and facts and longer summaries. The paper gives none of these bounds (its
tag bounds, five descriptors of three words, stay as declared for every model), nor any
completion budget: those are in :data:`memstrata.llm.budgets.STAGES`.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from memstrata.llm.budgets import Budgets
from memstrata.llm.schema import resized

M = TypeVar("M", bound=BaseModel)

#: per model (by name), the fields each profile sizes and the bound that sizes them
SIZED = {
    "EntityNames": {"names": "mnemis.names"},
    "Duplicates": {"resolutions": "mnemis.names"},
    "Attributes": {"entities": "mnemis.names", "entities.summary": "mnemis.summary_chars"},
    "Facts": {"facts": "mnemis.facts", "facts.fact": "mnemis.fact_chars"},
    "FactResolutions": {"resolutions": "mnemis.fact_resolutions"},
}


def sized(model: type[M], budgets: Budgets | None) -> type[M]:
    """``model`` with the bounds of ``budgets``' profile (None: as declared, the small
    profile's), before :func:`~memstrata.designs.mnemis.prompts.naming` narrows it to
    the names asked about."""
    if budgets is None:
        return model
    fields = SIZED.get(model.__name__, {})
    return resized(model, {field: budgets.bound(name) for field, name in fields.items()})
