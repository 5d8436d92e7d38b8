"""The HTML report's charts with many recipes, checked on the figures, not on pixels.

A user comparing 14 recipes got charts whose labels overlapped, whose bars and names
were cut off and whose colours repeated. Here 16 recipes (20 for the colours alone),
summarised by the harness from synthetic rows: each recipe has one colour, its own, the
same in every chart; no two texts of a figure overlap and none leaves the figure; every
bar, line and point lies inside its axes' view limits.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.text import Text

from memstrata.eval.qa import metrics_retrieval, report_html, summary
from memstrata.eval.qa.cost import STAGES
from memstrata.eval.qa.plots import figures, recipe_colours

RECIPES = [
    "rag",
    "default",
    "mnemis",
    "mnemis-no-s2",
    "memtree",
    "memtree-traversal",
    "higmem",
    "higmem-turns",
    "mindgraph",
    "personalai",
    "personalai-astar",
    "personalai-wc",
    "personalai-beam",
    "personalai-mixed",
    "facts-first-with-a-rather-long-recipe-name",
    "x",
]
CATEGORIES = ["single-hop", "multi-hop", "temporal", "open-domain", "single-session-preference"]


def fake_report(names: list[str], seed: int = 7) -> dict[str, Any]:
    """A ``summary.json`` as ``bench qa`` writes it, from synthetic question rows: each
    recipe ranks 40 turns with its own skill, and spends its own seconds per stage."""
    rng = random.Random(seed)
    turns = [f"D1:{i}" for i in range(40)]
    rows, costs = [], []
    for r, name in enumerate(names):
        skill = (r + 1) / (len(names) + 1)
        for q in range(12):
            gold = rng.sample(turns, 2)
            rest = [t for t in turns if t not in gold]
            rng.shuffle(rest)
            ranked = rest[:]
            for g in gold:
                ranked.insert(int((1 - skill) * rng.uniform(0, 30)), g)
            evset = ranked[: rng.randint(3, 40)]  # Avg K up to 40
            metrics = metrics_retrieval.question_metrics(ranked, evset, gold, [], {})
            rows.append(
                {
                    "recipe": name,
                    "sample": "s",
                    "qid": f"q{q}",
                    "category": CATEGORIES[q % len(CATEGORIES)],
                    "evidence": gold,
                    "retrieval": metrics,
                    "latency_ms": rng.uniform(5, 50),
                }
            )
        for stage in STAGES:
            seconds = rng.uniform(0, 4000) if stage == "ingestion" else rng.uniform(0, 90)
            costs.append({"recipe": name, "sample": "s", "stage": stage, "seconds": seconds})
    per_recipe = summary.summarise(rows, costs, names)
    return {
        "data": "synthetic.json",
        "format": "qaset",
        "samples": 1,
        "questions": 12,
        "wall_seconds": 1.0,
        "served_from_cache": 0,
        "recipes": per_recipe,
        "needs_llm": [],
    }


def recipe_colours_in(fig: Figure) -> dict[str, set[str]]:
    """Every colour each recipe is drawn in: bars (``gid``), lines and points (label)."""
    seen: dict[str, set[str]] = {}
    for ax in fig.axes:
        for patch in ax.patches:
            if patch.get_gid():
                seen.setdefault(str(patch.get_gid()), set()).add(to_hex(patch.get_facecolor()))
        for line in ax.get_lines():
            if not line.get_label().startswith("_"):
                seen.setdefault(line.get_label(), set()).add(to_hex(line.get_color()))
        for coll in ax.collections:
            if isinstance(coll, PathCollection) and not str(coll.get_label()).startswith("_"):
                colours = {to_hex(c) for c in coll.get_facecolor()}
                seen.setdefault(str(coll.get_label()), set()).update(colours)
    return seen


def in_view(ax: Axes, axis: str, value: float) -> bool:
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    return lo - 1e-9 <= value <= hi + 1e-9


def shown_texts(fig: Figure) -> list[Text]:
    """The texts a reader sees: titles, axis labels, legend entries and the tick labels
    of ticks inside the view limits (matplotlib keeps others around, undrawn)."""
    ticks: set[int] = set()
    shown: list[Text] = []
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                ticks.update((id(tick.label1), id(tick.label2)))
                shown += [
                    label
                    for label in (tick.label1, tick.label2)
                    if label.get_visible()
                    and label.get_text().strip()
                    and in_view(ax, name, tick.get_loc())
                ]
    for text in fig.findobj(Text):
        if id(text) not in ticks and text.get_visible() and text.get_text().strip():
            shown.append(text)
    return list({id(t): t for t in shown}.values())


Charts = tuple[list[str], list[tuple[str, Figure]]]


@pytest.fixture(scope="module", params=[16, 24], ids=lambda n: f"{n}-recipes")
def charts(request: pytest.FixtureRequest) -> Charts:
    """The report's figures, drawn, for the 16 recipes and for 24 (past tab20's 20)."""
    names = (RECIPES + [f"plugin-recipe-{i}" for i in range(8)])[: request.param]
    out = figures(fake_report(names))
    for _, fig in out:
        fig.canvas.draw()
    return names, out


def test_each_recipe_has_its_own_colour_the_same_in_every_chart(charts: Charts) -> None:
    names, figs = charts
    expected = recipe_colours(names)
    assert len(set(expected.values())) == len(names)
    assert [title for title, _ in figs] == [
        "Recall against K",
        "Precision against Avg K",
        "Per category",
        "Cost per stage",
    ]
    for title, fig in figs:
        seen = recipe_colours_in(fig)
        assert set(seen) == set(names), title  # every recipe drawn ...
        assert {n: c for n, (c,) in seen.items()} == expected, title  # ... in one colour


def test_no_text_overlaps_another_or_leaves_the_figure(charts: Charts) -> None:
    names, figs = charts
    for title, fig in figs:
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        texts = shown_texts(fig)
        shown = {t.get_text() for t in texts}
        assert set(names) <= shown, (title, set(names) - shown)  # legend or axis
        boxes = [(t.get_text(), t.get_window_extent(renderer).padded(-0.5)) for t in texts]
        for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
            assert not box_a.overlaps(box_b), f"{title}: {a!r} overlaps {b!r}"
        for text, box in boxes:
            assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1), (
                f"{title}: {text!r} is cut off"
            )
        for legend in fig.legends:
            box = legend.get_window_extent(renderer)
            assert fig.bbox.x1 >= box.x1 and fig.bbox.y0 <= box.y0, title


def test_every_bar_line_and_point_lies_inside_its_axes(charts: Charts) -> None:
    names, figs = charts
    for title, fig in figs:
        drawn = 0
        for ax in fig.axes:
            for bar in ax.patches:
                if bar.get_gid():
                    x0, y0, w, h = bar.get_x(), bar.get_y(), bar.get_width(), bar.get_height()
                    assert in_view(ax, "x", x0) and in_view(ax, "x", x0 + w), (title, bar)
                    assert in_view(ax, "y", y0) and in_view(ax, "y", y0 + h), (title, bar)
                    drawn += 1
            for line in ax.get_lines():
                for x, y in line.get_xydata():  # type: ignore[union-attr]
                    assert in_view(ax, "x", x) and in_view(ax, "y", y), (title, line)
                    drawn += 1
            for coll in ax.collections:
                for x, y in coll.get_offsets():  # type: ignore[union-attr]
                    assert in_view(ax, "x", x) and in_view(ax, "y", y), (title, coll)
                    drawn += 1
            # headroom: the largest value does not touch the top of its scale
            values = [b.get_width() for b in ax.patches if b.get_gid()]
            if values and max(values) > 0:
                assert max(values) < max(ax.get_xlim()), title
        assert drawn >= len(names), title


def test_colours_stay_distinct_past_the_palette() -> None:
    names = [f"recipe-{i}" for i in range(30)]
    colours = recipe_colours(names)
    assert len(set(colours.values())) == 30
    # the same name keeps its place, and so its colour, in another chart of the report
    assert recipe_colours(names) == colours
    rgb = [to_rgb(c) for c in colours.values()]
    closest = min(math.dist(a, b) for a, b in itertools.combinations(rgb, 2))
    assert closest > 0.09  # tab20 itself: light blue and light cyan are 0.098 apart


def test_the_html_report_embeds_one_image_per_chart() -> None:
    page = report_html.render(fake_report(RECIPES))
    assert page.count("<img alt=") == 4
    assert page.count("src='data:image/png;base64,") == 4
    for name in RECIPES:
        assert f"<td>{name}</td>" in page
