"""The web explorer in a real headless Chromium against a real server: every view loads
and shows the store's records, search highlights the exact source characters, stored
text is shown as text, a read key sees no write buttons and no other tenant, and the
page logs no console error. One store, one server and one browser for the module.

Screenshots go to ``$EXPLORER_SHOTS`` when set (``make explorer-shots``
refreshes ``docs/explorer/``), else to a temporary folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.common.exceptions import NoSuchElementException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select
from service_helpers import serving

from memstrata import Memory
from memstrata.config import Config
from memstrata.engine import NOT_IN_MEMORY
from memstrata.eval.browser import (
    chromium,
    console_errors,
    go,
    navigate,
    until,
    wait,
    wait_text,
)
from memstrata.importers import jsonl
from memstrata.service import keys

pytestmark = pytest.mark.slow

# Maya's home changes: Mnemis marks the first fact superseded
MOVES = [
    {"id": "m1", "speaker": "Maya", "text": "I live in Porto these days.", "at": "2024-05-01"},
    {"id": "m2", "speaker": "Maya", "text": "I moved to Lisbon last month.", "at": "2024-06-01"},
]
XSS = "Note to self: <script>window.__pwned=1</script> and <b>x</b> are just text."
RECIPES = ("mnemis", "memtree", "mindgraph", "personalai", "higmem")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The bundled conversation built by every cheap recipe (heuristic tier), a second
    tenant's namespace, a write and a read key for ``demo``; served on loopback."""
    db = tmp_path_factory.mktemp("explorer") / "explorer.db"
    path = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    turns = [item for _, item in jsonl.read(Path(str(path))) if isinstance(item, dict)]
    with Memory.open(db, **{"build.mode": "manual"}) as memory:
        xss = {"id": "xss", "speaker": "Maya", "text": XSS}
        memory.add_many([*turns, *MOVES, xss], namespace="demo")
        memory.add_many([{"id": "o1", "text": "Another tenant's secret."}], namespace="other")
        team = [
            {
                "id": "k1",
                "speaker": "Kai",
                "text": "The team offsite is in Porto.",
                "at": "2024-07-01",
            }
        ]
        memory.add_many(team, namespace="team")
        for recipe in RECIPES:
            memory.build("demo", recipe=recipe, tier="heuristic")
        store = memory._inner.store
        (xss,) = store.get_episodes("demo", ["xss"])
        store.mark_failed("demo", "higmem", [(xss.key, "the model timed out")], 5, 3600.0)
        write, _ = keys.make_key(store, ["demo"], "write", "explorer-write")
        read, _ = keys.make_key(store, ["demo"], "read", "explorer-read")
        both, _ = keys.make_key(store, ["demo", "team"], "read", "explorer-both")
    config = Config.load(
        store=str(db), recipe="mnemis", **{"build.mode": "queue", "build.poll_s": 0.05}
    )
    with serving(config) as client:
        base = str(client.base_url).removesuffix("/").removesuffix("/v1")
        yield {"base": base, "client": client, "write": write, "read": read, "both": both}


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver


@pytest.fixture(autouse=True)
def no_console_errors(browser: WebDriver) -> Iterator[None]:
    """Every test ends with no error in the page's console."""
    yield
    assert console_errors(browser) == []


def api(site: dict[str, Any], key: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{site['base']}/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60
    )


def shot(browser: WebDriver, name: str, tmp_path: Path) -> None:
    """A screenshot of the page; for the docs, reduced to a small palette PNG."""
    docs = os.environ.get("EXPLORER_SHOTS")
    folder = Path(docs or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(path))
    if docs:
        from PIL import Image  # Pillow comes with matplotlib

        with Image.open(path) as image:
            small = image.convert("RGB").quantize(colors=48)
        small.save(path, optimize=True)


def sign_in(browser: WebDriver, site: dict[str, Any], key: str, view: str) -> None:
    browser.get(f"{site['base']}/#{view}")
    browser.execute_script("sessionStorage.clear()")
    browser.refresh()
    form = wait(browser, "#keyform:not([hidden])")[0]
    form.find_element(By.ID, "key").send_keys(key)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(browser, "#namespace option")


def page_until(browser: WebDriver, episode: str) -> None:
    """Press "More" until the episode list shows ``episode``."""
    while not browser.find_elements(By.CSS_SELECTOR, f'.episode[data-id="{episode}"]'):
        shown = len(browser.find_elements(By.CSS_SELECTOR, ".episode"))
        browser.find_element(By.ID, "more").click()
        wait(browser, ".episode", shown + 1)


def signed_in(browser: WebDriver, site: dict[str, Any], key: str) -> None:
    """The page open with ``key`` (signed in only when it is not already)."""
    on_site = browser.current_url.startswith(site["base"])
    held = on_site and browser.execute_script("return sessionStorage.getItem('memstrata.key')")
    if held != key:
        sign_in(browser, site, key, "namespaces")


def test_asks_for_a_key_and_shows_the_namespace(
    browser: WebDriver, site: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(browser, site, site["write"], "namespaces")
    names = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#namespace option")]
    assert names == ["demo"]  # the other tenant's namespace is not there
    wait_text(browser, "main table", "tree_node")
    page = browser.find_element(By.ID, "main").text
    for design in RECIPES:
        assert design in page
    assert "Failed enrichments (1)" in page and "the model timed out" in page
    browser.find_element(By.ID, "retry").click()
    assert "queued 1" in wait_text(browser, "#retried", "queued").text
    shot(browser, "namespaces", tmp_path)


def test_episodes_filter_history_and_derived(
    browser: WebDriver, site: dict[str, Any], tmp_path: Path
) -> None:
    signed_in(browser, site, site["write"])
    go(browser, "episodes")
    rows = wait(browser, ".episode", 25)
    assert rows[0].get_attribute("data-id") == "t01"
    # each episode says when it was said
    assert rows[0].find_element(By.CSS_SELECTOR, ".date").text == "2024-03-02 10:15"
    speaker = browser.find_element(By.NAME, "speaker")
    speaker.send_keys("Tomas")
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    until(
        browser,
        lambda d: d.find_element(By.CSS_SELECTOR, ".episode").get_attribute("data-id") == "t02",
    )
    rows = browser.find_elements(By.CSS_SELECTOR, ".episode")
    assert all("Tomas:" in r.text for r in rows)
    next(r for r in rows if r.get_attribute("data-id") == "t06").click()
    detail = wait_text(browser, "#episode-detail", "Derived from it")
    assert "Pepper" in detail.find_element(By.CSS_SELECTOR, ".episode-text").text
    derived = detail.find_element(By.CSS_SELECTOR, "table").text
    assert "mnemis" in derived and "memtree" in derived
    shot(browser, "episodes", tmp_path)


def test_stored_markup_is_shown_as_text_and_never_runs(
    browser: WebDriver, site: dict[str, Any]
) -> None:
    signed_in(browser, site, site["write"])
    go(browser, "namespaces")
    go(browser, "episodes")
    wait(browser, ".episode", 25)
    page_until(browser, "xss")
    row = browser.find_element(By.CSS_SELECTOR, '.episode[data-id="xss"]')
    assert row.find_element(By.CSS_SELECTOR, ".text").get_attribute("textContent") == XSS
    assert row.find_elements(By.CSS_SELECTOR, "b, script") == []
    row.click()
    text = wait(browser, "#episode-detail .episode-text")[0]
    assert text.get_attribute("textContent") == XSS
    assert browser.execute_script("return typeof window.__pwned") == "undefined"


def test_search_highlights_the_exact_source_characters(
    browser: WebDriver, site: dict[str, Any], tmp_path: Path
) -> None:
    signed_in(browser, site, site["write"])
    query = "greyhound Pepper"
    with api(site, site["write"]) as client:
        want = client.post(
            "/namespaces/demo/search", json={"query": query, "k": 5, "recipe": "mnemis"}
        ).json()["hits"]
        texts = {h["id"]: h for h in want}
        first = next(h for h in want if h["spans"])
        episodes = {
            s["episode"]: client.get(f"/namespaces/demo/episodes/{s['episode']}").json()["text"]
            for s in first["spans"]
        }
    go(browser, "search")
    browser.find_element(By.NAME, "query").send_keys(query)
    wait(browser, "select[name=recipe] option", 3)
    browser.find_element(By.CSS_SELECTOR, "select[name=recipe] option[value=mnemis]").click()
    browser.find_element(By.NAME, "k").clear()
    browser.find_element(By.NAME, "k").send_keys("5")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    hits = wait(browser, ".hit", len(want))
    assert [h.get_attribute("data-id") for h in hits] == [h["id"] for h in want]
    ranks = [c.text for c in hits[0].find_elements(By.CSS_SELECTOR, ".rank")]
    assert ranks == [f"{r} #{n}" for r, n in texts[want[0]["id"]]["ranks"].items()]
    # why each hit was found, as the API says: its lists' ranks, terms and rules
    for card, hit in zip(hits, want, strict=True):
        why = hit["why"]
        assert card.find_element(By.CSS_SELECTOR, ".score").text == f"score {hit['score']:.3f}"
        lists = [c.text for c in card.find_elements(By.CSS_SELECTOR, ".list")]
        assert lists == [f"{name} #{n}" for name, n in why["lists"].items()]
        assert [c.text for c in card.find_elements(By.CSS_SELECTOR, ".term")] == why["terms"]
        rules = [c.text.split()[0] for c in card.find_elements(By.CSS_SELECTOR, ".rule")]
        assert rules == [m["rule"] for m in why["moved"]]
    assert any(h["why"]["terms"] for h in want) and any(h["why"]["moved"] for h in want)
    hits[[h["id"] for h in want].index(first["id"])].click()
    marks = wait(browser, "#sources mark", len(first["spans"]))
    expected = sorted(episodes[s["episode"]][s["start"] : s["end"]] for s in first["spans"])
    assert sorted(m.get_attribute("textContent") for m in marks) == expected
    shot(browser, "search", tmp_path)


@pytest.mark.parametrize(
    ("question", "abstains"),
    [("What is the name of Tomas's dog?", False), ("What is the boiling point of mercury?", True)],
)
def test_ask_shows_the_answer_or_the_abstention(
    browser: WebDriver, site: dict[str, Any], tmp_path: Path, question: str, abstains: bool
) -> None:
    signed_in(browser, site, site["write"])
    with api(site, site["write"]) as client:
        want = client.post("/namespaces/demo/ask", json={"question": question}).json()
    assert want["abstained"] == abstains
    go(browser, "namespaces")
    go(browser, "ask")
    box = wait(browser, "input[name=question]")[0]
    box.send_keys(question)
    browser.find_element(By.CSS_SELECTOR, "#ask-form button").click()
    until(browser, lambda d: d.find_element(By.ID, "answer").text not in ("", "Thinking…"))
    (answer,) = wait(browser, "#answer .answer-text")
    assert answer.get_attribute("textContent") == want["text"]
    abstained = browser.find_elements(By.CSS_SELECTOR, "#answer .abstained")
    assert bool(abstained) == want["abstained"]
    if abstains:  # one message, the one every interface shows, and no other
        assert want["text"] == NOT_IN_MEMORY and abstained == [answer]
        lines = browser.find_element(By.ID, "answer").text.splitlines()
        assert lines == [NOT_IN_MEMORY, "Sources: none"]
    cites = browser.find_elements(By.CSS_SELECTOR, "#answer .cite")
    assert [c.text for c in cites] == want["sources"]
    if cites:
        cites[0].click()
        wait(browser, f'#cited [data-episode="{want["sources"][0]}"] .episode-text')
    shot(browser, "ask-abstained" if want["abstained"] else "ask", tmp_path)


def open_view(browser: WebDriver, name: str) -> None:
    wait(browser, f'#view-tabs button[data-view="{name}"]')[0].click()
    until(
        browser,
        lambda d: (
            "active"
            in d.find_element(
                By.CSS_SELECTOR, f'#view-tabs button[data-view="{name}"]'
            ).get_attribute("class")
        ),
    )


def test_design_views_show_the_records(
    browser: WebDriver, site: dict[str, Any], tmp_path: Path
) -> None:
    signed_in(browser, site, site["write"])
    with api(site, site["write"]) as client:
        listed = client.get("/namespaces/demo/views").json()["views"]
        graph = client.get("/namespaces/demo/views/mnemis-graph", params={"limit": 150}).json()
        cats = client.get("/namespaces/demo/views/mnemis-categories", params={"limit": 150}).json()
        memtree = client.get("/namespaces/demo/views/memtree", params={"limit": 150}).json()
    assert {v["name"] for v in listed} >= {"mnemis-graph", "mnemis-categories", "memtree"}
    go(browser, "designs")
    open_view(browser, "mnemis-graph")
    circles = wait(browser, "svg.graph circle", len(graph["nodes"]))
    assert len(circles) == len(graph["nodes"])
    edges = browser.find_element(By.ID, "edge-list").text
    assert all(e["text"] in edges for e in graph["edges"])
    invalid = browser.find_elements(By.CSS_SELECTOR, "#edge-list .invalid")
    assert len(invalid) == sum(e["invalid"] for e in graph["edges"]) == 1
    assert "I live in Porto" in invalid[0].text and "superseded" in invalid[0].text
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.graph line.invalid")) == 1
    invalid[0].click()  # the fact's own sources, its characters highlighted
    detail = wait_text(browser, "#node-detail", "superseded")
    detail.find_element(By.CSS_SELECTOR, ".cite").click()
    mark = wait(browser, '#node-detail [data-episode="m1"] mark')[0]
    assert mark.get_attribute("textContent") == MOVES[0]["text"]
    browser.execute_script(
        "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", circles[0]
    )
    assert wait_text(browser, "#node-detail h3", graph["nodes"][0]["label"])
    shot(browser, "mnemis-graph", tmp_path)

    open_view(browser, "mnemis-categories")
    nodes = wait(browser, "#tree .node", len(cats["nodes"]))
    assert {n.get_attribute("data-id") for n in nodes} == {n["id"] for n in cats["nodes"]}
    shot(browser, "mnemis-categories", tmp_path)

    open_view(browser, "memtree")
    nodes = wait(browser, "#tree .node", len(memtree["nodes"]))
    root = next(n for n in memtree["nodes"] if n["parent"] is None)
    deepest = max(memtree["nodes"], key=lambda n: n["depth"])
    tree = browser.find_element(By.ID, "tree")
    assert (
        tree.find_element(By.CSS_SELECTOR, ":scope > ul > li > .node").get_attribute("data-id")
        == root["id"]
    )
    tree.find_element(By.CSS_SELECTOR, f'.node[data-id="{deepest["id"]}"]').click()
    detail = wait_text(browser, "#node-detail", "Sources")
    assert (
        detail.find_element(By.CSS_SELECTOR, ".node-text").get_attribute("textContent")
        == deepest["text"]
    )
    shot(browser, "memtree", tmp_path)

    # level of detail: the top level only, then one node's subtree
    browser.find_element(By.NAME, "depth").send_keys("1")
    browser.find_element(By.XPATH, "//button[text()='Redraw']").click()
    top = [n for n in memtree["nodes"] if n["depth"] <= 1]
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#tree .node")) == len(top))
    parents = {n["parent"] for n in memtree["nodes"]}
    branch = next(n for n in top if n["depth"] == 1 and n["id"] in parents)
    below = [n for n in memtree["nodes"] if n["parent"] == branch["id"]]
    wait(browser, f'#tree .node[data-id="{branch["id"]}"]')[0].click()
    wait_text(browser, "#focus", f"Expand ({len(below)} more)").click()
    wait_text(browser, "#view-summary", f"around {branch['id']}")
    shown = {n.get_attribute("data-id") for n in wait(browser, "#tree .node", 1 + len(below))}
    assert shown == {branch["id"], *(n["id"] for n in below)}
    browser.find_element(By.NAME, "depth").clear()


def test_the_url_names_the_namespace_and_history_walks_through_views(
    browser: WebDriver, site: dict[str, Any]
) -> None:
    """A link opens the same view of the same namespace; back and forward go through
    the views and namespaces shown; a namespace the key does not reach is not shown."""
    sign_in(browser, site, site["both"], "namespaces")
    navigate(browser, f"{site['base']}/#search?ns=team")  # a link to the view
    wait(browser, "#view-search")
    assert browser.find_element(By.ID, "namespace").get_attribute("value") == "team"
    assert browser.execute_script("return location.hash") == "#search?ns=team"
    browser.find_element(By.CSS_SELECTOR, '#nav a[data-view="episodes"]').click()
    wait_text(browser, '.episode[data-id="k1"]', "Porto")
    assert browser.execute_script("return location.hash") == "#episodes?ns=team"
    Select(browser.find_element(By.ID, "namespace")).select_by_value("demo")
    wait(browser, '.episode[data-id="t01"]')
    assert browser.execute_script("return location.hash") == "#episodes?ns=demo"
    shared = browser.current_url

    browser.back()  # the other namespace's episodes
    wait(browser, '.episode[data-id="k1"]')
    assert browser.find_element(By.ID, "namespace").get_attribute("value") == "team"
    browser.back()  # the search view it came from
    wait(browser, "#view-search")
    assert browser.execute_script("return location.hash") == "#search?ns=team"
    browser.forward()
    browser.forward()
    wait(browser, '.episode[data-id="t01"]')
    assert browser.find_element(By.ID, "namespace").get_attribute("value") == "demo"

    navigate(browser, shared)  # the link, opened afresh: the same view, the same namespace
    wait(browser, '.episode[data-id="t01"]')
    assert browser.find_element(By.ID, "namespace").get_attribute("value") == "demo"

    # a namespace this key does not reach reads as one that does not exist
    navigate(browser, f"{site['base']}/#episodes?ns=other")
    other = wait_text(browser, "#status", 'no namespace "other"').text
    wait(browser, '.episode[data-id="t01"]')  # the namespace shown before
    assert "secret" not in browser.find_element(By.TAG_NAME, "body").text
    assert browser.execute_script("return location.hash") == "#episodes?ns=demo"
    navigate(browser, f"{site['base']}/#episodes?ns=nowhere")
    nowhere = wait_text(browser, "#status", 'no namespace "nowhere"').text
    assert nowhere == other.replace('"other"', '"nowhere"')


def test_views_api_cuts_large_views(site: dict[str, Any]) -> None:
    with api(site, site["read"]) as client:
        cut = client.get("/namespaces/demo/views/mnemis-graph", params={"limit": 5}).json()
        assert len(cut["nodes"]) == 5 and cut["truncated"] and cut["total_nodes"] > 5
        hub = cut["nodes"][0]["id"]
        around = client.get(
            "/namespaces/demo/views/mnemis-graph", params={"limit": 3, "focus": hub}
        ).json()
        assert around["focus"] == hub and around["nodes"][0]["id"] == hub
        top = client.get("/namespaces/demo/views/memtree", params={"depth": 1}).json()
        assert {n["depth"] for n in top["nodes"]} == {0, 1}
        assert client.get("/namespaces/demo/views/nope").status_code == 404
        assert client.get("/namespaces/other/views").status_code == 404
        who = client.get("/whoami").json()
        assert who["scope"] == "read" and who["namespaces"] == ["demo"]
    assert httpx.get(f"{site['base']}/v1/whoami").json()["scope"] is None


def test_a_write_key_corrects_and_deletes_after_confirming(
    browser: WebDriver, site: dict[str, Any]
) -> None:
    signed_in(browser, site, site["write"])
    with api(site, site["write"]) as client:
        client.post("/namespaces/demo/episodes", json={"episodes": [{"id": "zz", "text": "tmp"}]})
    go(browser, "namespaces")
    go(browser, "episodes")
    browser.find_element(By.NAME, "speaker").send_keys("Tomas")
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait_text(browser, '.episode[data-id="t08"]', "landlord").click()
    wait(browser, "#episode-detail details.edit")[0].click()
    text = browser.find_element(By.ID, "edit-text")
    text.clear()
    text.send_keys("The landlord agreed to the dog.")
    browser.find_element(By.ID, "update").click()
    wait(browser, "dialog[open]")
    browser.find_element(By.ID, "confirmno").click()
    assert "1 earlier" not in browser.find_element(By.ID, "episode-detail").text
    browser.find_element(By.ID, "update").click()
    wait(browser, "dialog[open]")
    browser.find_element(By.ID, "confirmyes").click()
    wait_text(browser, "#episode-detail", "History (1 earlier version(s))")
    with api(site, site["write"]) as client:
        assert client.get("/namespaces/demo/episodes/t08").json()["text"].endswith("to the dog.")
    browser.find_element(By.NAME, "speaker").clear()
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    until(
        browser,
        lambda d: d.find_element(By.CSS_SELECTOR, ".episode").get_attribute("data-id") == "t01",
    )
    page_until(browser, "zz")
    browser.find_element(By.CSS_SELECTOR, '.episode[data-id="zz"]').click()
    # t08's panel (and its editor) stays until zz's replaces it: wait for zz's
    wait_text(browser, "#episode-detail h3", "Episode zz")
    wait(browser, "#episode-detail details.edit")[0].click()
    browser.find_element(By.ID, "delete").click()
    wait(browser, "dialog[open]")
    browser.find_element(By.ID, "confirmyes").click()
    wait_text(browser, "#episode-detail", "Deleted zz.")
    with api(site, site["write"]) as client:
        assert client.get("/namespaces/demo/episodes/zz").status_code == 404


def test_a_read_key_sees_no_write_buttons(
    browser: WebDriver, site: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(browser, site, site["read"], "namespaces")
    assert [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#namespace option")] == ["demo"]
    wait_text(browser, "main", "Failed enrichments")
    assert "key: read" in browser.find_element(By.ID, "who").text
    assert browser.find_elements(By.ID, "retry") == []
    go(browser, "episodes")
    wait(browser, ".episode", 25)[0].click()
    wait_text(browser, "#episode-detail", "Derived from it")
    with pytest.raises(NoSuchElementException):
        browser.find_element(By.CSS_SELECTOR, "#episode-detail details.edit")
    assert browser.find_elements(By.ID, "update") == []
    assert browser.find_elements(By.ID, "delete") == []


def test_the_other_designs_views_draw_their_records(
    browser: WebDriver, site: dict[str, Any], tmp_path: Path
) -> None:
    signed_in(browser, site, site["write"])
    go(browser, "namespaces")
    go(browser, "designs")
    with api(site, site["write"]) as client:
        for name in ("mindgraph", "personalai", "higmem"):
            want = client.get(f"/namespaces/demo/views/{name}", params={"limit": 150}).json()
            assert want["nodes"], name
            open_view(browser, name)
            css = "#tree .node" if want["layout"] == "tree" else "svg.graph circle"
            wait_text(browser, "#view-summary", want["title"])
            assert len(wait(browser, css, len(want["nodes"]))) == len(want["nodes"])
            if name == "personalai":
                invalid = browser.find_elements(By.CSS_SELECTOR, "#edge-list .invalid")
                assert len(invalid) == sum(e["invalid"] for e in want["edges"])
            shot(browser, name, tmp_path)


def test_an_open_service_serves_the_page_under_its_policy(
    served: tuple[httpx.Client, Path],
) -> None:
    """Without live keys the page needs none (whoami: admin over everything); the page
    and its files come from the package, under a policy that allows only them."""
    client, _ = served
    assert client.get("/whoami").json() == {"scope": "admin", "namespaces": ["*"], "keys": False}
    page = client.get("/../")
    assert page.status_code == 200 and 'src="/explorer/app.js"' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    script = client.get("/../explorer/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert client.get("/../explorer/nope.js").status_code == 404
    assert "/" not in client.get("/../openapi.json").json()["paths"]
