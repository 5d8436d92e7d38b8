from __future__ import annotations

import logging
import threading

import pytest

from memstrata.store.background import Background, BuildControl


def test_a_result_is_taken_once_and_only_when_the_build_is_done() -> None:
    gate = threading.Event()
    job: Background[str] = Background()
    job.start("t", lambda _: gate.wait() and "index", logging.getLogger("t"), "failed")
    assert job.pending and job.take() is None  # still running: nothing to take
    with pytest.raises(RuntimeError, match="already pending"):
        job.start("t", lambda _: "other", logging.getLogger("t"), "failed")
    gate.set()
    job.wait()
    assert job.take() == "index" and not job.pending
    assert job.take() is None  # taken once
    job.start("t", lambda _: None, logging.getLogger("t"), "failed")  # made nothing to take
    job.wait()
    assert job.take() is None and not job.pending and not job.failed


def test_a_failed_build_is_logged_and_marked(caplog: pytest.LogCaptureFixture) -> None:
    def boom(_: BuildControl) -> str:
        raise OSError("disk full")

    job: Background[str] = Background()
    with caplog.at_level(logging.ERROR, logger="t"):
        job.start("t", boom, logging.getLogger("t"), "building the index of 3 failed")
        job.wait()
    assert job.failed and job.take() is None and not job.pending
    assert "building the index of 3 failed" in caplog.text and "disk full" in caplog.text
