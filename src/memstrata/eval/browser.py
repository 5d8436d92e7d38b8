"""Driving the explorer in the system's headless Chromium (Selenium and chromedriver),
shared by its browser tests and ``memstrata bench explorer`` so both read the page the
same way.

Timings come from the page itself: it sets ``performance.mark`` entries (``view-ready``
once a view has rendered, ``view-drawn`` once a design view is painted, ``search-done``
and ``ask-done`` after a round trip), whose times count from the navigation's start, so
Selenium's polling adds nothing to them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT_S = 20.0
#: how often a wait looks again (Selenium's default, 0.5 s, would add a quarter of a
#: second on average to every step of a run; timings come from the page, never from it)
POLL_S = 0.05


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[WebDriver]:
    """A headless Chromium keeping its console log (read by :func:`console_errors`)."""
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(DRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(browser: WebDriver) -> list[str]:
    """The console's errors since the last call (reading the log empties it)."""
    log = cast(Any, browser).get_log("browser")  # Chromium's, not in WebDriver's stubs
    return [e["message"] for e in log if e["level"] == "SEVERE"]


def until(browser: WebDriver, condition: Any, timeout: float = WAIT_S) -> Any:
    """``condition(browser)`` once true; an element replaced meanwhile is looked up again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (StaleElementReferenceException,)
    waiting = WebDriverWait(browser, timeout, poll_frequency=POLL_S, ignored_exceptions=ignored)
    return waiting.until(condition)


def wait(browser: WebDriver, css: str, count: int = 1, timeout: float = WAIT_S) -> list[Any]:
    """The elements ``css`` finds, once there are at least ``count``."""
    from selenium.webdriver.common.by import By

    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, css)) >= count, timeout)
    return browser.find_elements(By.CSS_SELECTOR, css)


def wait_text(browser: WebDriver, css: str, text: str) -> Any:
    """The first element ``css`` finds whose text holds ``text``, once there is one."""
    from selenium.webdriver.common.by import By

    return until(
        browser,
        lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, css) if text in e.text), None),
    )


def go(browser: WebDriver, view: str) -> None:
    """Switch view in the open page (a hash change, no reload)."""
    browser.execute_script("location.hash = arguments[0]", view)


def navigate(browser: WebDriver, url: str) -> None:
    """A fresh page load of ``url``, even when only its hash differs from the current
    one (which alone would not reload)."""
    browser.get("about:blank")
    browser.get(url)


def mark(browser: WebDriver, name: str, timeout: float = WAIT_S) -> float:
    """Milliseconds from the navigation's start to the page's latest ``name`` mark,
    once there is one."""
    script = (
        "const m = performance.getEntriesByName(arguments[0]);"
        "return m.length ? m[m.length - 1].startTime : null"
    )
    return float(until(browser, lambda d: d.execute_script(script, name), timeout))


def clear_marks(browser: WebDriver) -> None:
    browser.execute_script("performance.clearMarks()")


def marks(browser: WebDriver) -> dict[str, float]:
    """Every mark the page set, by name (the latest of each)."""
    script = "return performance.getEntriesByType('mark').map(m => [m.name, m.startTime])"
    return {name: float(at) for name, at in browser.execute_script(script)}
