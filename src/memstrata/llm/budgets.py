"""How much room each LLM stage gets, sized to the configured model.

The budgets of the llm tier were first sized for the bundled 135M GGUF model: a model
that rambles until its ``max_tokens`` unless every reply is short and every list
bounded. A capable chat model behind an OpenAI-compatible server writes longer, whole
replies, and cutting them to the small model's size loses facts silently. So the
budgets depend on a *profile* and on the model's limits:

* ``small``: the bundled model (4,096-token context, 2,048 tokens out); the budgets the
  designs were tuned with, unchanged. The default of the ``gguf`` backend.
* ``chat``: a capable chat model (128K context, 16K tokens out). The default of the
  ``openai`` backend.

``llm.context_tokens`` and ``llm.max_output_tokens`` override the profile's limits; a
stage never gets more than the output limit. Each entry of :data:`STAGES` (completion
budgets) and :data:`BOUNDS` (schema bounds) says where its numbers come from: ours
unless a paper states one. ``memstrata config --profiles`` prints the table of
docs/engine.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memstrata.errors import ConfigError


@dataclass(frozen=True)
class Limits:
    """A model's context window and the most tokens it writes in one reply."""

    context_tokens: int
    max_output_tokens: int


PROFILES: dict[str, Limits] = {
    "small": Limits(context_tokens=4096, max_output_tokens=2048),
    "chat": Limits(context_tokens=131_072, max_output_tokens=16_384),
}


@dataclass(frozen=True)
class Entry:
    """One stage's figure per profile, and where it comes from."""

    small: int
    chat: int
    source: str = "ours"

    def value(self, profile: str) -> int:
        return self.small if profile == "small" else self.chat


_SMALL_TUNED = "ours: what a whole reply within the small bounds needs on the bundled model"
_PAPER_PREDICT = (
    "chat: the num_predict the paper states (2,048, appendix D, with the judge's settings); "
    "small: ours"
)

#: completion budget (tokens) per stage: a ceiling on the reply, which a model that is
#: done stops short of; a stage whose reply lists what it was shown adds room per item
#: (:func:`memstrata.llm.schema.list_reply_tokens`)
STAGES: dict[str, Entry] = {
    "mnemis.entities": Entry(120, 1024, _SMALL_TUNED),
    "mnemis.entities_reflect": Entry(80, 1024, _SMALL_TUNED),
    "mnemis.dedupe": Entry(160, 1024, _SMALL_TUNED),
    "mnemis.attributes": Entry(360, 8192, _SMALL_TUNED),
    "mnemis.facts": Entry(240, 8192, _SMALL_TUNED),
    "mnemis.facts_reflect": Entry(120, 4096, _SMALL_TUNED),
    "mnemis.facts_resolve": Entry(160, 2048, _SMALL_TUNED),
    "mnemis.hierarchy": Entry(720, 4096, _SMALL_TUNED),
    "mnemis.describe": Entry(480, 4096, _SMALL_TUNED),
    "mnemis.select": Entry(320, 1024, "ours, plus room for every node shown"),
    "mnemis.rerank": Entry(200, 512),
    "personalai.memorize": Entry(768, 2048, _PAPER_PREDICT),
    "personalai.qa": Entry(400, 2048, _PAPER_PREDICT),
    "higmem.turn_analysis": Entry(300, 1024),
    "higmem.affiliation": Entry(60, 256),
    "higmem.event_refresh": Entry(400, 2048),
    "higmem.query_keywords": Entry(60, 256),
    "higmem.event_prediction": Entry(120, 512, "ours, plus room for every turn shown"),
    "higmem.filter": Entry(120, 512, "ours, plus room for every candidate shown"),
    "higmem.answer": Entry(80, 512),
    "mindgraph.build": Entry(2048, 16_384, "ours (the paper sets none): chat, the output limit"),
    "mindgraph.answer": Entry(1024, 4096, "ours, per tool round"),
    "mindgraph.report": Entry(700, 2048),
    "memtree.aggregate": Entry(1024, 4096, "ours; the paper reports deep nodes near 800 tokens"),
    "memtree.answer": Entry(200, 1024),
    "answer.grounded": Entry(200, 1024, "ours: an answer and the ids it cites"),
    "fusion.rerank": Entry(200, 1024, "ours: the order of the candidates shown"),
    "judge": Entry(160, 1024, "ours: a verdict with one sentence of reasoning"),
}

#: schema bounds (items of a list, characters of a string) that are not a paper's; the
#: papers' own bounds (Mnemis's five tags of three words, PersonalAI's seven-word
#: triplets, MindGraph's 5-10 findings) stay in the designs' models for every profile
BOUNDS: dict[str, Entry] = {
    "mnemis.names": Entry(12, 32, "ours: entity names, de-duplications and attributes a reply"),
    "mnemis.facts": Entry(6, 24, "ours: facts a reply"),
    "mnemis.fact_resolutions": Entry(12, 48, "ours: new facts a resolution reply covers"),
    "mnemis.summary_chars": Entry(240, 400, "ours: an entity summary (stored up to 400)"),
    "mnemis.fact_chars": Entry(200, 400, "ours: a fact's sentence"),
    "mindgraph.operations": Entry(40, 200, "ours (the paper sets none): D.1 operations a chunk"),
    "mindgraph.quote_chars": Entry(300, 1000, "ours: a node's content and its src quote"),
    "memtree.summary_chars": Entry(8000, 32_000, "ours: a guard above what the budget carries"),
    "answer.hit_chars": Entry(
        600, 4000, "ours: characters of each hit the grounded answer shows (20 hits)"
    ),
    "schema.array_items": Entry(
        64, 1000, "ours: any list of a schema sent; chat: llama.cpp's grammar limit"
    ),
}


@dataclass(frozen=True)
class Budgets:
    """The budgets of one model: ask :meth:`tokens` for a stage's completion budget and
    :meth:`bound` for a schema bound, rather than keeping a constant in a design."""

    profile: str = "small"
    context_tokens: int = PROFILES["small"].context_tokens
    max_output_tokens: int = PROFILES["small"].max_output_tokens

    @classmethod
    def of(
        cls,
        profile: str = "small",
        *,
        context_tokens: int | None = None,
        max_output_tokens: int | None = None,
    ) -> Budgets:
        """The budgets of ``profile`` with the model's limits where given. Without an
        output limit the profile's stands, at most half the context (the prompt needs
        the rest); a bad name or limit is a :class:`ConfigError` that says what is valid."""
        if profile not in PROFILES:
            raise ConfigError(f"unknown llm.profile {profile!r}; valid: {', '.join(PROFILES)}")
        limits = PROFILES[profile]
        for key, value in (
            ("context_tokens", context_tokens),
            ("max_output_tokens", max_output_tokens),
        ):
            if value is not None and value <= 0:
                raise ConfigError(f"llm.{key} must be a positive number of tokens, not {value}")
        context = context_tokens or limits.context_tokens
        output = max_output_tokens or min(limits.max_output_tokens, context // 2)
        if output < 1:
            raise ConfigError(f"llm.context_tokens ({context}) leaves no room for a reply")
        if output >= context:
            raise ConfigError(
                f"llm.max_output_tokens ({output}) must be below llm.context_tokens ({context}): "
                "the prompt needs room too"
            )
        return cls(profile, context, output)

    @classmethod
    def for_backend(cls, backend: object) -> Budgets:
        """Budgets for a client built without any: the profile its kind defaults to, and
        the context window the backend states (a GGUF model's ``n_ctx``), if any."""
        window = getattr(backend, "context_tokens", None)
        return cls.of(
            default_profile(backend_kind(backend)),
            context_tokens=window if isinstance(window, int) and window > 0 else None,
        )

    def tokens(self, stage: str) -> int:
        """``stage``'s completion budget: its profile's figure, never past the output limit."""
        return min(_entry(STAGES, stage, "stage").value(self.profile), self.max_output_tokens)

    def bound(self, name: str) -> int:
        """A schema bound or chunk size of :data:`BOUNDS`, for this profile."""
        return _entry(BOUNDS, name, "bound").value(self.profile)

    def table(self, ceiling: int | None = None) -> dict[str, Any]:
        """Everything in effect, as ``memstrata config`` shows it; ``ceiling`` is the
        client's cap on every call (``llm.max_tokens``), which the stages then get."""
        cap = ceiling or self.max_output_tokens
        return {
            "profile": self.profile,
            "context_tokens": self.context_tokens,
            "max_output_tokens": self.max_output_tokens,
            "ceiling": ceiling,
            "stages": {s: min(self.tokens(s), cap) for s in STAGES},
            "bounds": {b: self.bound(b) for b in BOUNDS},
        }


def _entry(table: dict[str, Entry], name: str, what: str) -> Entry:
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"no {what} {name!r} in memstrata.llm.budgets") from None


def backend_kind(backend: object) -> str:
    """A backend's kind, seeing through a chaos wrapper to the backend it damages."""
    inner = getattr(backend, "inner", None)
    return backend_kind(inner) if inner is not None else str(getattr(backend, "name", ""))


def default_profile(kind: str) -> str:
    """``chat`` for a model behind an OpenAI-compatible server, ``small`` for the rest
    (the bundled GGUF model, a scripted or filler backend in tests)."""
    return "chat" if kind == "openai" else "small"


def markdown_table() -> str:
    """The budgets of both profiles per stage, as docs/engine.md shows them."""
    small, chat = Budgets.of("small"), Budgets.of("chat")
    rows = [
        "| stage or bound | small (bundled 135M, 4K context) | chat (128K context) | source |",
        "|---|---:|---:|---|",
    ]
    for name, entry in STAGES.items():
        rows.append(
            f"| `{name}` tokens | {small.tokens(name)} | {chat.tokens(name)} | {entry.source} |"
        )
    for name, entry in BOUNDS.items():
        rows.append(f"| `{name}` | {small.bound(name)} | {chat.bound(name)} | {entry.source} |")
    head = (
        f"limits: small {small.context_tokens} context / {small.max_output_tokens} out; "
        f"chat {chat.context_tokens} context / {chat.max_output_tokens} out"
    )
    return head + "\n\n" + "\n".join(rows) + "\n"
