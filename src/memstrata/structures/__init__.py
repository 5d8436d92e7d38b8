"""Builders that turn episodes into structures, one module per paper's structure.

* :mod:`.extract` — LLM-free sentence, entity-mention and fact extraction;
* :mod:`.graph` — the Mnemis base graph in memory (entities, facts, categories);
* :mod:`.base_graph` — the Mnemis base graph builder, ``heuristic`` and ``llm`` tiers;
* :mod:`.hierarchy` — the Mnemis category hierarchy, full build and incremental updates;
* :mod:`.mnemis` — the resumable ``build`` that runs both over a namespace.
"""
