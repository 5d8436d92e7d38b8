"""MindGraph (a question-aware concept graph with character-level provenance, built
chunk by chunk, answered through a tool loop): sections 3-4 and appendix D of the paper.

Two ways to use it:

* **reader** (``memstrata read FILE --question ...``, ``Memory.read``): one long
  document, one question: :mod:`.reader`;
* **memory** (the ``mindgraph`` recipe): a question-agnostic graph over a namespace,
  kept current as episodes arrive: :mod:`.builder`, :mod:`.route`; ``ask`` runs the
  same tool loop over the graph of the turns a search found: :mod:`.memory_answer`.

Where things are: :mod:`.graph` (nodes, edges, the four operations and their
validation), :mod:`.provenance` (quotes to spans), :mod:`.heuristic` (the LLM-free
build), :mod:`.llm_build` (the D.1 build loop), :mod:`.communities` (Leiden subgraphs and
cached reports), :mod:`.answer` (the tool loop, evidence windows, compaction),
:mod:`.prompts` (D.1-D.3 verbatim), :mod:`.recipe`, :mod:`.show`, :mod:`.view` (the explorer).
"""

from __future__ import annotations

from memstrata.designs.mindgraph.builder import MindGraphBuilder
from memstrata.designs.mindgraph.memory_answer import MindGraphMemoryAnswerer
from memstrata.designs.mindgraph.reader import MindGraphReader
from memstrata.designs.mindgraph.recipe import RECIPES
from memstrata.designs.mindgraph.records import Community, ConceptEdge, ConceptNode
from memstrata.designs.mindgraph.route import MindGraphRoute
from memstrata.designs.mindgraph.show import show
from memstrata.designs.mindgraph.view import VIEWS
from memstrata.engine.contracts import Design

design = Design(
    name="mindgraph",
    builders=[MindGraphBuilder],
    routes=[MindGraphRoute],
    answerers=[MindGraphMemoryAnswerer],
    recipes=RECIPES,
    show=show,
    views=VIEWS,
    records=(ConceptNode, ConceptEdge, Community),
    reader=MindGraphReader,
    description="Question-aware concept graph with provenance; tool-loop answers.",
)
