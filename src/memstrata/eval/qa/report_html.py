"""A self-contained HTML report: the Markdown report's tables and matplotlib plots
embedded as PNG data URIs, so the file opens anywhere, offline, on its own."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from memstrata.eval.qa.metrics_retrieval import KS  # noqa: E402
from memstrata.eval.qa.report import fmt, tables  # noqa: E402

_STYLE = """body{font-family:sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%;margin:8px}
.plots{display:flex;flex-wrap:wrap}"""


def png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def plots(report: dict[str, Any]) -> list[tuple[str, str]]:
    recipes: dict[str, Any] = report["recipes"]
    out = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, e in recipes.items():
        ax.plot(KS, [e.get(f"recall@{k}", 0.0) for k in KS], marker="o", label=name)
    ax.set(xscale="log", xlabel="K (distinct source turns)", ylabel="Recall@K", ylim=(0, 1))
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.legend(fontsize=8)
    ax.set_title("Recall against K")
    out.append(("Recall against K", png(fig)))

    cats = sorted({c for e in recipes.values() for c in e["by_category"]})
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(cats) + 2), 4))
    width = 0.8 / max(1, len(recipes))
    for i, (name, e) in enumerate(recipes.items()):
        values = [e["by_category"].get(c, {}).get("recall@10", 0.0) for c in cats]
        ax.bar([x + i * width for x in range(len(cats))], values, width, label=name)
    ax.set_xticks([x + width * (len(recipes) - 1) / 2 for x in range(len(cats))], cats)
    ax.set(ylabel="Recall@10", ylim=(0, 1), title="Recall@10 per category")
    ax.legend(fontsize=8)
    out.append(("Per category", png(fig)))

    stages = ["ingestion", "retrieval", "answer", "judge"]
    fig, ax = plt.subplots(figsize=(6, 4))
    bottom = [0.0] * len(recipes)
    for stage in stages:
        values = [e["cost"].get(stage, {}).get("seconds", 0.0) for e in recipes.values()]
        ax.bar(list(recipes), values, bottom=bottom, label=stage)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set(ylabel="seconds", title="Cost per stage (wall seconds)")
    ax.tick_params(axis="x", rotation=30)
    ax.legend(fontsize=8)
    out.append(("Cost per stage", png(fig)))

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, e in recipes.items():
        if e.get("avg_k") is not None:
            xy = (e["avg_k"], e.get("evidence_precision", 0.0))
            ax.scatter([xy[0]], [xy[1]], s=60, label=name)
            ax.annotate(name, xy, textcoords="offset points", xytext=(5, 5), fontsize=7)
    top = max([e.get("evidence_precision", 0.0) for e in recipes.values()] + [0.05])
    ax.set(xlabel="Avg K (evidence set size)", ylabel="Precision of the evidence set")
    ax.set(ylim=(0, min(1.0, 1.25 * top)), title="Precision against Avg K")
    ax.legend(fontsize=8)
    out.append(("Precision against Avg K", png(fig)))
    return out


def render(report: dict[str, Any]) -> str:
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>bench qa: {esc(str(report['data']))}</title><style>{_STYLE}</style></head><body>",
        f"<h1>bench qa: {esc(str(report['data']))} ({esc(report['format'])})</h1>",
        f"<p>{report['samples']} samples, {report['questions']} questions; wall time "
        f"{report['wall_seconds']:.1f} s; {report['served_from_cache']} rows from the cache.</p>",
    ]
    if report["needs_llm"]:
        parts.append(
            "<p><b>Without an LLM these columns are empty:</b> "
            + esc(", ".join(report["needs_llm"]))
            + ". Every retrieval figure, the latencies and the extractive answers' F1 are "
            "computed.</p>"
        )
    parts.append("<div class='plots'>")
    for title, uri in plots(report):
        parts.append(f"<img alt='{esc(title)}' src='{uri}'>")
    parts.append("</div>")
    for title, head, rows in tables(report):
        parts.append(f"<h2>{esc(title)}</h2><table><tr>")
        parts.append("".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>")
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{esc(fmt(v))}</td>" for v in row) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)
