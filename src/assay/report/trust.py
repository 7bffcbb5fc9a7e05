"""Trust results (``assay meta --human/--labels``, ``assay labels plan``) as plain tables of strings.

Same shape as :mod:`assay.report.tables`: ``{"title", "columns", "rows", "notes"}``.
"""

from __future__ import annotations

from typing import Any

from assay.report.tables import fmt

Table = dict[str, Any]

__all__ = ["calibration_table", "plan_table", "systems_table", "trust_table"]


def _iv(cell: dict[str, Any] | None) -> str:
    if not cell:
        return "-"
    if cell.get("low") is None:
        return fmt(cell.get("estimate"))
    return f"{fmt(cell['estimate'])} [{fmt(cell['low'])}, {fmt(cell['high'])}]"


def _level(alpha: float) -> str:
    return f"{100 * (1 - alpha):g}%"


def trust_table(result: dict[str, Any]) -> Table:
    """Per dimension, the mean human rating three ways side by side."""
    trust, alpha = result["trust"], result["alpha"]
    simulated = result["labels"]["simulated"]
    cols = ["dimension", "labelled", f"human-only ({_level(alpha)})", f"PPI++ ({_level(alpha)})", "interval", "λ",
            "ρ", "judge-only (no interval)"]
    if simulated:
        cols.append("all labels (truth)")
    rows, notes = [], [f"labels: {result['labels']['source']}"]
    for dim, row in trust.items():
        if "error" in row:
            rows.append([dim, fmt(row.get("n_labelled")), row["error"], "-", "-", "-", "-", "-"]
                        + (["-"] if simulated else []))
            continue
        cells = [dim, f"{row['n_labelled']} / {row['n_units']}", _iv(row["human_only"]),
                 _iv(row["ppi"]), row.get("interval", "normal"), fmt(row["lambda"], 2), fmt(row["rho"], 2),
                 _iv(row["judge_only"])]
        if simulated:
            cells.append(fmt(row.get("all_labels")))
        rows.append(cells)
        notes += [f"{dim}: {n}" for n in row.get("notes") or [] if not n.startswith("simulated")]
        if row.get("warning"):
            notes.append(f"{dim}: {row['warning']}")
    notes.append("judge-only is the judge's mean on the human scale: its bias is unknown, so it has no valid "
                 "interval; PPI++ corrects it with the labels (λ = 0: the labels alone)")
    notes.append(f"--interval {result.get('interval', 'normal')}: normal is ppi_py's; t, bootstrap-t and hall are "
                 "small-sample intervals (bootstrap-t and hall asymmetric on skewed ratings); auto takes bootstrap-t "
                 "below 200 labels (docs/trust.md)")
    return {"title": "mean human rating: labels only, prediction-powered, judge only", "columns": cols,
            "rows": rows, "notes": list(dict.fromkeys(notes))}


def systems_table(result: dict[str, Any]) -> Table:
    """Per dimension and system, the three estimates; the count of system pairs whose intervals exclude 0."""
    alpha = result["alpha"]
    cols = ["dimension", "system", "labelled", f"human-only ({_level(alpha)})", f"PPI++ ({_level(alpha)})",
            "interval", "judge-only"]
    rows, notes = [], []
    for dim, row in result["trust"].items():
        for system, cell in (row.get("systems") or {}).items():
            if "error" in cell:
                rows.append([dim, system, "-", cell["error"], "-", "-", _iv(cell.get("judge_only"))])
            else:
                rows.append([dim, system, str(cell["n_labelled"]), _iv(cell["human_only"]), _iv(cell["ppi"]),
                             cell.get("interval", "normal"), _iv(cell["judge_only"])])
        warned = [c for c in (row.get("systems") or {}).values() if c.get("warning")]
        if warned:
            notes.append(f"{dim}: {len(warned)} system(s) with fewer than 30 labels: {warned[0]['warning']}")
        flat = sum(1 for c in (row.get("systems") or {}).values() if "human_only" in c and "low" not in c["human_only"])
        if flat:
            notes.append(f"{dim}: {flat} system(s) whose labels are all equal have no interval (a spread of zero says "
                         "nothing about the mean's uncertainty)")
        diffs = row.get("differences") or []
        if diffs:
            sep = {k: sum(1 for d in diffs if "low" in d[k] and (d[k]["low"] > 0 or d[k]["high"] < 0))
                   for k in ("human_only", "ppi")}
            notes.append(f"{dim}: of {len(diffs)} system pairs, {sep['human_only']} differ by human-only, "
                         f"{sep['ppi']} by PPI++ (interval of the difference excludes 0; all pairs in --json)")
    return {"title": "per system", "columns": cols, "rows": rows, "notes": notes}


def calibration_table(calibration: dict[str, Any]) -> Table:
    """Per dimension, held-out MAE, Spearman and kappa before and after calibration."""
    cols = ["dimension", "map", "labels", "MAE before", "MAE after", "Spearman before", "Spearman after",
            "QWK before", "QWK after", "held-out gain"]
    rows = []
    for dim, c in calibration.items():
        if "error" in c:
            rows.append([dim, "-", "-", c["error"], *["-"] * 6])
            continue
        b, a = c["before"], c["after"]
        rows.append([dim, c["kind"], str(c["n_labelled"]), fmt(b["mae"]), fmt(a["mae"]), fmt(b["spearman"]),
                     fmt(a["spearman"]), fmt(b.get("qwk")), fmt(a.get("qwk")),
                     "yes" if c["improved"] else "no (keep the judge's scores)"])
    return {"title": "calibration (held out: each sample mapped by a fit that never saw its label)",
            "columns": cols, "rows": rows, "notes": [f"{c.get('folds')}-fold cross-fitting; before = the judge's "
                                                     "score on the human scale" for c in list(calibration.values())[:1]
                                                     if "folds" in c]}


def _needed(plan: dict[str, Any], pool: int) -> str:
    return str(plan["labels"]) + ("" if plan["feasible"] else f" (more than the {pool} samples)")


def plan_table(plans: dict[str, Any]) -> Table:
    """Per dimension, labels (and cost) needed for the wanted half-width, human-only vs PPI."""
    cols = ["dimension", "pilot", "σ", "ρ", "half-width", "human-only labels", "PPI++ labels", "human-only cost",
            "PPI++ cost"]
    rows, extra = [], []
    for dim, p in plans.items():
        if "error" in p:
            rows.append([dim, "-", "-", "-", "-", p["error"], "-", "-", "-"])
            continue
        extra += [f"{dim}: planned with the {p.get('interval', 'normal')} quantile"] + [f"{dim}: {n}" for n in
                                                                                      p.get("notes") or []]
        rows.append([dim, str(p["pilot"]), fmt(p["sigma"]), fmt(p["rho"], 2), fmt(p["width"]),
                     _needed(p["human_only"], p["pool"]), _needed(p["ppi"], p["pool"]),
                     fmt(p["human_only"]["cost"], 2), fmt(p["ppi"]["cost"], 2)])
    return {"title": "labels needed", "columns": cols, "rows": rows,
            "notes": ["PPI++ needs n with n (n + N) / (n + (1 - ρ²) N) = the human-only count (PPI++; ppi_py's power "
                      "analysis), N the unlabelled rest of the run; σ and ρ come from the pilot labels",
                      *dict.fromkeys(extra)]}
