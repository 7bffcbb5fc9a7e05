"""A self-contained HTML report of one or more runs: the meta-evaluation tables and plots, PNGs embedded as base64."""

from __future__ import annotations

import base64
import html
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.meta.table import ScoreTable

__all__ = ["build_report", "render_table"]

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f2f2f2; }
caption { font-weight: bold; text-align: left; padding: 0.3em 0; }
.notes { color: #555; font-size: 0.85em; margin: 0 0 1.2em 0; padding-left: 1.2em; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f5f5f5; padding: 0 0.2em; }
"""


def render_table(table: Mapping[str, Any]) -> str:
    """One table of :mod:`assay.report.tables` as escaped HTML, its notes as a list below."""
    e = html.escape
    head = "".join(f"<th>{e(str(c))}</th>" for c in table["columns"])
    body = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in table["rows"])
    notes = "".join(f"<li>{e(n)}</li>" for n in table.get("notes") or [])
    return (f"<table><caption>{e(table['title'])}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            f"</table>" + (f"<ul class='notes'>{notes}</ul>" if notes else ""))


def _img(png: bytes, alt: str) -> str:
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"


def _run_section(table: ScoreTable, result: dict[str, Any]) -> str:
    from assay.report.plots import scatter_png
    from assay.report.tables import agreement_table, correlation_table, quality_table

    dims = [r["dimension"] for r in result["rows"] if r["dimension"] != "average"]
    parts = [f"<h2>{html.escape(table.name)}</h2>", f"<p><code>{html.escape(table.source)}</code></p>",
             render_table(correlation_table(result))]
    if result["human_agreement"]:
        parts.append(render_table(agreement_table(result["human_agreement"],
                                                  "human annotators' agreement (the ceiling)")))
    if result.get("quality_split"):
        parts.append(render_table(quality_table(result["quality_split"], result["measures"])))
    parts.append("<h3>predicted score vs human rating</h3>")
    parts.append(_img(scatter_png(table, dims), f"scatter of {table.name}"))
    parts.append("<p class='notes'>Points jittered by 6% of each axis' range so that tied Likert ratings "
                 "stay visible; rho is the pooled Spearman.</p>")
    return "\n".join(parts)


def _probe_section(source: str | Path) -> str:
    """The last ``assay probe`` result kept in a run directory, as a table; empty for files and unprobed runs."""
    from assay.probe.run import META_KEY
    from assay.probe.table import probe_table
    from assay.store import DB_NAME, RunStore

    if not (Path(source) / DB_NAME).exists():
        return ""
    with RunStore(source, readonly=True) as store:
        res = store.get_meta(META_KEY)
    return "" if res is None else "\n<h3>judge diagnostics (assay probe)</h3>\n" + render_table(probe_table(res))


def _compare_section(result: dict[str, Any]) -> str:
    from assay.report.plots import stability_png
    from assay.report.tables import (
        agreement_table,
        paired_table,
        runs_table,
        significance_table,
        stability_table,
    )

    parts = ["<h2>comparison</h2>", render_table(runs_table(result))]
    if result["agreement"]:
        parts.append(render_table(agreement_table(result["agreement"], "agreement among judges")))
    if result["human_agreement"]:  # beside the judges' agreement, as the papers print it
        parts.append(render_table(agreement_table(result["human_agreement"],
                                                  "human annotators' agreement (the ceiling)")))
    if result.get("notes"):
        parts.append("<ul class='notes'>" + "".join(f"<li>{html.escape(n)}</li>" for n in result["notes"]) + "</ul>")
    if result["significance"]:
        parts.append(render_table(significance_table(result["significance"])))
    parts.append(render_table(stability_table(result["stability"])))
    main = "spearman" if "spearman" in result["measures"] else result["measures"][0]
    parts.append("<h3>stability: distribution of the average correlation across judges / runs</h3>")
    parts.append(_img(stability_png(result["stability"], main), "stability density"))
    if result["paired_bootstrap"]:
        parts.append(render_table(paired_table(result["paired_bootstrap"])))
    return "\n".join(parts)


def build_report(sources: Sequence[str | Path], output: str | Path, *, level: str | None = None,
                 groups: Mapping[str, Sequence[str]] | None = None, bootstrap: int = 0, seed: int = 0,
                 split: bool = True) -> Path:
    """Write the HTML report of ``sources`` (run directories or scores files) to ``output``.

    One section per run (correlation table, human ceiling, quality split, scatter plots, and the last
    ``assay probe`` result when the run keeps one); with two
    or more runs, a comparison section (side by side, agreement, significance, stability density).
    """
    from assay import __version__
    from assay.meta.compare import compare
    from assay.meta.evaluate import meta_evaluate
    from assay.meta.inputs import load_scores

    tables = [load_scores(s) for s in sources]
    sections = [_run_section(t, meta_evaluate(t, level=level, bootstrap=bootstrap, seed=seed, split=split))
                + _probe_section(s) for s, t in zip(sources, tables, strict=True)]
    if len(tables) > 1:
        sections.append(_compare_section(compare(tables, groups=groups, level=level, bootstrap=bootstrap,
                                                 seed=seed)))
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>assay report</title><style>{_CSS}</style>"
            f"</head><body><h1>assay meta-evaluation report</h1><p>assay {__version__}, "
            f"{html.escape(time.strftime('%Y-%m-%d %H:%M'))}; {len(tables)} run(s).</p>"
            + "\n".join(sections) + "</body></html>")
    out = Path(output)
    out.write_text(page, encoding="utf-8")
    return out
