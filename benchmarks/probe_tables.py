"""Markdown tables of ``assay probe --json`` results, for docs/benchmarks.md.

Usage: python benchmarks/probe_tables.py NAME=FILE.json [NAME=FILE.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from assay.probe.table import probe_rows


def _n(v: object) -> str:
    return "-" if v is None else f"{v:.3f}"


def _ci(ci: list | None) -> str:
    return "-" if not ci else f"[{_n(ci[0])}, {_n(ci[1])}]"


def tables(results: dict[str, dict]) -> str:
    """Length bias and scale use per run and dimension, then every other check's rows (or its reason)."""
    out = ["| run | dimension | n | rho(score, length) | rho(human, length) | partial rho given human [95% CI] "
           "| flag |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, res in results.items():
        for c in res["checks"]:
            if c["check"] == "length_bias" and c["computed"]:
                for r in c["rows"]:
                    flag = {True: "**flagged**", False: "ok", None: "-"}[r.get("flagged")]
                    out.append(f"| {name} | {r['dimension']} | {r['n']} | {_n(r.get('rho_length'))} | "
                               f"{_n(r.get('rho_human_length'))} | {_n(r.get('estimate'))} {_ci(r.get('ci'))} "
                               f"| {flag} |")
    out += ["", "| run | dimension | answered | parse failures | fractional | share of scale used | histogram |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, res in results.items():
        for c in res["checks"]:
            if c["check"] == "scale_use" and c["computed"]:
                for r in c["rows"]:
                    hist = " ".join(f"{k}:{v}" for k, v in r["histogram"].items())
                    out.append(f"| {name} | {r['dimension']} | {r['n']} | {_n(r.get('parse_failure_rate'))} | "
                               f"{_n(r.get('fractional'))} | {_n(r.get('estimate'))} | {hist} |")
    out += ["", "| run | check | dimension | n | statistic | value | 95% CI | flag | details |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, res in results.items():
        shown = {**res, "checks": [c for c in res["checks"]
                                   if c["check"] not in ("length_bias", "scale_use") or not c["computed"]]}
        for row in probe_rows(shown):
            out.append(f"| {name} | " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    pairs = [a.split("=", 1) for a in sys.argv[1:]]
    print(tables({name: json.loads(Path(path).read_text()) for name, path in pairs}))
