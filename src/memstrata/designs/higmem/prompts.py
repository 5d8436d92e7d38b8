"""HiGMem's prompts (appendix C), written out in full from the paper's summaries.

Six prompt families, each a function returning ``(messages, reply model)``:

* construction: :func:`turn_analysis` (window + turn -> metadata), :func:`affiliation`
  (turn + candidate events -> event ids or ``NEW_EVENT``), :func:`event_refresh` (an
  event below τ: summary and fact sheet rewritten from its turns);
* retrieval: :func:`query_keywords`, :func:`event_prediction` (which turns inside the
  retrieved events can answer), :func:`evidence_filter` (which candidates to keep);
* answering: :func:`final_answer`, category-aware (temporal, adversarial, short phrase).

Items are shown with short ids (``T3``, ``E2``) that a small model copies reliably; the
caller maps them back. Completion budgets per stage are the model's
(:mod:`memstrata.llm.budgets`); lists and strings in the reply models are bounded so a
grammar-constrained model closes its JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from memstrata.llm.fence import fence, noted
from memstrata.llm.schema import list_bounded
from memstrata.llm.types import Message

NEW_EVENT = "NEW_EVENT"
NOT_MENTIONED = "Not mentioned in the conversation"

STAGES = {
    "analysis": "higmem.turn_analysis",
    "affiliation": "higmem.affiliation",
    "refresh": "higmem.event_refresh",
    "keywords": "higmem.query_keywords",
    "predict": "higmem.event_prediction",
    "filter": "higmem.filter",
    "answer": "higmem.answer",
}

Short = Annotated[str, Field(max_length=60)]
Id = Annotated[str, Field(max_length=12)]
Prompt = tuple[list[Message], type[BaseModel]]


class DatePhrase(BaseModel):
    phrase: Short
    # A model may write "7 May 2023" for all the format asked: the builder reads it
    # (notes.calendar_date), so the schema does not reject it.
    date: Annotated[str, Field(max_length=40, description="YYYY-MM-DD, YYYY-MM or YYYY")]


class TurnAnalysis(BaseModel):
    keywords: list[Short] = Field(default_factory=list, max_length=8)
    tags: list[Annotated[str, Field(max_length=30)]] = Field(default_factory=list, max_length=5)
    context: Annotated[str, Field(max_length=200)] = ""
    dates: list[DatePhrase] = Field(default_factory=list, max_length=4)
    fact: Annotated[str, Field(max_length=200)] = ""
    profile: list[Short] = Field(default_factory=list, max_length=4)
    links: list[Id] = Field(default_factory=list)


def turn_analysis_model(window: int) -> type[TurnAnalysis]:
    """The analysis of a turn read after ``window`` earlier turns: it links to those
    turns at most (the schema states the bound the prompt shows)."""
    return list_bounded(TurnAnalysis, "links", window)


class Affiliation(BaseModel):
    events: list[Id] = Field(default_factory=list, max_length=4)


def affiliation_model(max_join: int) -> type[Affiliation]:
    """The affiliation answer for a builder that joins a turn to ``max_join`` events at
    most: the schema states the bound the prompt states."""
    return list_bounded(Affiliation, "events", max_join)


class SheetLine(BaseModel):
    when: Annotated[str, Field(max_length=40)] = ""
    fact: Annotated[str, Field(max_length=160)]
    turns: list[Id] = Field(default_factory=list, max_length=6)


class EventSheet(BaseModel):
    summary: Annotated[str, Field(max_length=400)]
    facts: list[SheetLine] = Field(default_factory=list, max_length=12)


class QueryKeywords(BaseModel):
    keywords: list[Short] = Field(default_factory=list, max_length=8)


class Selection(BaseModel):
    ids: list[Id] = Field(default_factory=list)


def selection_model(shown: int) -> type[Selection]:
    """A pick among ``shown`` items: it may keep all of them and no more (the paper's
    filter decides the evidence set's size; only what was shown bounds it)."""
    return list_bounded(Selection, "ids", shown)


class FinalAnswer(BaseModel):
    answer: Annotated[str, Field(max_length=200)]


def _msgs(system: str, user: str) -> list[Message]:
    """Every prompt here but the keywords one shows stored text, fenced; the system
    prompt says so."""
    return [Message(role="system", content=noted(system)), Message(role="user", content=user)]


def _earlier(n: int) -> str:
    """How the analysis prompt names the ``n`` earlier turns it shows."""
    if n == 0:
        return "no earlier turns"
    return "the earlier turn W1" if n == 1 else f"the {n} earlier turns W1 to W{n}"


def turn_analysis(window: Sequence[str], turn: str) -> Prompt:
    """``window``: the previous turns, oldest first, each ``[time] speaker: text``; they
    are shown as ``W1``, ``W2``, ... so the analysis can link to them."""
    system = (
        "You analyse one turn of a long conversation so it can be stored in memory. You get "
        f"{_earlier(len(window))} of the same session as context, then the current turn "
        "(time, speaker, text). Describe the CURRENT turn only.\n"
        "- keywords: up to 8 specific words or names from the turn (people, places, "
        "objects, activities); no filler words.\n"
        "- tags: up to 5 short topic labels (e.g. family, career, hobby, health, travel).\n"
        "- context: one sentence saying who talks about what, using the earlier turns to "
        "resolve what 'it', 'that' or 'there' refer to.\n"
        "- dates: each relative or absolute time expression in the turn, up to 4 "
        "('yesterday', "
        "'last Saturday', 'next month', 'in 2022') with the calendar date it means, "
        "computed from the turn's time: YYYY-MM-DD, or YYYY-MM / YYYY when only the "
        "month or year is known. Empty when the turn names no time.\n"
        "- fact: the turn's new information as one short sentence with the speaker's "
        "name and absolute dates, or empty for greetings and small talk.\n"
        "- profile: up to 4 profile keys 'Person: attribute', one per person the turn "
        "reveals something lasting about, with what it is about (job, family, pets, home, "
        "hobby, likes, dislikes, health, beliefs, plans, identity), e.g. "
        "'Caroline: career', 'Melanie: pets'. Empty when the turn reveals nothing lasting "
        "about anyone.\n"
        "- links: the ids of the earlier turns (W1, W2, ...) that the current turn directly "
        "answers, continues or refers to; empty when none.\n"
        'Reply JSON: {"keywords": [...], "tags": [...], "context": "...", '
        '"dates": [{"phrase": "...", "date": "..."}], "fact": "...", '
        '"profile": ["Person: attribute"], "links": ["W1"]}'
    )
    shown = [f"W{i} {w}" for i, w in enumerate(window, start=1)]
    earlier = fence("\n".join(shown)) if shown else "(none: the turn opens the session)"
    user = f"Earlier turns:\n{earlier}\n\nCurrent turn:\n{fence(turn)}"
    return _msgs(system, user), turn_analysis_model(len(window))


def affiliation(
    turn: str, candidates: Sequence[tuple[str, str, bool]], max_join: int = 2
) -> Prompt:
    """``candidates``: (short id, summary and latest facts, is recent) per event;
    ``max_join``: the events a turn may join (the builder's bound, stated to the model)."""
    system = (
        "You organise a conversation memory into events: an event is one situation, plan "
        "or topic (a trip, a new job, a hobby, a family matter), with the turns that talk "
        "about it. Decide which of the candidate events the new turn belongs to.\n"
        "- Choose every event the turn adds to or continues (usually one, at most "
        f"{max_join}). Events marked (recent) were discussed just before the turn.\n"
        "- A turn that only reacts (thanks, praise, a greeting) belongs to the recent "
        "event it reacts to.\n"
        f'- If the turn starts a new subject, answer ["{NEW_EVENT}"].\n'
        'Reply JSON: {"events": ["E1", ...]}'
    )
    listed = "\n".join(
        f"{cid}{' (recent)' if recent else ''}: {text}" for cid, text, recent in candidates
    )
    user = f"Candidate events:\n{fence(listed)}\n\nNew turn:\n{fence(turn)}"
    return _msgs(system, user), affiliation_model(max_join)


def event_refresh(summary: str, turns: Sequence[tuple[str, str]]) -> Prompt:
    """``turns``: (short id, ``[time] speaker: text``) of every linked turn, in order."""
    system = (
        "You maintain one event of a conversation memory. Rewrite its summary and its fact "
        "sheet from all of its turns.\n"
        "- summary: two or three sentences: who, what, where, when, how it developed.\n"
        "- facts: a timeline of at most 12 short, self-contained facts (names instead of "
        "pronouns, "
        "absolute dates computed from the turn times), oldest first; each lists the ids "
        "of the turns it comes from. Keep concrete details (names, numbers, places, "
        "titles); skip small talk.\n"
        'Reply JSON: {"summary": "...", "facts": [{"when": "YYYY-MM-DD", "fact": "...", '
        '"turns": ["T1"]}]}'
    )
    listed = "\n".join(f"{tid} {text}" for tid, text in turns)
    current = fence(summary) if summary else "(new event)"
    user = f"Current summary: {current}\n\nTurns:\n{fence(listed)}"
    return _msgs(system, user), (EventSheet)


def query_keywords(question: str) -> Prompt:
    system = (
        "Turn a question about a past conversation into search keywords. Name what the "
        "answer is about: the people, the thing or event asked for, places and times "
        "(e.g. 'What kind of car does Evan drive?' -> Evan, car, drive, new car model). "
        'Up to 8 keywords. Reply JSON: {"keywords": [...]}'
    )
    return [
        Message(role="system", content=system),
        Message(role="user", content=f"Question: {question}"),
    ], QueryKeywords


def event_prediction(
    question: str, events: Sequence[tuple[str, Sequence[tuple[str, str]]]]
) -> Prompt:
    """``events``: (event summary and fact sheet, [(short turn id, turn text)]) per
    retrieved event; the fact sheet's lines name the turns they come from."""
    system = (
        "A memory holds events (summaries of parts of a conversation, each with a fact "
        "sheet: a timeline of facts that name the turns they come from), each linked to "
        "its turns. Read the question and each event's summary and facts, then pick the "
        "turns inside the events that are likely to contain the answer or a part of it. "
        "Use the summaries and facts to judge which events matter; pick few turns, only "
        'the promising ones. Reply JSON: {"ids": ["T1", ...]}, empty if no event is '
        "relevant."
    )
    blocks = []
    for i, (summary, turns) in enumerate(events, start=1):
        listed = "\n".join(f"  {tid} {text}" for tid, text in turns)
        blocks.append(f"Event {i}: {summary}\n{listed}")
    user = f"Question: {question}\n\n" + fence("\n\n".join(blocks))
    return _msgs(system, user), selection_model(sum(len(turns) for _, turns in events))


def evidence_filter(question: str, candidates: Sequence[tuple[str, str]]) -> Prompt:
    """``candidates``: (short id, ``[time] speaker: text``) per candidate turn."""
    system = (
        "You select evidence for answering a question about a past conversation. Keep "
        "only the candidate turns that help answer it:\n"
        "- the subject must match (the right person: a fact about someone else does not "
        "count);\n"
        "- the topic must match what is asked, not just share words;\n"
        "- respect time constraints in the question (a date, 'first', 'last', 'before').\n"
        "Keep every turn needed for a complete answer (several for 'which', 'how many' or "
        "lists), and nothing else. "
        'Reply JSON: {"ids": ["T1", ...]}, empty if none helps.'
    )
    listed = "\n".join(f"{tid} {text}" for tid, text in candidates)
    user = f"Question: {question}\n\nCandidates:\n{fence(listed)}"
    return _msgs(system, user), selection_model(len(candidates))


QuestionKind = Literal["temporal", "adversarial", "short"]


def final_answer(
    question: str, evidence: Sequence[str], kind: QuestionKind, candidate: str | None = None
) -> Prompt:
    """``evidence``: the final turns, ``[time] speaker: text``, in time order."""
    if kind == "temporal":
        rule = (
            "The question asks when. Infer the date from the dialogue timeline: each turn "
            "starts with its time, and relative words ('yesterday', 'last week') count "
            "from that time. Answer briefly with the date (e.g. '7 May 2023', 'June 2022', "
            "'the week before 9 June 2023')."
        )
    elif kind == "adversarial":
        rule = (
            f"Answer with exactly one of two options: the candidate answer "
            f"'{candidate}', or '{NOT_MENTIONED}'. Choose the candidate only if the turns "
            "say it about the person the question names."
        )
    else:
        rule = (
            "Answer with a short phrase, using the exact words of the turns whenever "
            f"possible. If the turns do not say, answer '{NOT_MENTIONED}'."
        )
    system = (
        "You answer a question about a long conversation from the retrieved turns only.\n"
        f"{rule}\n"
        'Reply JSON: {"answer": "..."}'
    )
    listed = fence("\n".join(evidence)) if evidence else "(no turns retrieved)"
    user = f"Turns:\n{listed}\n\nQuestion: {question}"
    return _msgs(system, user), (FinalAnswer)


# The paper's prompts (``higmem-paper``) ------------------------------------------------
# Appendix C gives each prompt family as a summary of its role, input and output (the
# full templates are not in the paper); sections 3.1-3.3 and appendix A name the two
# calls it does not summarise. Each prompt below is those sentences verbatim (italics and
# formulas as plain text), then the reply's JSON (the paper names its contents, not its
# fields) and the inputs. tests/designs/higmem/test_higmem_paper_prompts.py diffs them
# against the paper; the differences are listed and counted in docs/higmem.md.

PAPER_ANALYSIS = (
    "This prompt is used when a new dialogue turn is written into memory. Its input "
    "consists of a short sliding window of recent dialogue turns together with the "
    "current turn, including speaker, timestamp, and text. The model is asked to analyze "
    "the current turn semantically. The output is a structured JSON object containing "
    "metadata (e.g., keywords, context, timestamp and tags), profile-retrieval keys, and "
    "direct links. This prompt supports the turn layer by converting raw dialogue into a "
    "structured memory unit that can later participate in retrieval and event construction."
)
PAPER_AFFILIATION = (
    "This prompt determines whether a newly added turn should attach to one or more "
    "existing events or start a new event. Its input includes the new turn and a small set "
    "of top candidate events retrieved by similarity, together with optional recent event "
    "context. The model is asked to compare the new turn against these candidate events "
    "and output a structured affiliation decision, including selected event IDs or "
    "`NEW_EVENT`. This prompt is the main mechanism that builds the event layer online and "
    "groups related turns into higher-level memories rather than leaving the memory as a "
    "flat set of turns."
)
PAPER_REFRESH = (
    "This layer includes a short summary and a structured fact sheet. The fact sheet "
    "orchestrates the timeline and specific Event nodes by maintaining explicit index links "
    "to the corresponding Turn nodes in the bottom layer. We fully refresh both the summary "
    "and fact sheet."
)
PAPER_KEYWORDS = (
    "The system first analyzes Q to generate query keyword q_kw: q_kw = LLM(Q). "
    "Reason: LLM analyzes the full query, identifying retrieval goals: find a thing "
    "('car') related to an entity ('Evan')."
)
PAPER_PREDICTION = (
    "The LLM evaluates constituent Turn nodes T_E which are linked to each Event node E in "
    "E_semantic, performing reasoning to select specific Turn nodes capable of answering "
    "the query. Before this final filtering step, HiGMem also performs an event-local "
    "selection step that asks the model which turns inside a retrieved event are most "
    "likely to contain the answer."
)
PAPER_FILTER = (
    "This prompt family is used during question answering to reduce a broad candidate "
    "pool into the final evidence turns shown to the answer-generation model. Its input "
    "includes the user question and candidate memory items gathered from vector "
    "retrieval, event-based prediction, and optional link expansion. The model is asked to "
    "judge which candidate items are useful for answering the question, with special "
    "attention to subject matching, topical relevance, and temporal constraints. The "
    "output is a JSON object containing the IDs of candidate items judged relevant."
)
PAPER_ANSWER: dict[str, str] = {
    "temporal": "For temporal questions, the model is instructed to infer an approximate "
    "date from the dialogue timeline and answer briefly.",
    "adversarial": "For adversarial questions, the model is constrained to choose between "
    f"the candidate answer and '{NOT_MENTIONED}'.",
    "short": "For the remaining categories, the model is instructed to answer with a short "
    "phrase and to use exact words from the retrieved context whenever possible.",
}


class PaperTurnAnalysis(BaseModel):
    """Appendix C's analysis output: metadata (keywords, context, timestamp, tags),
    profile-retrieval keys and direct links; no date phrases and no fact (ours)."""

    keywords: list[Short] = Field(default_factory=list, max_length=8)
    context: Annotated[str, Field(max_length=400)] = ""
    timestamp: Annotated[str, Field(max_length=40)] = ""
    tags: list[Annotated[str, Field(max_length=30)]] = Field(default_factory=list, max_length=5)
    profile: list[Short] = Field(default_factory=list, max_length=4)
    links: list[Id] = Field(default_factory=list)


def paper_turn_analysis(window: Sequence[str], turn: str) -> Prompt:
    """Appendix C's turn analysis; ``window`` as :func:`turn_analysis` takes it."""
    system = (
        f"{PAPER_ANALYSIS}\n"
        'Reply JSON: {"keywords": [...], "context": "...", "timestamp": "...", '
        '"tags": [...], "profile": ["Person: attribute"], "links": ["W1"]}'
    )
    shown = [f"W{i} {w}" for i, w in enumerate(window, start=1)]
    earlier = fence("\n".join(shown)) if shown else "(none)"
    user = f"Recent turns:\n{earlier}\n\nCurrent turn:\n{fence(turn)}"
    return _msgs(system, user), list_bounded(PaperTurnAnalysis, "links", len(window))


def paper_affiliation(turn: str, candidates: Sequence[tuple[str, str, bool]]) -> Prompt:
    """Appendix C's affiliation: any subset of the candidates (E* ⊆ E_cand, Eq. 4) or
    ``NEW_EVENT``; ``candidates`` as :func:`affiliation` takes them."""
    system = (
        f'{PAPER_AFFILIATION}\nReply JSON: {{"events": ["E1", ...]}} or '
        f'{{"events": ["{NEW_EVENT}"]}}'
    )
    listed = "\n".join(
        f"{cid}{' (recent)' if recent else ''}: {text}" for cid, text, recent in candidates
    )
    user = f"Candidate events:\n{fence(listed)}\n\nNew turn:\n{fence(turn)}"
    return _msgs(system, user), affiliation_model(max(1, len(candidates)))


def paper_event_refresh(summary: str, turns: Sequence[tuple[str, str]]) -> Prompt:
    """Section 3.2's full refresh (|E| < τ) of an event's summary and fact sheet, worded
    from section 3.1's event layer (appendix C has no summary of it)."""
    system = (
        f"{PAPER_REFRESH}\n"
        'Reply JSON: {"summary": "...", "facts": [{"when": "YYYY-MM-DD", "fact": "...", '
        '"turns": ["T1"]}]}'
    )
    listed = "\n".join(f"{tid} {text}" for tid, text in turns)
    current = fence(summary) if summary else "(new event)"
    user = f"Current summary: {current}\n\nTurns:\n{fence(listed)}"
    return _msgs(system, user), EventSheet


def paper_query_keywords(question: str) -> Prompt:
    """Section 3.3's q_kw = LLM(Q), with appendix A's reasoning step (its figure 2)."""
    system = f'{PAPER_KEYWORDS}\nReply JSON: {{"keywords": [...]}}'
    return [
        Message(role="system", content=system),
        Message(role="user", content=f"Q: {question}"),
    ], QueryKeywords


def paper_event_prediction(
    question: str, events: Sequence[tuple[str, Sequence[tuple[str, str]]]]
) -> Prompt:
    """Eq. 6's Predict(T_E | Q, E), worded from section 3.3 and appendix C; ``events``
    as :func:`event_prediction` takes them."""
    system = f'{PAPER_PREDICTION}\nReply JSON: {{"ids": ["T1", ...]}}'
    blocks = []
    for i, (summary, turns) in enumerate(events, start=1):
        listed = "\n".join(f"  {tid} {text}" for tid, text in turns)
        blocks.append(f"Event {i}: {summary}\n{listed}")
    user = f"Question: {question}\n\n" + fence("\n\n".join(blocks))
    return _msgs(system, user), selection_model(sum(len(turns) for _, turns in events))


def paper_evidence_filter(question: str, candidates: Sequence[tuple[str, str]]) -> Prompt:
    """Appendix C's retrieval-stage filter (Eq. 8); ``candidates`` as
    :func:`evidence_filter` takes them."""
    system = f'{PAPER_FILTER}\nReply JSON: {{"ids": ["T1", ...]}}'
    listed = "\n".join(f"{tid} {text}" for tid, text in candidates)
    user = f"Question: {question}\n\nCandidates:\n{fence(listed)}"
    return _msgs(system, user), selection_model(len(candidates))


def paper_final_answer(
    question: str, evidence: Sequence[str], kind: QuestionKind, candidate: str | None = None
) -> Prompt:
    """Appendix C's category-specific final QA, without an abstain option the appendix
    does not give: only the adversarial variant names "Not mentioned in the
    conversation"."""
    system = f'{PAPER_ANSWER[kind]}\nReply JSON: {{"answer": "..."}}'
    listed = fence("\n".join(evidence)) if evidence else "(none)"
    user = f"Context:\n{listed}\n\nQuestion: {question}"
    if kind == "adversarial":
        user += f"\n\nCandidate answer: {candidate}"
    return _msgs(system, user), FinalAnswer
