"""The report's charts, readable with any number of recipes (a run may compare 20).

* Every recipe keeps one colour in every chart (:func:`recipe_colours`): the first 20 take
  the 20 colours of ``tab20`` in report order (its ten hues first, then their light
  shades), further ones a colour hashed from their name, kept apart from those taken.
  Lines and points also get a marker shape of their own, so a hue and its light shade
  are told apart.
* Recipe names never crowd an axis: the bar charts put recipes on the vertical axis, one
  row each, as small multiples (a panel per category or per stage); the line and
  scatter charts name recipes in a legend outside the axes.
* The figures grow with the number of recipes and categories, use constrained layout,
  and leave headroom above the largest value, so no bar, point or label is cut off.

The figures are built without pyplot (no global state), and each bar carries its recipe
name as ``gid``, so the tests can check colours and extents on the figures themselves.
matplotlib is the extra ``bench``: without it, importing this module is a
:class:`~memstrata.ConfigError` that names the extra.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from memstrata.errors import ConfigError

try:
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_hex, to_rgb
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator, NullFormatter
except ImportError as exc:  # the plots are the extra ``bench``
    raise ConfigError("the report's plots need matplotlib: pip install 'memstrata[bench]'") from exc

from memstrata.eval.qa.cost import STAGES
from memstrata.eval.qa.metrics_retrieval import KS

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "*")
ROW_INCHES = 0.24  # height of one recipe's row in the bar charts (8 pt labels need 0.11)
PANEL_INCHES = 2.0  # width of one small-multiple panel
MAX_PANELS = 6  # panels a row
LEGEND_ROWS = 20  # legend entries per column
CHAR_INCHES = 0.065  # width of a character of an 8 pt label, a little generous


def recipe_colours(names: Iterable[str]) -> dict[str, str]:
    """One distinct colour per recipe (hex), fixed by its place in ``names``."""
    tab20 = [to_hex(c) for c in matplotlib.colormaps["tab20"].colors]  # type: ignore[attr-defined]
    palette = tab20[0::2] + tab20[1::2]
    out: dict[str, str] = {}
    for i, name in enumerate(dict.fromkeys(names)):
        out[name] = palette[i] if i < len(palette) else _hashed(name, list(out.values()))
    return out


def _hashed(name: str, taken: Sequence[str]) -> str:
    """A colour from the name's hash, moved along the hue circle (golden-ratio steps)
    until it is far from every colour taken; the farthest candidate if none is."""
    start = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") / 2**64
    best, best_gap = "", -1.0
    for step in range(120):
        hue = (start + step * 0.6180339887) % 1.0
        sat, val = ((0.75, 0.7), (0.45, 0.92), (0.9, 0.45))[step % 3]
        colour = to_hex(colorsys.hsv_to_rgb(hue, sat, val))
        gap = min((_distance(colour, t) for t in taken), default=1.0)
        if gap > 0.18:
            return colour
        if gap > best_gap and colour not in taken:
            best, best_gap = colour, gap
    return best


def _distance(a: str, b: str) -> float:
    return math.dist(to_rgb(a), to_rgb(b))


def figures(report: dict[str, Any]) -> list[tuple[str, Figure]]:
    """(title, figure) of every chart of the report, in the order shown."""
    recipes: dict[str, Any] = report["recipes"]
    colours = recipe_colours(recipes)
    with matplotlib.rc_context({"font.size": 8, "axes.titlesize": 9, "figure.titlesize": 10}):
        out = [
            ("Recall against K", _recall_against_k(recipes, colours)),
            ("Precision against Avg K", _precision_against_avg_k(recipes, colours)),
            ("Per category", _per_category(recipes, colours)),
            ("Cost per stage", _cost_per_stage(recipes, colours)),
        ]
    return out


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _legend(fig: Figure, n: int) -> None:
    """The recipes' legend, outside the axes on the right, in columns of 20."""
    fig.legend(loc="outside right upper", ncols=max(1, math.ceil(n / LEGEND_ROWS)), frameon=False)


def _legend_size(names: list[str]) -> tuple[float, float]:
    """Inches the legend of ``names`` takes: (width, height)."""
    cols = max(1, math.ceil(len(names) / LEGEND_ROWS))
    width = cols * (0.45 + CHAR_INCHES * max((len(n) for n in names), default=0))
    return width, 0.19 * math.ceil(len(names) / cols) + 0.6


def _with_legend(names: list[str]) -> Figure:
    """A figure of one axes (4.8 by 3.6 inches) and room for the recipes' legend."""
    width, height = _legend_size(names)
    return _figure(4.8 + width, max(3.6, height))


def _recall_against_k(recipes: dict[str, Any], colours: dict[str, str]) -> Figure:
    n = len(recipes)
    fig = _with_legend(list(recipes))
    ax = fig.add_subplot()
    for i, (name, e) in enumerate(recipes.items()):
        values = [e.get(f"recall@{k}") or 0.0 for k in KS]
        ax.plot(KS, values, marker=MARKERS[i % len(MARKERS)], color=colours[name], label=name)
    ax.set(xscale="log", xlabel="K (distinct source turns)", ylabel="Recall@K")
    ax.set(xlim=(KS[0] / 1.25, KS[-1] * 1.25), ylim=(-0.03, 1.05), title="Recall against K")
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.grid(alpha=0.3)
    _legend(fig, n)
    return fig


def _panels(
    title: str,
    names: list[str],
    colours: dict[str, str],
    panels: list[tuple[str, list[float]]],
    xlabel: str,
    xmax: float | None = None,
) -> Figure:
    """Horizontal bars, one row per recipe, one panel per ``panels`` entry (at most six
    a row, rows filled evenly); recipe names on the left of each row of panels.
    ``xmax``: a shared scale (else each panel's own), with headroom."""
    rows = max(1, math.ceil(len(panels) / MAX_PANELS))
    cols = max(1, math.ceil(len(panels) / rows))
    label = max((len(n) for n in names), default=4) * CHAR_INCHES + 0.3
    height = rows * (ROW_INCHES * len(names) + 0.9) + 0.5
    fig = _figure(label + PANEL_INCHES * cols, height)
    axes = fig.subplots(rows, cols, sharey=True, squeeze=False)
    ys = list(range(len(names)))
    for i, ax in enumerate(axes.flat):
        if i >= len(panels):
            fig.delaxes(ax)
            continue
        panel, values = panels[i]
        bars = ax.barh(ys, values, height=0.75, color=[colours[n] for n in names])
        for bar, name in zip(bars, names, strict=True):
            bar.set_gid(name)
        top = xmax if xmax is not None else max([*values, 0.0])
        ax.set_xlim(0, top * 1.08 if top > 0 else 1.0)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=3, steps=[1, 2, 2.5, 5, 10]))
        ax.set_title("\n".join(textwrap.wrap(panel, 22)))
        ax.grid(axis="x", alpha=0.3)
        ax.set_axisbelow(True)
    first = axes[0][0]
    first.set_yticks(ys, names)
    first.set_ylim(len(names) - 0.5, -0.5)  # the first recipe on top
    fig.suptitle(title)
    fig.supxlabel(xlabel)
    return fig


def _per_category(recipes: dict[str, Any], colours: dict[str, str]) -> Figure:
    names = list(recipes)
    cats = sorted({c for e in recipes.values() for c in e.get("by_category", {})})
    panels = [
        (c, [recipes[n].get("by_category", {}).get(c, {}).get("recall@10") or 0.0 for n in names])
        for c in cats
    ]
    return _panels("Recall@10 per category", names, colours, panels, "Recall@10", xmax=1.0)


def _cost_per_stage(recipes: dict[str, Any], colours: dict[str, str]) -> Figure:
    """One panel per stage that took time, each on its own scale (retrieval seconds are
    not a sliver beside the build's), and the total."""
    names = list(recipes)
    seconds = {
        s: [float(recipes[n].get("cost", {}).get(s, {}).get("seconds") or 0.0) for n in names]
        for s in STAGES
    }
    panels = [(s, v) for s, v in seconds.items() if any(v)] or list(seconds.items())
    if len(panels) > 1:
        panels.append(("total", [sum(v) for v in zip(*seconds.values(), strict=True)]))
    return _panels("Cost per stage (wall seconds)", names, colours, panels, "seconds")


def _precision_against_avg_k(recipes: dict[str, Any], colours: dict[str, str]) -> Figure:
    shown = {n: e for n, e in recipes.items() if e.get("avg_k") is not None}
    n = len(shown)
    fig = _with_legend(list(shown))
    ax = fig.add_subplot()
    marker = {name: MARKERS[i % len(MARKERS)] for i, name in enumerate(recipes)}
    for name, e in shown.items():
        xy = (e["avg_k"], e.get("evidence_precision") or 0.0)
        ax.scatter([xy[0]], [xy[1]], s=50, marker=marker[name], color=colours[name], label=name)
    xs = [e["avg_k"] for e in shown.values()] or [1.0]
    ys = [e.get("evidence_precision") or 0.0 for e in shown.values()] or [0.0]
    ax.set_xlim(0, max(xs) * 1.12 + 0.5)
    ax.set_ylim(0, min(1.05, max(max(ys), 0.04) * 1.2))
    ax.set(xlabel="Avg K (evidence set size)", ylabel="Precision of the evidence set")
    ax.set_title("Precision against Avg K")
    ax.grid(alpha=0.3)
    if n:
        _legend(fig, n)
    return fig
