"""The designs that ship with memstrata, one package each.

This list is the one place built-in designs are declared; each module exposes
``design``, a :class:`memstrata.engine.Design` with its builders, routes, answerers and
recipes. Third-party designs register the same object through the ``memstrata.designs``
entry-point group instead, and need nothing from this list.
"""

BUILTIN = (
    "memstrata.designs.system1",
    "memstrata.designs.mnemis",
    "memstrata.designs.memtree",
    "memstrata.designs.higmem",
    "memstrata.designs.mindgraph",
    "memstrata.designs.personalai",
)
