"""A probe result as rows of text (check, dimension, n, statistic, value, interval, flag, details) for any renderer."""

from __future__ import annotations

from typing import Any

COLUMNS = ("check", "dimension", "n", "statistic", "value", "95% CI", "flag", "details")


def probe_rows(res: dict[str, Any]) -> list[tuple[str, ...]]:
    """One row per check and dimension; a check that was not computed is one row with its reason."""
    rows: list[tuple[str, ...]] = []
    for check in res["checks"]:
        if not check["computed"]:
            rows.append((check["check"], "-", "-", "-", "-", "-", "-", f"not computed: {check['reason']}"))
            continue
        for row in check["rows"]:
            ci = row.get("ci")
            flag = {None: "-", True: "FLAGGED", False: "ok"}[row.get("flagged")]
            rows.append((check["check"], row["dimension"], str(row["n"]), row["label"], num(row.get("estimate")),
                         f"[{num(ci[0])}, {num(ci[1])}]" if ci and any(v is not None for v in ci) else "-", flag,
                         details(check["check"], row)))
    return rows


def probe_table(res: dict[str, Any]) -> dict[str, Any]:
    """The rows as a table of :mod:`assay.report.tables`' shape (title, columns, rows, notes)."""
    notes = [f"{c['check']}: {c['method']}" + (f"; {c['rule']}" if c.get("rule") else "")
             for c in res["checks"] if c["computed"]]
    notes.append(f"judge calls: {res['calls']['new']} new, {res['calls']['cached']} from the run's cache; "
                 f"budget {res['budget']}, seed {res['seed']}")
    return {"title": f"probe: {res['method']} / {res['judge']} on {res['dataset']} ({res['units']} units)",
            "columns": list(COLUMNS), "rows": probe_rows(res), "notes": notes}


def details(check: str, row: dict[str, Any]) -> str:
    """The row's secondary figures in a few words."""
    if row.get("note") and row.get("estimate") is None:
        return str(row["note"])
    text = _figures(check, row)
    return f"{text}; {row['note']}" if row.get("note") else text


def _figures(check: str, row: dict[str, Any]) -> str:
    if check == "length_bias":
        ci = row.get("rho_length_ci") or [None, None]
        return (f"rho(score, length) {num(row.get('rho_length'))} [{num(ci[0])}, {num(ci[1])}]; "
                f"rho(human, length) {num(row.get('rho_human_length'))}")
    if check == "scale_use":
        hist = " ".join(f"{k}:{v}" for k, v in row["histogram"].items())
        frac = "" if row.get("fractional") is None else f"; fractional {num(row['fractional'])}"
        return f"parse failures {num(row.get('parse_failure_rate'))}{frac}; failed calls {row['failed_calls']}; {hist}"
    if check == "preference_gap" and "n_human_written" not in row:  # the judge's side alone (unrated references)
        return (f"mean |change| {num(row.get('mean_abs_change'))}; of range {num(row.get('shift_of_range'))}; "
                "human side not computed (references unrated)")
    if check == "preference_gap":
        return (f"judge gap {num(row.get('judge_gap'))}, human gap {num(row.get('human_gap'))} "
                f"({row['n_human_written']} human-written)")
    if check == "order_sensitivity" and "consistency" in row:  # a pairwise run: both orders are in the run
        return (f"consistency {num(row.get('consistency'))}; {row['n_inconsistent']} inconsistent pairs, "
                f"{num(row.get('position_bias'))} of them leaning to the first position")
    if check == "self_consistency":
        return (f"{row['runs']} runs; exact agreement {num(row.get('exact_agreement'))}; "
                f"mean std {num(row.get('mean_std'))}")
    extra = (f"; parse failures when injected {row['injected_parse_failures']}"
             if "injected_parse_failures" in row else "")
    return (f"mean |change| {num(row.get('mean_abs_change'))}; changed {num(row.get('share_changed'))}; "
            f"of range {num(row.get('shift_of_range'))}{extra}")


def num(v: Any) -> str:
    """A figure with 3 decimals, or '-' when missing."""
    return "-" if v is None else f"{v:.3f}"
