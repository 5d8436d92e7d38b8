"""The rule for what a delete takes besides the rows (memstrata.erasure): an error text
that holds a word of a removed text keeps its class and loses the rest; one that does
not stays as it is. The end-to-end cases are in tests/test_erasure_derived.py."""

from __future__ import annotations

from memstrata.erasure import REDACTED, redaction, removed_words
from memstrata.store.erasing import probe_words


def test_the_error_rule_keeps_the_class_and_leaves_errors_of_other_words() -> None:
    redact = redaction(removed_words(["O’Brien's router password is zanzibar42"]))
    assert redact("LLMBackendError: reply quoted 'zanzibar42'") == f"LLMBackendError: {REDACTED}"
    assert redact("ValueError: o'brien asked") == f"ValueError: {REDACTED}"
    assert redact("ConnectError: [Errno 111] Connection refused") is None
    assert redact(f"LLMBackendError: {REDACTED}") is None  # nothing left to take
    assert redaction(removed_words(["it is what it is"]))("E: anything") == f"E: {REDACTED}"
    assert probe_words({"zanzibar42", "o'brien"}) is None  # curly or straight: read all
