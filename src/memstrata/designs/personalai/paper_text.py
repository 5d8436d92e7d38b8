"""Tables 5 and 7-10 as the paper prints them, for ``personalai-paper``
(:mod:`memstrata.designs.personalai.prompts` renders them with ``style = "paper"``).

The paper's text reached us through a conversion of its PDF tables that lost or garbled a
few things; those are repaired here, each listed with its reason in
tests/designs/personalai/test_personalai_paper_prompts.py (which diffs every rendering
against the unrepaired text) and in docs/personalai.md. Typos are the paper's and stay.
"""

#: Tables 7 and 8's system row
PAPER_REPLACE_SYSTEM = "You are a helpful assistant."
#: Table 10's empty contexts, spelled as its prompt and third example spell them
PAPER_EMPTY = "< Empty >"
#: Table 5 breaks off in rule 6 ("For example "kitchen contains apple"") before saying
#: how to write the theses: its example's second thesis and the reply's format are ours
PAPER_T5_END = (
    ', "apple is on kitchen table". [Extracted thesises] should be returned one per '
    "line, each as in the examples: the thesis, then the list of its nodes."
)

PAPER_T5_SYSTEM = (
    "Objective: The main goal is to meticulously gather information from input [Text] and "
    "organize this data into a clear, structured knowledge graph. Requirements for "
    "building a knowledge graph: 1. Entities must depict concepts, similar to Wikipedia "
    "nodes. Entities must not include verbs and any other words which described motion, "
    "properties and etc. All the entities must be the real world objects or abstract "
    "concept. Use a structured thesises format to capture data. For example, from [Text] "
    '"Albert Einstein, born in Germany, is known for developing the theory of relativity" '
    "[Extracted thesises] should be \"Albert Einstein was born in Germany, ['Albert "
    "Einstein', 'Germany', 'birth']\", \"Albert Einstein developed Theory of Relativity "
    "['Albert Einstein', 'developing', 'Theory of Relativity'].\" 2. Thesises MUST BE "
    "comprehension and consistent, so you can make them in form of sentense. You better "
    "make a much longer thesis than split it into two which inconsistent separately. For "
    'example, you better extract thesis "North exit from kitchen is blocked by door" than '
    '"kitchen has door" and "north exit is blocked by door" because without context of '
    'kitcher "north exit is blocked by door" can be related to every room at home. 3. You '
    "should extract only concrete knowledges, any assumptions must be described as "
    'hypothesis. For example, from [Text] "John have scored many points and potentially '
    'will be winner" [Extracted thesises] should be "John scored many points and '
    "potentially will be winner ['John', 'winner'].\" 4. Remember that nodes must be an "
    "atomary units while thesis can be more complex and long. 5. Do not miss important "
    'information. If [Text] is "book involves story about knight, who needs to kill a '
    'dragon", thesises should be "book involves knight", "knight needs to kill dragon". 6. '
    "Several thesises can be extracted, that contain information about the same node. For "
    'example "kitchen contains apple"'
)

PAPER_T7_USER = (
    "You will be provided with list of existing thesises and list of new thesises. The "
    "thesises denote facts about the environment where the player moves. The player takes "
    "actions and the environment changes, so some thesises from the list of existing "
    "thesises can be replaced with one of the new thesises. For example, the player took "
    'the item from the locker and the existing thesis "item is in locker" should be '
    'replaced with the new thesis "item is in inventory".\n'
    "Sometimes there are no thesises "
    'to replace: Example of existing thesises: ["Golden locker is open", "Room K is west '
    'of Room I", "Room K has exit to east"] Example of new thesises: ["Room T is north of '
    'Room N", "Room T has exit to south"] Example of replacing: []. Nothisg to replace here\n'
    "Sometimes "
    'several thesises can be replaced with one: Example of existing thesises: ["kitchen '
    'contains broom", "broom is on floor"] Example of new thesises: ["broom is in inventory"]\n'
    "Example "
    'of replacing: ["broom is in inventory <- kitchen contains broom", "broom is in '
    'inventory <- broom is on floor"]. Because broom changed location from the floor in '
    "the kitchen to players inventory.\n"
    "Ensure that thesises are only replaced if they "
    "contain redundant or conflicting information about the same aspect of an entity. "
    "Thesises should not be replaced if they provide distinct or complementary information "
    "about entities compared to the new thesises. Specifically, consider the "
    "relationships, properties, or contexts described by each thesis and verify that they "
    "align before replacement. If there is uncertainty about whether a thesis should be "
    "replaced, prioritize retaining the existing thesis over replacing it. When comparing "
    "existing and new thesises, if they refer to different aspects or attributes of "
    "entities, do not replace them. Replacements should only occur when there is semantic "
    "duplication between an existing thesis and a new thesis. Example of existing "
    "thesises: [\"apple need to be cooked\", 'knife used for cutting', 'apple has been "
    "sliced'] Example of new thesises: [\"apple is on table\", 'kitchen contains knife', "
    "'apple has beed grilled']\n"
    "Example of replacing: []. Nothing to replace here. These "
    "thesises describe different properties of items, so they should not be replaced.\n"
    "Another "
    "example of when not to replase existung thesises: Example of existing thesises: "
    '["brush is used for painting"] Example of new thesises: ["brush is in art class"] '
    "Example of replacing: []. Nothing to replace here. These thesises describe different "
    "properties of brush, so they should not be replaced.\n"
    "I repeat, do not replace "
    "thesises if they carry differend type of information about entities!!! It is better "
    "to leave a thesis, than to replace the one that has important information. Do not "
    "state that thesis needs to be replaced if you are not sure!! If you find thesis in "
    "Existing thesises which semantically duplicate some thesis in New thesises, replace "
    "such thesis from Existing thesises. However do not replace thesis if they refer to "
    "different things. For every thesis you want to replace you must find replacement from "
    "new thesises. If there is no clear replacement, you must not replace existing thesis.\n"
    "The "
    "replace existing triesis. The replacements should contain information about the same "
    "properties as the statements being replaced, but must include more recent "
    "information. You MUST save existing thesis if it contains unique or actual "
    'information about entities. For example, you MUST NOT replace thesis "running is done '
    'with sneakers" with "sneakers located at store". ####\n'
    "Generate only list of "
    "replacing, no descriptions are needed. Existing thesises: {ex_thesises}. New "
    "thesises: {new_thesises}. ####\n"
    "Warning! Replacing must be generated strictly in "
    'following format: ["new_thesis_1 <- outdated_thesis_1"; "new_thesis_2 <- '
    'outdated_thesis_2";], you MUST NOT include any descriptions in answer. Replacing:'
)

PAPER_T8_USER = (
    "You will be provided with list of existing triplets and list of new triplets. "
    'Triplets are in the following format: "subject, relation, object". The triplets '
    "denote facts about the environment where the player moves. The player takes actions "
    "and the environment changes, so some triplets from the list of existing triplets can "
    "be replaced with one of the new triplets. For example, the player took the item from "
    'the locker and the existing triplet "item, is in, locker" should be replaced with the '
    'new triplet "item, is in, inventory". Sometimes there are no triplets to replace: '
    'Example of existing triplets: "Golden locker, state, open"; "Room K, is west of, Room '
    'I"; "Room K, has exit, east". Example of new triplets: "Room T, is north of, Room N"; '
    '"Room T, has exit, south". Example of replacing: []. Nothisg to replace here '
    "Sometimes several triplets can be replaced with one:\n"
    "Example of existing triplets: "
    '"kitchen, contains, broom"; "broom, is on, floor". Example of new triplets: "broom, '
    'is in, inventory". Example of replacing: [["kitchen, contains, broom" -> "broom, is '
    'in, inventory"], ["broom, is on, floor" -> "broom, is in, inventory"]]. Because broom '
    "changed location from the floor in the kitchen to players inventory. Ensure that "
    "triplets are only replaced if they contain redundant or conflicting information about "
    "the same aspect of an entity. Triplets should not be replaced if they provide "
    "distinct or complementary information about entities compared to the new triplets. "
    "Specifically, consider the relationships, properties, or contexts described by each "
    "triplet and verify that they align before replacement. If there is uncertainty about "
    "whether a triplet should be replaced, prioritize retaining the existing triplet over "
    "replacing it. When comparing existing and new triplets, if they refer to different "
    "aspects or attributes of entities, do not replace them. Replacements should only "
    "occur when there is semantic duplication between an existing triplet and a new "
    "triplets: \"apple, to be, cooked\", 'knife, used for, cutting', 'apple, has been, "
    "sliced' Example of new triplets: \"apple, is on, table\", 'kitchen, contsins, "
    "knife', 'apple, has beed, grilled'. Example of replacing: []. Nothing to replace "
    "here. These triplets describe different properties of items, so they should not be replaced.\n"
    "Another "
    "example of when not to replase existung triplets: Example of existing triplets: "
    '"brush, used for, painting". Example of new triplets: "brush, is in, art class". '
    "Example of replacing: []. Nothing to replace here. These triplets describe different "
    "properties of brush, so they should not be replaced. I repeat, do not replace "
    "triplets, if they carry differend type of information about entities!!! It is better "
    "to leave a tripplet, than to replace the one that has important information. Do not "
    "state that triplet needs to be replaced if you are not sure!! If you find triplet in "
    "Existing triplets which semantically duplicate some triplet in New triplets, replace "
    "such triplet from Existing triplets. However do not replace triplets if they refer to "
    "different things. ####\n"
    "Generate only replacing, no descriptions are needed. Existing "
    "triplets: {ex_triplets}. New triplets: {new_triplets}. #### Warning! Replacing must "
    "be generated strictly in following format: [[outdated_triplet_1 -> actual_triplet_1], "
    "[outdated_triplet_2 -> actual_triplet_2],], you MUST NOT include any descriptions in "
    "answer. Replacing:"
)

PAPER_T9_SYSTEM = (
    "You are an expert system that can extract [Key entities] from a given [Text]. [Key "
    "entities] is a noun or an object like persone, device, company and etc. Extracted "
    'entities must be presented in the following format: "<entitie1> | <entitie2> | ... | '
    '<entitieN>", where <entitie...> is extracted [Key entities]. Your response only must '
    "contains extracted entities and do not include additional explanations of the "
    "obtained result. Examples of [Texts] and their corresponding extracted [Key entities] "
    "are listed below: #### Example 1 [Text]: Kayla has positive, negative or neutral "
    "opinion about video of Xiaomi 10Pro? [Key entites]: Kayla | opinion | video | Xiaomi "
    "10Pro #### Example 2 [Text]: Which device is better in battery life: Apple or k30u? "
    "[Key entites]: device | battery life | Apple | k30u. #### Example 3 [Text]: The "
    "majority of speakers have positive, neutral or negative sentiment about screen of "
    "Samsung? [Key entites]: speakers | sentiment | screen | Samsung ### Example 4 [Text]: "
    "Which people have positive opinion about video of Xiaomi 10Pro on 25.11.2020? [Key "
    "entites]: people | opinion | video | Xiaomi 10Pro | 25.11.2020"
)

PAPER_T10_SYSTEM = (
    "You are a system that is trying to generate an [Answer] for a given [Question], based "
    "on provided [Contexts] in a list format. If there is no relevant information in a "
    'given [Contexts] for generating the suitable answer or the [Contexts] is "< Empty >", '
    'then you should generate the following: "< NotEnoughtInfo >". Before generating the '
    "final answer you should present your [Chain of thoughts] that lead to the [Answer].\n"
    "The "
    "format you must match for generating response is presented below: [Chain of "
    "thoughts]: <chain-of-thoughts> [Answer]: <final-answer> ,where <chain-of-thoughts> is "
    "your reasoning path based on given [Question] and [Contexts] that concludes to the "
    "[Answer] and <final-answer> is your final [Answer] to the [Question].\n"
    "Examples of "
    "[Questions], [Contexts] and expected [Answers] are presented in a list below: #### "
    "Example 1 [Example Question]: Whose opinions from Anthony and Grace about devices are "
    "most similar to Faith's? [Example Contexts]:\n"
    " - Xiaomi (kind: device) opinion "
    "(person: Anthony; opinion: hard) maintenance point (kind: feature) - mate30pro (kind: "
    "device) opinion (person: Anthony; opinion: not as good as) signal (kind: feature) - "
    "iPhone (kind: device) opinion (person: Anthony; opinion: not as good as) signal "
    "(kind: feature) - Xiaomi 12 (kind: device) opinion (person: Grace; opinion: beat) "
    "charging speed (kind: feature) - Xiaomi (kind: device) opinion (person: Faith; "
    "opinion: problem) product control (kind: feature) - k30s (kind: device) opinion "
    "(person: Faith; opinion: not as good) film effect (kind: feature) - red rice (kind: "
    "device) opinion (person: Faith; opinion: not as good) film effect (kind: feature) "
    "[Example Chain of thoughts]: The task is to compare Anthony's and Grace's opinions to "
    'Faith\'s opinions about devices. Faith has two types of opinions: "problem" with the '
    'Xiaomi device and "not as good" with both k30s and red rice devices. We will look for '
    "similar expressions of dissatisfaction from Anthony and Grace. Grace's opinion about "
    'Xiaomi 12 is "beat", which is not similar to any of Faith\'s negative opinions. '
    'Anthony\'s opinions include "hard" for Xiaomi and "not as good as" for mate30pro and '
    'iPhone with respect to the signal feature. "Not as good as" matches Faith\'s "not as '
    'good". [Example Answer]: Anthony\n'
    "#### Example 2 [Example Question]: Whose opinions "
    "from Amanda and Arianna about manufacturers are most similar to Joshua's? [Example "
    "Contexts]: - Xiaomi 12 (kind: device) opinion (person: Grace; opinion: beat) charging "
    "speed (kind: feature) - Xiaomi (kind: device) opinion (person: Faith; opinion: "
    "problem) product control (kind: feature) - k30s (kind: device) opinion (person: "
    "Faith; opinion: not as good) film effect (kind: feature) [Example Chain of thoughts]: "
    "The task is to compare Amanda's and Arianna's opinions to Joshua's opinions about "
    "manufacturers. The provided contexts does not allow to determine which opinions from "
    "Amanda and Arianna about manufacturers are most similar to Joshua's. [Example "
    "Answer]: < NotEnoughtInfo > #### Example 3\n"
    "[Example Question]: The majority of "
    "speakers have positive, neutral or negative sentiment about signal of Apple? [Example "
    "Contexts]: < Empty > [Example Chain of thoughts]: The information for a give question "
    "is not provided. [Example Answer]: < NotEnoughtInfo >"
)
