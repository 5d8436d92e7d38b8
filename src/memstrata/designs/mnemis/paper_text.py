"""Appendix D's texts in the paper's words: the hierarchy prompt's system prompt and
the Global Selection prompt of the ``mnemis-paper`` recipe (ours are in
:mod:`memstrata.designs.mnemis.prompts`), and the guidance on category granularity that
the hierarchy prompt's user turn shows in both wordings.

:mod:`memstrata.designs.mnemis.prompts` renders them;
``tests/designs/mnemis/test_mnemis_paper_prompts.py`` diffs the renderings against the
paper's text and gives the reason for each change.
"""

#: appendix D's ``sys_prompt`` as the paper gives it, its output format the one change: an
#: object with each category's description and tag (section 2.2: a category has an
#: entity's fields, and no other released prompt writes them)
CATEGORY_SYSTEM_PAPER = """You are an AI assistant specialized in semantic categorization of nodes.
# INSTRUCTIONS:

You are given a list of node names, each prefixed with an index, each followed with a brief description of the name (e.g., 1. dog: [domestic animal]).
Your task is to:

1. Group the nodes into semantically meaningful categories based on shared attributes, considering both inherent characteristics of the node names and the DESCRIPTIONS of the nodes, NOT relying solely on the DESCRIPTIONS.
    All EXISTING CATEGORIES are provided for you.
    - If a node's attribute matches an existing category, it should be added under that category.
    - If a node name has attributes that do not match any existing category, create a new category and add it.
    - The category name MUST NOT include the word "and" as a connector.
    Examples of INVALID categories:
    - "Food and Drinks"
    - "University and Courses"
    Examples of VALID categories:
    - "Food"
    - "Drinks"
    - "University"
    - "Courses"

2. Output each category as a dictionary entry where the key is the category name and the value is a list of node indexes (integers). Only refer to nodes by their indexes. Do not repeat node names.
    Output format:
    {"categories": [{"category": "xx", "description": "...", "tag": ["..."], "indexes": [0, 1, 2, 4]}, {"category": "xxx", "description": "...", "tag": ["..."], "indexes": [2, 3, 4]}]}
    The description is one short sentence saying what the members share.
    The tag is a list of descriptors (each descriptor maximum 3 words, maximum 5 descriptors) that concisely captures the nature or type of the node.
    Tag example:
    - Entity name: "Son"
    - Tag: ["Family member", "Happy kid", "Anime lover"]

3. A node CAN be assigned to MULTIPLE categories at the same time.
    Key points for multi-category classification:
    - Each item can be assigned to multiple categories based on shared attributes.
    - When multiple categories are formed for an item, select the minimal subset of features that are common across the grouped items.
    Examples for different hierarchy levels:
    Layer 1 (specific entities):
    - "Microsoft Research Asia" and "Microsoft Research Shanghai" share the same parent organization (Microsoft) and a similar research focus (AI). They are grouped under:
      - "Microsoft Research Labs"
      - "AI-focused Research Labs"
    - "Microsoft Research Asia" belongs to both "Microsoft Research Labs" and "NLP-focused Labs".
    Layer 2 (category nodes from Layer 1):
    - "Microsoft Research Labs" belongs to:
      - "Tech Company Labs"
      - "AI Research Organizations"
    - "University AI Labs" belongs to:
      - "Academic Institutions"
      - "AI Research Organizations"

    Layer 3 (higher-level abstractions):
    - "Tech Company Labs" belongs to:
      - "Commercial Organizations"
      - "Research Institutions"

    - "Academic Institutions" belongs to:
      - "Educational Organizations"
      - "Research Institutions"

    Layer 4 (top-level concepts):
    - "Research Institutions" belongs to:
      - "Knowledge Organizations"

    - "Commercial Organizations" belongs to:
      - "Economic Entities"

4. There must be NO leftover or ungrouped nodes. Single-member categories are allowed if necessary.

5. The node name "user" and any first-person references ("I", "me") MUST be categorized into one category called "Speaker".
"""

#: the guidance on category granularity in the hierarchy prompt's user turn, for
#: ``{layer}``, the layer ``{below}`` it and a few of that layer's categories
GUIDANCE = """<GUIDANCE ON CATEGORY GRANULARITY>
You are performing hierarchical semantic clustering from specific to abstract.

You are currently at Layer {layer}, where:
- Layer 1 contains the most specific, fine-grained categories.
- Higher layers should group lower-layer categories into broader, more abstract super-categories.

Example:

Layer 1:
- "Golden Retriever", "Poodle", "German Shepherd" -> "Dog breeds"
- "Persian Cat", "Siamese Cat" -> "Cat breeds"
- "Bengal Tiger", "Siberian Tiger" -> "Tiger subspecies"
- "Oak tree", "Pine tree" -> "Tree species"

Layer 2:
- "Dog breeds", "Cat breeds" -> "Pets"
- "Dog breeds", "Tiger subspecies" -> "Mammals"
- "Tiger subspecies" -> "Wild animals"
- "Tree species" -> "Trees"

Layer 3:
- "Pets", "Wild animals" -> "Animals"
- "Trees" -> "Plants"

Layer 4:
- "Animals", "Plants" -> "Living organisms"

Key points:
- Categories may belong to multiple parent categories.
- Do not merge categories that are too loosely related.

Your job at Layer {layer}:
- Merge semantically similar categories from Layer {below}.
- Each new category should reflect a shared attribute, domain, or higher-level concept.
- Multiple category assignments are allowed when justified.

Previous Layer {below} categories example:
{prev_example}
</GUIDANCE ON CATEGORY GRANULARITY>"""

#: appendix D's ``NODE_SELECTION_PROMPT_TEMPLATE`` as the paper gives it, up to its
#: user query; the answer line stands where the appendix's listing skips lines
SELECT_SYSTEM_PAPER = """You are analyzing a hierarchical knowledge graph to help answer a user query.

Select all nodes that could help answer the query. A node is helpful if it:

- Directly relates to the query;
- Covers a clearly relevant topic, concept, or category;
- Provides useful background or context;
- Contains user-specific information (e.g. interests, goals, constraints);
- Likely has sub-nodes that may be helpful.

Do not be overly strict: include nodes that might provide context or personalization, even if they seem partially redundant.

For each selected node:
- "name" is the node's name.
- "uuid" is the node's unique identifier.
- "get_all_children" is an boolean value. Set true only if you're confident all its sub-nodes are helpful.

Answer JSON: {"nodes": [{"name": ..., "uuid": ..., "get_all_children": <boolean>}]}"""
