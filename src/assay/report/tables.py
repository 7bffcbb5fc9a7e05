"""Meta-evaluation results as plain tables of strings, shared by the terminal (rich) and the HTML report.

Each function returns ``{"title", "columns", "rows", "notes"}`` so that the CLI and the report print
exactly the same numbers; ``keys`` (default 1) says how many leading columns name a row (the terminal puts them in a
legend when the table is too wide for it: :mod:`assay.cli.fit`).
"""

from __future__ import annotations

import math
from typing import Any

from assay.meta.correlation import SYMBOLS

Table = dict[str, Any]

_LEVEL_TEXT = {
    "sample": "sample-level (summary-level): per source document across systems, then averaged over documents",
    "system": "system-level: mean score per system, correlated across systems",
    "dataset": "dataset-level (turn-level): all items pooled",
}

__all__ = ["agreement_table", "correlation_table", "fmt", "paired_table", "pairwise_tables", "protocol_table",
           "quality_table", "runs_table", "significance_table", "stability_table"]


def fmt(value: Any, digits: int = 3) -> str:
    """A number as the tables print it; None and NaN print as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def _with_ci(value: Any, ci: list[float] | None) -> str:
    if ci is None:
        return fmt(value)
    return f"{fmt(value)} [{fmt(ci[0])}, {fmt(ci[1])}]"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def correlation_table(result: dict[str, Any]) -> Table:
    """The papers' table of one run: a row per dimension plus the average, coverage beside correlations."""
    measures = result["measures"]
    sample = result["level"] == "sample"
    cols = ["dimension", "scored", "coverage", *[SYMBOLS[m] for m in measures]]
    cols += ["docs (skipped)"] if sample else ["n"]
    rows = []
    for r in result["rows"]:
        cells = [r["dimension"], f"{r['scored']}/{r['items']}", _pct(r["coverage"])]
        cells += [_with_ci(r[m], r.get(f"{m}_ci")) for m in measures]
        if r["dimension"] == "average":
            cells.append(f"{r.get('dimensions_averaged', '-')} dims")
        elif sample:
            cells.append(f"{r['n_units']} ({r['skipped']})")
        else:
            cells.append(str(r["n_units"]))
        rows.append(cells)
    t = result["table"]
    who = " / ".join(x for x in (t.get("method"), t.get("judge")) if x) or t["name"]
    notes = [f"{_LEVEL_TEXT[result['level']]} ({result['level_reason']}); Kendall tau-{result['kendall_variant']}; "
             "only items with both a score and a human rating enter a correlation"]
    if sample:
        notes.append("documents with constant scores or fewer than three rated outputs are skipped (count in brackets)")
    if any(isinstance(r[m], float) and math.isnan(r[m]) for r in result["rows"] for m in measures):
        notes.append("- : no correlation (constant predicted or human scores, or fewer than three scored items)")
    if result.get("bootstrap"):
        b = result["bootstrap"]
        notes.append(f"{int(b['ci'] * 100)}% percentile bootstrap intervals, {b['n_boot']} resamples of "
                     f"{b['n_units']} {b['unit']}s, seed {b['seed']}")
        for name, counts in (b.get("undefined") or {}).items():
            parts = "; ".join(f"{n} for {SYMBOLS[m]}" for m, n in counts.items())
            notes.append(f"{name}: resamples with no correlation (constant scores) left out of the interval: {parts}"
                         f" (of {b['n_boot']})")
    for dim, reasons in (result.get("unscored_reasons") or {}).items():
        notes.append(f"unscored {dim}: " + "; ".join(f"{n}x {why}" for why, n in reasons))
    title = f"{who} on {t['dataset']}" if t.get("dataset") else who
    return {"title": title, "columns": cols, "rows": rows, "notes": notes}


def agreement_table(rows: list[dict[str, Any]], title: str = "agreement") -> Table:
    """Agreement rows (judge groups or human annotators): alpha, Fleiss' kappa, ICC."""
    cols = ["who", "dimension", "raters", "items (complete)", "alpha int", "alpha ord", "fleiss kappa",
            "ICC(2,1)", "ICC(2,k)"]
    out, rules = [], {}
    for r in rows:
        who = r.get("raters") or f"{r.get('method')}: {r.get('group')}"
        out.append([who, r["dimension"], str(r["n_raters"]), f"{r['n_items']} ({r['n_complete']})",
                    fmt(r["alpha_interval"]), fmt(r["alpha_ordinal"]), fmt(r["fleiss_kappa"]), fmt(r["icc2_1"]),
                    fmt(r["icc2_k"])])
        rules.setdefault(r["fleiss_rule"], []).append(f"{who}/{r['dimension']}")
    notes = [f"Fleiss categories ({', '.join(v[:3])}{'...' if len(v) > 3 else ''}): {k}" for k, v in rules.items()]
    notes.append("ICC and Fleiss' kappa use the items every rater scored; alpha uses all ratings")
    return {"title": title, "columns": cols, "rows": out, "notes": notes, "keys": 2}


def runs_table(result: dict[str, Any]) -> Table:
    """Runs side by side: per dimension the main correlation, then every measure's average."""
    measures = result["measures"]
    main = "spearman" if "spearman" in measures else measures[0]
    dims = result["dimensions"]
    cols = ["run", "method", "judge", "coverage", *[f"{d} {SYMBOLS[main]}" for d in dims]]
    cols += [f"avg {SYMBOLS[m]}" for m in measures] if len(dims) > 1 else []
    rows = []
    for run in result["runs"]:
        by = {r["dimension"]: r for r in run["rows"]}
        cov = by.get("average", run["rows"][0])["coverage"]
        cells = [run["label"], run.get("method") or "-", run.get("judge") or "-", _pct(cov)]
        cells += [fmt(by[d][main]) for d in dims]
        if len(dims) > 1:
            cells += [fmt(by["average"][m]) for m in measures]
        rows.append(cells)
    return {"title": f"runs side by side ({result['level']}-level)", "columns": cols, "rows": rows, "keys": 3,
            "notes": [f"level: {result['level']} ({result['level_reason']})"]}


def significance_table(tests: list[dict[str, Any]]) -> Table:
    """Wilcoxon tests between methods with Benjamini-Hochberg-adjusted p-values."""
    cols = ["methods", "measure", "test", "n", "statistic", "p", "p (BH)", "significant"]
    rows = [[f"{t['method_a']} vs {t['method_b']}", t["measure"], t["test"],
             str(t.get("n_pairs", f"{t.get('n_a')}+{t.get('n_b')}")), fmt(t["statistic"]), fmt(t["p_value"], 4),
             fmt(t["p_adjusted"], 4), fmt(t["significant"])] for t in tests]
    alpha = tests[0]["alpha"] if tests else 0.05
    return {"title": "significance across judges", "columns": cols, "rows": rows, "keys": 2,
            "notes": [f"two-sided; Benjamini-Hochberg over the {sum(t['p_value'] == t['p_value'] for t in tests)} "
                      f"defined tests at FDR {alpha}; - : undefined (fewer than two judges per method, "
                      "or no difference at all)"]}


def stability_table(rows: list[dict[str, Any]], dimension: str = "average") -> Table:
    """Mean and variance of the correlations across judges or runs, per method and measure."""
    cols = ["method", "measure", "dimension", "runs", "mean", "variance", "std", "min", "max"]
    out = [[r["method"], SYMBOLS.get(r["measure"], r["measure"]), r["dimension"], str(r["n"]), fmt(r["mean"]),
            fmt(r["variance"], 4), fmt(r["std"]), fmt(r["min"]), fmt(r["max"])]
           for r in rows if dimension is None or r["dimension"] == dimension]
    ddof = rows[0]["ddof"] if rows else 1
    return {"title": "stability across judges / runs", "columns": cols, "rows": out, "keys": 3,
            "notes": [f"variance with ddof={ddof}"]}


def paired_table(results: list[dict[str, Any]]) -> Table:
    """Paired bootstrap tests between two methods run by the same judge."""
    cols = ["judge", "A vs B", "dimension", "A", "B", "A - B", "interval", "p"]
    rows = []
    for res in results:
        for dim, t in res["tests"].items():
            iv = t["interval"]
            rows.append([res["judge"], f"{res['method_a']} vs {res['method_b']}", dim, fmt(t["a"]), fmt(t["b"]),
                         fmt(t["delta"]), f"[{fmt(iv[0])}, {fmt(iv[1])}]" if iv else "-", fmt(t["p_value"], 4)])
    notes = [f"{SYMBOLS[r['measure']]}, {r['n_boot']} paired resamples of {r['unit']}s, seed {r['seed']}; "
             "A and B are computed on the items both methods scored, so they can differ from each run's table"
             for r in results[:1]]
    return {"title": "paired bootstrap", "columns": cols, "rows": rows, "notes": notes, "keys": 3}


def quality_table(rows: list[dict[str, Any]], measures: list[str]) -> Table:
    """Correlations on the items humans rated high and low (CheckEval section 6.2)."""
    cols = ["dimension", "threshold", *[f"high {SYMBOLS[m]}" for m in measures], "high n",
            *[f"low {SYMBOLS[m]}" for m in measures], "low n"]
    out = []
    for r in rows:
        out.append([r["dimension"], fmt(r["threshold"], 2), *[fmt(r["high"][m]) for m in measures],
                    str(r["high"]["items"]), *[fmt(r["low"][m]) for m in measures], str(r["low"]["items"])])
    notes = sorted({f"{r['dimension']}: {r['rule']}" for r in rows})
    return {"title": "quality split (high: human >= threshold)", "columns": cols, "rows": out, "notes": notes}


def _interval_text(value: Any, low: Any, high: Any) -> str:
    return fmt(value) if low is None else f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"


def pairwise_tables(report: dict[str, Any]) -> list[Table]:
    """One table per dimension of a pairwise report (:func:`assay.meta.pairwise.pairwise_report`): each system's
    win rate, Bradley-Terry strength (both with bootstrap intervals) and length-controlled win rate, strongest
    first; the order figures and the agreement with people below."""
    tables = []
    for dim, rep in report.items():
        rows = [[s, _interval_text(v["win_rate"], v["low"], v["high"]), _interval_text(v["bt"], v["bt_low"],
                                                                                     v["bt_high"]),
                 fmt(v["lc_win_rate"]), str(v["games"])]
                for s, v in sorted(rep["systems"].items(), key=lambda kv: -(kv[1]["bt"] or 0))]
        notes = [f"pairs read in both orders: {rep['n_pairs']} ({rep['n_unread']} with a verdict unread); "
                 f"consistency {fmt(rep['consistency'])}; tie rate {fmt(rep['tie_rate'])}; "
                 f"first-position win rate {fmt(rep['first_position_win_rate'])} (0.5: no lean)",
                 f"position bias: {fmt(rep['position_bias'])} of the {rep['n_inconsistent']} inconsistent pairs "
                 f"lean to the first position, {fmt(rep['second_position_bias'])} to the second; inconsistent "
                 f"pairs are counted as {'ties' if rep['inconsistent'] == 'tie' else 'dropped'}"]
        boot = rep.get("bootstrap") or {}
        if boot.get("n_boot"):
            notes.append(f"intervals: {boot['ci']:.0%} percentile bootstrap over inputs ({boot['n_boot']} "
                         f"resamples, seed {boot['seed']})")
        for key, who in (("human_agreement", "pairwise judge"), ("pointwise_agreement", "pointwise run")):
            agree = rep.get(key)
            if agree:
                notes.append(f"{who} vs people (mean ratings {fmt(agree['margin'])} apart or more): accuracy "
                             f"{fmt(agree['accuracy'])}, Cohen's kappa {fmt(agree['kappa'])}, {agree['n_pairs']} pairs")
        tables.append({"title": f"pairwise: {dim}", "columns": ["system", "win rate", "Bradley-Terry",
                                                                 "LC win rate", "games"],
                       "rows": rows, "notes": notes})
    return tables


def protocol_table(rows: list[dict[str, Any]]) -> Table:
    """Pairwise judge against a pointwise run's implied preferences, per dimension, on the same pairs: which
    protocol agrees with people more."""
    out = [[r["dimension"], fmt(r["pairwise"]["accuracy"]), fmt(r["pairwise"]["kappa"]),
            fmt(r["pointwise"]["accuracy"]), fmt(r["pointwise"]["kappa"]), str(r["n_pairs"]), r["closer"]]
           for r in rows]
    return {"title": "which protocol agrees with people more (same pairs)",
            "columns": ["dimension", "pairwise acc", "pairwise kappa", "pointwise acc", "pointwise kappa", "pairs",
                        "closer to people"],
            "rows": out,
            "notes": ["pointwise: the run's scores read as preferences (higher score preferred, equal scores a tie); "
                      "people: pairs whose mean ratings differ by the margin or more; closer: higher kappa "
                      "(accuracy where kappa is undefined)"]}
