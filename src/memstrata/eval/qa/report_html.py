"""A self-contained HTML report: the Markdown report's tables and matplotlib plots
embedded as PNG data URIs, so the file opens anywhere, offline, on its own."""

from __future__ import annotations

import base64
import html
import io
from typing import TYPE_CHECKING, Any

from memstrata.eval.qa.plots import figures
from memstrata.eval.qa.report import fmt, tables

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_STYLE = """body{font-family:sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%;margin:8px}
.plots{display:flex;flex-wrap:wrap;align-items:flex-start}"""


def png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", pad_inches=0.1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def plots(report: dict[str, Any]) -> list[tuple[str, str]]:
    """(title, PNG data URI) of every chart (:mod:`memstrata.eval.qa.plots`)."""
    return [(title, png(fig)) for title, fig in figures(report)]


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
