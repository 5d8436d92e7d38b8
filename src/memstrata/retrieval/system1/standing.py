"""Standing instructions and requests for advice, without a model.

A user who tells an assistant how to answer ("Always format dates as MM/DD/YYYY when I
ask about scheduling") expects that rule to hold in every later answer on the topic,
and the later question never repeats it ("When is my meeting at the studio?"). Likewise
a request for advice ("Can you suggest some books for me?") is answered well only with
the preferences the user stated before ("I prefer e-books for their portability").
:func:`instructs` reads whether a text gives such a rule; :func:`asks_advice` whether a
question asks for guidance. And a question in the first person put to an assistant's
memory ("When is my meeting?") is about the user, whose own turns hold the answer
(:func:`first_person`, :func:`by_asker`). The patterns are English function words and
the role names chat logs use, nothing a data set taught.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memstrata.retrieval.text import sentences

#: a sentence that opens with "always" or "never" and a lowercase word: an imperative
#: ("Always include version numbers", "Please never use tables"), after optional
#: openers ("From now on, ...")
_RULE = re.compile(
    r"(?:(?:please|and|also|so|ok(?:ay)?|from now on|going forward|in (?:the )?future)"
    r"[,\s]+)*(?:always|never|don't ever|do not ever)\s+[^\W\d_]",
    re.I,
)
#: what makes it a rule about the speaker's own requests rather than a maxim ("Always
#: happy to help!"): a condition on them ("when I ask", "if we") or a "me"/"my"
_ABOUT_ME = re.compile(
    r"\b(?:when(?:ever)?|if|each time|every time|any time)\s+(?:i|we)\b|\b(?:me|my)\b", re.I
)
#: guidance asked of the listener: "can you ...", "what should I", "how do I", "I'm
#: planning to ...", "help me"
_ADVICE = re.compile(
    r"\b(?:can|could|would|will)\s+you\b"
    r"|\b(?:should|could|can|do|might)\s+i\b"
    r"|\bi(?:'m| am)\s+(?:planning|looking|thinking|trying|hoping|about)\b"
    r"|\bhelp\s+me\b",
    re.I,
)
#: "suggest", "tips" and the like ask for advice when the asker is in the question
#: ("any tips for my trip?"), and report it otherwise ("What advice did she give him?")
_ADVICE_WORD = re.compile(
    r"\b(?:suggest|suggestions?|recommend|recommendations?|advice|advise|tips)\b", re.I
)
_ASKER = re.compile(r"\b(?:i|me|my)\b", re.I)


@lru_cache(maxsize=8192)
def instructs(text: str) -> bool:
    """Whether one of the text's sentences is a standing instruction about the
    speaker's own requests; cached, as searches meet the same turns."""
    for start, end in sentences(text):
        sentence = text[start:end].strip()
        if _RULE.match(sentence) and _ABOUT_ME.search(sentence):
            return True
    return False


def asks_advice(question: str) -> bool:
    """Whether the question asks the listener for guidance, which the asker's stated
    preferences shape."""
    if _ADVICE.search(question):
        return True
    return bool(_ADVICE_WORD.search(question) and _ASKER.search(question))


_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself)\b", re.I)
#: how chat logs name the person an assistant serves: the role of the messages, or the
#: speaker when the log has no role
_ASKER_ROLES = frozenset({"user", "human"})
#: and the assistant's messages
_ASSISTANT_ROLES = frozenset({"assistant", "ai", "bot", "model"})


def _in_role(role: str | None, speaker: str | None, roles: frozenset[str]) -> bool:
    """Whether a turn's role is one of ``roles``, or, without a role, its speaker is
    named after one."""
    name = role if role is not None else speaker
    return name is not None and name.strip().lower() in roles


def by_assistant(role: str | None, speaker: str | None) -> bool:
    """Whether a turn is an assistant's (:func:`_in_role`)."""
    return _in_role(role, speaker, _ASSISTANT_ROLES)


def first_person(question: str) -> bool:
    """Whether the question speaks of its asker ("my meeting", "did I")."""
    return bool(_FIRST_PERSON.search(question))


def by_asker(role: str | None, speaker: str | None) -> bool:
    """Whether a turn is the user's own (:func:`_in_role`)."""
    return _in_role(role, speaker, _ASKER_ROLES)
