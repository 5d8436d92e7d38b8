"""``memstrata bench explorer``: the web explorer in headless Chromium against a real
``memstrata serve``, on built stores.

Two parts, in one run when both are asked:

* **views** (``--data``): LoCoMo conversations built by every recipe that builds
  something (:mod:`memstrata.eval.explorer_stores`). For each namespace, every page of
  the explorer is loaded afresh and checked against the API's own answers (the counts
  shown, the first episodes and their speakers, each design view's nodes), a search and
  an ask go round through the page's forms, and the console is read after each. A row's
  time is the median of its loads, from navigation to the page's own mark (``view-ready``,
  ``view-drawn`` after the paint), or of the round trip (``search-start`` to
  ``search-done``).
* **graph** (``--entities``): a synthetic Mnemis namespace of that many entities; its
  graph view timed from navigation to drawn at the page's default limit and at others
  given, each split into the answer's arrival, the layout and the paint, beside the
  API's own time for the same view.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from memstrata.eval import browser as web
from memstrata.eval import explorer_stores as stores
from memstrata.eval.bench_serve import Server

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

#: the Designs page's limit when the link names none (designs.js DEFAULT_LIMIT)
PAGE_LIMIT = 150
GRAPH = "mnemis-graph"
#: edges listed under a graph, at most (designs.js EDGE_LIST; all are drawn)
EDGE_LIST = 500
SYNTHETIC = "synthetic-mnemis"
PAGES = ("namespaces", "episodes")
#: what one big view may take to draw before it counts as failed
DRAW_TIMEOUT_S = 300.0


@dataclass
class Row:
    """One page of one namespace: its load time and the checks made on it."""

    namespace: str
    view: str
    ms: float
    shown: str = ""
    checks: list[tuple[str, bool]] = field(default_factory=list)
    console: list[str] = field(default_factory=list)

    def check(self, name: str, ok: bool) -> None:
        self.checks.append((name, bool(ok)))

    @property
    def passed(self) -> int:
        return sum(ok for _, ok in self.checks)

    @property
    def failed(self) -> list[str]:
        return [name for name, ok in self.checks if not ok]


@dataclass
class GraphRun:
    """The synthetic graph view at one limit: medians over the loads, in ms."""

    limit: int
    nodes: int
    edges: int
    total_nodes: int
    drawn_ms: float
    fetched_ms: float
    layout_ms: float
    paint_ms: float
    api_ms: float
    loads: int
    circles_ok: bool
    console: list[str] = field(default_factory=list)


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else 0.0


# the served store ----------------------------------------------------------------------------
@contextmanager
def served(db: Path, log: Path) -> Iterator[str]:
    """``memstrata serve`` over ``db`` (builds left manual: it only shows what is there);
    yields the page's base URL."""
    config = log.with_suffix(".toml")
    config.write_text('[build]\nmode = "manual"\n')
    with Server(db, log, config=config) as server:
        yield server.url.removesuffix("/v1")


def api(base: str) -> httpx.Client:
    return httpx.Client(base_url=f"{base}/v1", timeout=120, trust_env=False)


# the views part ------------------------------------------------------------------------------
def check_namespace(browser: WebDriver, base: str, fix: stores.Fixture, loads: int) -> list[Row]:
    """Every page of the explorer for one namespace, each checked against the API."""
    from selenium.webdriver.common.by import By

    web.navigate(browser, f"{base}/#namespaces")
    browser.execute_script(
        "sessionStorage.setItem('memstrata.namespace', arguments[0])", fix.namespace
    )
    ns = f"/namespaces/{fix.namespace}"
    with api(base) as client:
        (stats,) = [s for s in client.get(f"{ns}/stats").json()["namespaces"]]
        first = client.get(f"{ns}/episodes", params={"limit": 25}).json()["episodes"]
        listed = client.get(f"{ns}/views").json()["views"]
        views = {
            v["name"]: client.get(f"{ns}/views/{v['name']}", params={"limit": PAGE_LIMIT}).json()
            for v in listed
        }
    web.console_errors(browser)  # what came before this namespace is not its own
    rows = []

    row = load_page(browser, base, fix.namespace, "namespaces", loads)
    text = browser.find_element(By.ID, "main").text
    cells = browser.find_elements(By.CSS_SELECTOR, "#main table td")
    row.check("episodes count", bool(cells) and cells[0].text == str(stats["episodes"]))
    kinds = dict(
        (r.find_elements(By.TAG_NAME, "td")[0].text, r.find_elements(By.TAG_NAME, "td")[1].text)
        for r in browser.find_elements(By.CSS_SELECTOR, ".boxes > div:first-child tbody tr")
    )
    row.check("records per kind", kinds == {k: str(n) for k, n in stats["records"].items()})
    row.check(f"{fix.recipe} records listed", fix.recipe in stats["records_by_builder"])
    row.check("builder shown", fix.recipe in text)
    row.shown = f"{stats['episodes']} episodes, {sum(stats['records'].values())} records"
    rows.append(finish(browser, row))

    row = load_page(browser, base, fix.namespace, "episodes", loads)
    shown = browser.find_elements(By.CSS_SELECTOR, ".episode")
    row.check("first page", [e.get_attribute("data-id") for e in shown] == [e["id"] for e in first])
    row.check(f"speaker {fix.speakers[0]} shown", f"{fix.speakers[0]}:" in shown[0].text)
    row.shown = f"{len(shown)} episodes"
    rows.append(finish(browser, row))

    row = Row(fix.namespace, "designs (views listed)", 0.0)
    row.check("the recipe's views listed", any(v["design"] == fix.recipe for v in listed))
    rows.append(finish(browser, row))
    for name, want in views.items():
        rows.append(check_view(browser, base, fix.namespace, name, want, loads))
    rows.append(check_search(browser, base, fix, loads))
    rows.append(check_ask(browser, base, fix, loads))
    return rows


def finish(browser: WebDriver, row: Row) -> Row:
    row.console += web.console_errors(browser)
    return row


def load_page(browser: WebDriver, base: str, namespace: str, view: str, loads: int) -> Row:
    """``view`` loaded ``loads`` times, timed to its ``view-ready`` mark."""
    times = []
    for _ in range(loads):
        web.navigate(browser, f"{base}/#{view}")
        times.append(web.mark(browser, "view-ready"))
    return Row(namespace, view, median(times))


def open_view(
    browser: WebDriver, base: str, name: str, limit: int | None = None
) -> dict[str, float]:
    """A design view loaded afresh through its link, once drawn: the page's marks."""
    query = f"?limit={limit}" if limit else ""
    web.navigate(browser, f"{base}/#designs/{name}{query}")
    web.mark(browser, "view-drawn", DRAW_TIMEOUT_S)
    return web.marks(browser)


def check_view(
    browser: WebDriver, base: str, namespace: str, name: str, want: dict[str, Any], loads: int
) -> Row:
    from selenium.webdriver.common.by import By

    times = [open_view(browser, base, name)["view-drawn"] for _ in range(loads)]
    row = Row(namespace, f"designs: {name}", median(times))
    css = "svg.graph circle" if want["layout"] == "graph" else "#tree .node"
    drawn = browser.find_elements(By.CSS_SELECTOR, css)
    row.check("draws nodes", len(drawn) > 0)
    row.check("nodes as the API's", len(drawn) == len(want["nodes"]))
    ids = {n.get_attribute("data-id") for n in drawn}
    row.check("node ids as the API's", ids == {n["id"] for n in want["nodes"]})
    summary = browser.find_element(By.ID, "view-summary").text
    row.check("totals shown", f"of {want['total_nodes']} nodes" in summary)
    if want["layout"] == "graph":
        listed = browser.find_elements(By.CSS_SELECTOR, "#edge-list li")
        row.check("edges listed", len(listed) == min(len(want["edges"]), EDGE_LIST))
    row.shown = f"{len(drawn)} of {want['total_nodes']} nodes"
    return finish(browser, row)


def _form(browser: WebDriver, base: str, view: str, fields: dict[str, str], recipe: str) -> None:
    from selenium.webdriver.common.by import By

    web.navigate(browser, f"{base}/#{view}")
    web.mark(browser, "view-ready")
    for name, value in fields.items():
        box = browser.find_element(By.NAME, name)
        box.clear()
        box.send_keys(value)
    web.wait(browser, f"select[name=recipe] option[value={recipe}]")[0].click()


def round_trips(browser: WebDriver, form: str, name: str, loads: int) -> list[float]:
    """The form submitted ``loads`` times, each timed from its start to its done mark."""
    from selenium.webdriver.common.by import By

    times = []
    for _ in range(loads):
        web.clear_marks(browser)
        browser.find_element(By.CSS_SELECTOR, f"{form} button").click()
        done = web.mark(browser, f"{name}-done", 120)
        times.append(done - web.marks(browser)[f"{name}-start"])
    return times


def check_search(browser: WebDriver, base: str, fix: stores.Fixture, loads: int) -> Row:
    from selenium.webdriver.common.by import By

    body = {"query": fix.question, "k": 8, "recipe": fix.recipe}
    with api(base) as client:
        want = client.post(f"/namespaces/{fix.namespace}/search", json=body).json()["hits"]
    _form(browser, base, "search", {"query": fix.question, "k": "8"}, fix.recipe)
    row = Row(
        fix.namespace, "search", median(round_trips(browser, "#search-form", "search", loads))
    )
    hits = browser.find_elements(By.CSS_SELECTOR, ".hit")
    row.check(
        "hits as the API's", [h.get_attribute("data-id") for h in hits] == [h["id"] for h in want]
    )
    row.check("some hit", len(hits) > 0)
    row.shown = f"{len(hits)} hits"
    return finish(browser, row)


def check_ask(browser: WebDriver, base: str, fix: stores.Fixture, loads: int) -> Row:
    from selenium.webdriver.common.by import By

    body = {"question": fix.question, "recipe": fix.recipe}
    with api(base) as client:
        want = client.post(f"/namespaces/{fix.namespace}/ask", json=body).json()
    _form(browser, base, "ask", {"question": fix.question}, fix.recipe)
    row = Row(fix.namespace, "ask", median(round_trips(browser, "#ask-form", "ask", loads)))
    text = browser.find_element(By.CSS_SELECTOR, "#answer .answer-text").get_attribute(
        "textContent"
    )
    row.check("answer as the API's", text == want["text"])
    cites = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#answer .cite")]
    row.check("sources as the API's", cites == want["sources"])
    abstained = bool(browser.find_elements(By.CSS_SELECTOR, "#answer .abstained"))
    row.check("abstention as the API's", abstained == want["abstained"])
    row.shown = "abstained" if want["abstained"] else f"{len(cites)} sources"
    return finish(browser, row)


# the graph part ------------------------------------------------------------------------------
def time_graph(browser: WebDriver, base: str, namespace: str, limit: int, loads: int) -> GraphRun:
    """The synthetic graph view at ``limit``, loaded ``loads`` times from navigation to
    drawn; the API's time for the same view measured apart."""
    from selenium.webdriver.common.by import By

    browser.execute_script("sessionStorage.setItem('memstrata.namespace', arguments[0])", namespace)
    path = f"/namespaces/{namespace}/views/{GRAPH}"
    api_times = []
    with api(base) as client:
        for _ in range(loads):
            start = time.perf_counter()
            want = client.get(path, params={"limit": limit}).json()
            api_times.append((time.perf_counter() - start) * 1000)
    web.console_errors(browser)
    runs = [open_view(browser, base, GRAPH, limit) for _ in range(loads)]
    circles = len(browser.find_elements(By.CSS_SELECTOR, "svg.graph circle"))
    return GraphRun(
        limit=limit,
        nodes=len(want["nodes"]),
        edges=len(want["edges"]),
        total_nodes=want["total_nodes"],
        drawn_ms=median([r["view-drawn"] for r in runs]),
        fetched_ms=median([r["view-fetched"] for r in runs]),
        layout_ms=median([r["graph-laid-out"] - r["view-fetched"] for r in runs]),
        paint_ms=median([r["view-drawn"] - r["graph-laid-out"] for r in runs]),
        api_ms=median(api_times),
        loads=loads,
        circles_ok=circles == len(want["nodes"]),
        console=web.console_errors(browser),
    )


# the run --------------------------------------------------------------------------------------
def run(
    *,
    data: Path | None = None,
    conversations: int = 1,
    entities: int = 0,
    limits: tuple[int, ...] = (PAGE_LIMIT, 5000),
    loads: int = 3,
    graph_loads: int = 5,
    db: Path | None = None,
    recipes: tuple[str, ...] = stores.RECIPES,
    tick: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Build what is asked, serve it, drive the page; the report as plain data."""
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        path = db or folder / "explorer.db"
        started = time.perf_counter()
        fixtures = stores.build_locomo(path, data, conversations, recipes, tick) if data else []
        synthetic = None
        if entities:
            namespace = f"{SYNTHETIC}-{entities}"
            tick(f"writing {namespace}")
            have = path.exists() and namespace in _namespaces(path)
            synthetic = (
                stores.Synthetic(namespace, entities, 0, 0, 0, notes=["kept from --db"])
                if have
                else stores.synthetic_mnemis(path, entities, namespace)
            )
        built_s = round(time.perf_counter() - started, 1)
        base = stack.enter_context(served(path, folder / "serve.log"))
        browser = stack.enter_context(web.chromium())
        rows: list[Row] = []
        for fix in fixtures:
            tick(f"checking {fix.namespace}")
            rows += check_namespace(browser, base, fix, loads)
        graphs = []
        if synthetic:
            web.navigate(browser, f"{base}/#namespaces")
            web.mark(browser, "view-ready")
            for limit in limits:
                tick(f"timing {GRAPH} at limit {limit}")
                graphs.append(time_graph(browser, base, synthetic.namespace, limit, graph_loads))
    return {
        "setup": {
            "cores": os.cpu_count(),
            "browser": web.CHROMIUM,
            "data": str(data) if data else None,
            "conversations": conversations if data else 0,
            "loads": loads,
            "graph_loads": graph_loads,
            "build_seconds": built_s,
        },
        "synthetic": asdict(synthetic) if synthetic else None,
        "views": [
            {**asdict(r), "passed": r.passed, "failed": r.failed, "total": len(r.checks)}
            for r in rows
        ],
        "graph": [asdict(g) for g in graphs],
    }


def _namespaces(path: Path) -> list[str]:
    from memstrata.store import open_store

    store = open_store(path, create=False)
    try:
        return store.namespaces()
    finally:
        store.close()


def failed(report: dict[str, Any]) -> bool:
    """A failed check or a console error anywhere."""
    views = any(r["failed"] or r["console"] for r in report["views"])
    graph = any(not g["circles_ok"] or g["console"] for g in report["graph"])
    return views or graph
