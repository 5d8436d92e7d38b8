"""The judges' prompts, as the papers give them; each returns the messages and the
pydantic model of the expected reply (JSON, so that a small model's reply still parses).

* ``locomo``: the CORRECT/WRONG judge used for LoCoMo in the memory literature (and by
  Mnemis, "the official judger prompt for each dataset"): generous on phrasing and on
  relative dates, a one-sentence reason, then the label.
* ``personalai``: PersonalAI appendix D, table 11 (system prompt with its four examples,
  user prompt with the three fields); the score is 0 or 1.
* ``mindgraph``: MindGraph appendix D.4 (strict on lists), its reply ``{"correct": bool,
  "reason": ...}``; asked only for answers its deterministic cascade (:mod:`.cascade`)
  does not accept.
* ``memtree``: MemTree appendix A.2.2, the binary accuracy prompt; 1 or 0.

The gold and the generated answer reach the judge fenced (:mod:`memstrata.llm.fence`):
a generated answer can repeat whatever a stored memory said, instructions included.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memstrata.llm.fence import FENCE_NOTE, fence, noted
from memstrata.llm.types import Message

JUDGES = ("locomo", "personalai", "mindgraph", "memtree")


class LabelVerdict(BaseModel):
    reasoning: str = Field(default="", max_length=400)
    label: Literal["CORRECT", "WRONG"]


class ScoreVerdict(BaseModel):
    score: Literal[0, 1]


class BinaryVerdict(BaseModel):
    """MemTree A.2.2's reply: '1' or '0'."""

    output: Literal[0, 1]


class CorrectVerdict(BaseModel):
    """MindGraph D.4's reply: a boolean and a brief reason."""

    correct: bool
    reason: str = Field(default="", max_length=600)


_LOCOMO = """Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold}
Generated answer: {predicted}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Reply with JSON: {{"reasoning": "...", "label": "CORRECT" or "WRONG"}}."""

_PERSONALAI_SYSTEM = """You are an expert that evaluating the quality of the answer to the question. You are given: a [Question], a [Ground Truth Answer] that is definitely correct, and a [Generated Answer] that you must score as 0 or 1. A score of 1 means that the [Generated Answer] is correct, a score of 0 means that the [Generated Answer] is incorrect. You need to compare the [Generated Answer] with the [Ground Truth Answer], taking into account the [Question] itself. The [Ground Truth Answer] and the [Generated Answer] can be of different lengths and contain different amounts of information, so consider whether the answer is given to the interrogative word from the question: if in the [Question] asking "who", then the [Generated Answer] must name a person, character, or animal; if in the [Question] asking "how many", then the answer must contain a number. Examples of [Questions], [Ground Truth Answer], [Generated Answer] and its corresponding [Rate] are listed below: #### Example 1 [Question]: Where does Everybody rank on the Hot Dance Club Songs chart? [Ground Truth Answer]: Everybody climbs to number 3 on the Hot Dance Club Songs chart. [Generated Answer]: 3rd place. [Score]: 1 #### Example 2 [Question]: Which area has many populous villages? [Ground truth answer]: In the area of the lands of Colchis. [Generated answer]: There are many populous villages in this area. [Score]: 0 #### Example 3 [Question]: How many volumes is the History of Rome published in? [Ground Truth Answer]: The history of Rome is published in four volumes. [Score]: 0 #### Example 4 [Question]: What kind of head did Michelangelo have? [Ground Truth Answer]: Michelangelo had a round head. [Generated Answer]: Michelangelo's head was round, his forehead was square, furrowed, and with pronounced brow ridges. [Score]: 1
Reply with JSON: {"score": 0 or 1}."""

_PERSONALAI_USER = """[Question]: {question} [Ground Truth Answer]: {gold} [Generated Answer]: {predicted}
[Score]:"""

_MINDGRAPH = """You are a strict but fair grading judge. Given a question, a gold (reference) answer, and a predicted answer, decide if the predicted answer is essentially correct -- i.e. it conveys the same core meaning as the gold answer, even if phrased differently, more verbose, or using synonyms.

Important: For list-type questions (e.g. "what animals...", "what techniques..."), the predicted answer must include ALL key items from the gold answer. A partial list that misses important items, or a list with substantially different items, should be marked incorrect.

Question: {question}
Gold answer: {gold}
Predicted answer: {predicted}

Reply with ONLY a JSON object:
{{ "correct": true/false, "reason": "brief explanation" }}"""


def locomo_judge(question: str, gold: str, predicted: str) -> tuple[list[Message], type[BaseModel]]:
    text = _LOCOMO.format(question=question, gold=fence(gold), predicted=fence(predicted))
    return [Message(role="user", content=f"{FENCE_NOTE}\n\n{text}")], LabelVerdict


def personalai_judge(
    question: str, gold: str, predicted: str
) -> tuple[list[Message], type[BaseModel]]:
    user = _PERSONALAI_USER.format(question=question, gold=fence(gold), predicted=fence(predicted))
    return [
        Message(role="system", content=noted(_PERSONALAI_SYSTEM)),
        Message(role="user", content=user),
    ], ScoreVerdict


def mindgraph_judge(
    question: str, gold: str, predicted: str
) -> tuple[list[Message], type[BaseModel]]:
    text = _MINDGRAPH.format(question=question, gold=fence(gold), predicted=fence(predicted))
    return [Message(role="user", content=f"{FENCE_NOTE}\n\n{text}")], CorrectVerdict


_MEMTREE = """Your task is to check if the predicted answer appropriately responds to the query in a similar way as the ground-truth answer.

Instructions:

- Output '1' if the predicted answer addresses the query similarly to the ground-truth answer. - Output '0' if it does not. - Only output either '0' or '1'. No explanations or extra text.

[ Query ]
{question}

[ Ground-Truth Answer ]
{gold}

[ Predicted Answer ]
{predicted}

[ Output ]
Reply with JSON: {{"output": 0 or 1}}."""


def memtree_judge(
    question: str, gold: str, predicted: str
) -> tuple[list[Message], type[BaseModel]]:
    text = _MEMTREE.format(question=question, gold=fence(gold), predicted=fence(predicted))
    return [Message(role="user", content=f"{FENCE_NOTE}\n\n{text}")], BinaryVerdict
