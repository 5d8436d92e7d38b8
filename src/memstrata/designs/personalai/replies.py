"""Reading PersonalAI's replies: JSON or the paper's line formats, whatever was asked.

:func:`parse` accepts either format, so a model that answers in the other one is not
lost; :func:`ask` makes one call in the chosen format and reads its reply. A reply that
holds nothing readable raises ``LLMOutputError`` (and is asked again once).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from typing import cast

from pydantic import ValidationError

from memstrata.designs.personalai.prompts import (
    TRIPLET_WORDS,
    M,
    Output,
    Prompt,
    QAAnswer,
    Triplets,
    triplet_words,
)
from memstrata.llm.answers import ANSWER_LINE, in_words
from memstrata.llm.base import LLMClient
from memstrata.llm.salvage import TRUNCATING, Salvage, salvage
from memstrata.llm.schema import repair_json
from memstrata.llm.types import LLMOutputError


def parse(text: str, model: type[M]) -> M:
    """The answer as ``model``, from JSON or from the paper's line format."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:  # item by item, as on the JSON path: one item over a bound loses only itself
            return salvage(json.loads(stripped), model, Salvage())
        except (ValueError, ValidationError):
            pass
    try:
        value = _LINE_PARSERS[model.__name__](stripped)
        return model.model_validate(value)
    except (ValueError, ValidationError) as exc:
        raise LLMOutputError(f"cannot read a {model.__name__} answer: {exc}") from exc


def _theses_lines(text: str) -> dict[str, object]:
    items = []
    for line in re.split(r"\n|(?<=\])\s*[;,]?\s*(?=\S)", text):
        # Table 5's examples list theses on one line: "a, ['x']", "b ['y']."
        line = line.strip(' \t,;"').strip("-* ").strip()
        m = re.match(r"(.+?),?\s*(\[[^\[\]]*\])\s*[.\"']*$", line)
        if not m:
            continue
        nodes = _literal_list(m.group(2))
        items.append({"thesis": m.group(1).strip().strip('"'), "nodes": nodes})
    if not items and not _says_none(text):
        raise ValueError("no 'thesis, [nodes]' line")
    return {"theses": items}


def _triplets_lines(text: str) -> dict[str, object]:
    items = []
    for part in re.split(r"[;\n]", text):
        fields = [f.strip().strip("\"'[]()") for f in part.split(",")]
        fields = [f for f in fields if f]
        if len(fields) == 3:
            items.append(dict(zip(("subject", "relation", "object"), fields, strict=True)))
    if not items and not _says_none(text):
        raise ValueError("no 'subject, relation, object' triplet")
    # the prompt's bound, as on the JSON path: a longer triplet is left out
    return {"triplets": [t for t in items if triplet_words(*t.values()) <= TRIPLET_WORDS]}


def _replacements_lines(text: str) -> dict[str, object]:
    out = []
    for m in re.finditer(r"([^\[\]\";]+?)\s*<-\s*([^\[\]\";]+)", text):
        out.append({"new": m.group(1).strip(" ,'"), "outdated": m.group(2).strip(" ,'")})
    for m in re.finditer(r"\[?\s*\"?([^\[\]\"]+?)\"?\s*->\s*\"?([^\[\]\"]+?)\"?\s*\]", text):
        out.append({"outdated": m.group(1).strip(" ,'"), "new": m.group(2).strip(" ,'")})
    if not out and not _says_none(text):
        raise ValueError("no 'new <- old' or 'old -> new' pair and not []")
    return {"replacements": out}


_NONE = re.compile(
    r"\s*(\[\s*\]|$|[\"'*]*(nothing|none|no|there (are|is) no)\b[^\[\]{}<>]*$)", re.IGNORECASE
)


def _says_none(text: str) -> bool:
    """An empty answer: nothing, an empty list with or without a remark after it
    ("[]. Nothing to replace here.", as the paper's examples answer), or a sentence
    that says there is nothing ("No replacements needed.") and holds no list."""
    return _NONE.match(text) is not None


def _nothing(text: str, model: type[M]) -> M:
    """A reply that is not JSON but says there is nothing: the empty answer."""
    if not _says_none(text):
        raise LLMOutputError(f"cannot read a {model.__name__} answer: not JSON")
    return model()


def _all_too_long(text: str, repairs: Salvage) -> Triplets:
    """A JSON reply whose triplets the schema all dropped for the paper's word bound (but
    for items missing a field, as the last one of a reply cut off by the token limit) has
    none the paper allows: the empty answer, with the schema's counts. The schema alone
    would call it unusable and ask again, and a small model only repeats itself. Any
    other reply is read as :func:`_nothing` reads it."""
    attempt = Salvage()
    try:
        salvage(repair_json(text), Triplets, attempt)
    except LLMOutputError:  # no JSON at all
        pass
    except ValueError:  # nothing kept (Unusable and ValidationError are ValueErrors)
        if attempt.reasons["triplet_too_long"] and set(attempt.reasons) <= _OVER_BOUND:
            repairs.merge(attempt)
            return Triplets()
    return _nothing(text, Triplets)


#: what a triplet is dropped or cut for when its reply only broke the word bound
_OVER_BOUND = frozenset({"triplet_too_long", "missing_field"}) | TRUNCATING


#: answers that may be empty, and so may say so in words
_MAY_BE_EMPTY = frozenset({"Replacements", "Theses", "Triplets"})


def _qa_in_words(text: str, repairs: Salvage) -> QAAnswer:
    """A QA reply written in words where JSON was asked: the paper's ``[Answer]:`` line,
    else its final answer line (:func:`~memstrata.llm.answers.in_words`)."""
    if not text.lstrip().startswith(("{", "[")):
        attempt = Salvage()
        try:
            answer = salvage(_qa_lines(text), QAAnswer, attempt)
        except ValueError:  # no [Answer]: line (ValidationError is a ValueError too)
            pass
        else:
            repairs.merge(attempt)
            return answer
    return in_words(QAAnswer)(text, repairs)


def _in_words(model: type[M]) -> Callable[[str, Salvage], M] | None:
    """How a reply its schema cannot read is read: triplets all over the word bound as
    none, words saying there is nothing as the empty list, an answer line as the QA
    answer; otherwise it is not read (and asked again)."""
    if model is Triplets:
        return cast("Callable[[str, Salvage], M]", _all_too_long)
    if model.__name__ in _MAY_BE_EMPTY:
        return lambda text, _: _nothing(text, model)
    if model is QAAnswer:
        return cast("Callable[[str, Salvage], M]", _qa_in_words)
    return None


def _entities_lines(text: str) -> dict[str, object]:
    text = re.sub(r"^\[?key entit\w*\]?:?", "", text.strip(), flags=re.IGNORECASE)
    parts = [p.strip(" .\"'") for p in re.split(r"[|;,\n]", text)]  # Table 9: "a | b"
    parts = [p for p in parts if p]
    if not parts:
        raise ValueError("no entities")
    return {"entities": parts}


# Table 10's examples tag theirs "[Example Answer]:", which a model may copy
_ANSWER_TAG = re.compile(r"\[(?:example\s+)?answer\]\s*:", re.IGNORECASE)


def _qa_lines(text: str) -> dict[str, object]:
    """The answer after the *last* ``[Answer]:`` (or, without the tag, the last line that
    starts with "Answer:"): the reasoning before it may say "answer:" too."""
    marks = list(_ANSWER_TAG.finditer(text)) or list(ANSWER_LINE.finditer(text))
    answer = text[marks[-1].end() :].strip() if marks else ""
    if not answer:
        raise ValueError("no [Answer]: with an answer after it")
    head = text[: marks[-1].start()]
    cot = re.search(r"chain of thoughts\]?\s*:\s*(.*)", head, re.IGNORECASE | re.DOTALL)
    return {"chain_of_thoughts": cot.group(1).strip() if cot else "", "answer": answer}


def _literal_list(text: str) -> list[str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = [v.strip(" '\"") for v in text.strip("[]").split(",")]
    return [str(v).strip() for v in value if str(v).strip()] if isinstance(value, list) else []


_LINE_PARSERS = {
    "Theses": _theses_lines,
    "Triplets": _triplets_lines,
    "Replacements": _replacements_lines,
    "KeyEntities": _entities_lines,
    "QAAnswer": _qa_lines,
}


async def ask(
    llm: LLMClient, prompt: Prompt, model: type[M], output: Output, stage: str, max_tokens: int
) -> M:
    """One call in the chosen format; the answer parsed into ``model``."""
    messages, _ = prompt
    if output == "json":
        answer = await llm.structured(
            messages, model, stage=stage, max_tokens=max_tokens, fallback=_in_words(model)
        )
        assert isinstance(answer, model)
        return answer
    answer = await llm.read(
        messages, lambda text: parse(text, model), stage=stage, max_tokens=max_tokens
    )
    assert isinstance(answer, model)
    return answer
