"""``assay probe``: how far a run's judge can be trusted, as a table and a JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table


def probe(
    run_dir: Annotated[Path, typer.Argument(help="Run directory (judged or imported)")],
    checks: Annotated[list[str] | None, typer.Option(
        "--checks", "-c", help="Repeatable or comma-separated: length_bias, scale_use, preference_gap, "
                               "self_consistency, order_sensitivity, injection (default: all)")] = None,
    budget: Annotated[int, typer.Option(help="Units re-judged by each re-asking check (0: no judge calls)")] = 8,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON")] = None,
    judge: Annotated[str | None, typer.Option("--judge", "-j", help="The run's judge, if its spec cannot be "
                                                                    "rebuilt from the manifest (a GGUF path)")] = None,
    judge_opt: Annotated[list[str] | None, typer.Option("--judge-opt", help="Backend option KEY=VALUE")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="The run's dataset, if not the bundled "
                                                                         "one of its recorded name")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the unit sample and the bootstrap")] = 0,
    bootstrap: Annotated[int, typer.Option("--bootstrap", "-b", help="Bootstrap resamples")] = 1000,
) -> None:
    """Diagnose a run's judge: length bias, scale use, preference gap (from the run), and self-consistency,
    order and injection sensitivity (re-asking the judge on --budget units, through the run's cache)."""
    from assay.cli.main import judge_options, out
    from assay.probe.run import probe as run_probe

    res = run_probe(run_dir, checks=checks, budget=budget, judge=judge, judge_options=judge_options(judge_opt),
                    dataset=dataset, seed=seed, n_boot=bootstrap)
    out.print(probe_table(res))
    out.print(f"judge calls: {res['calls']['new']} new, {res['calls']['cached']} from the run's cache; "
              f"result kept in the run (meta 'probe')")
    if json_file is not None:
        json_file.write_text(json.dumps(res, indent=1, ensure_ascii=False), encoding="utf-8")
        out.print(f"wrote {json_file}")


def probe_table(res: dict[str, Any]) -> Table:
    """One row per check and dimension: the statistic, n, its interval, the flag and the details."""
    table = Table(title=f"probe: {res['method']} / {res['judge']} on {res['dataset']} ({res['units']} units)")
    for col in ("check", "dimension", "n", "statistic", "value", "95% CI", "flag", "details"):
        table.add_column(col, overflow="fold")
    for check in res["checks"]:
        if not check["computed"]:
            table.add_row(check["check"], "-", "-", "-", "-", "-", "-", escape(f"not computed: {check['reason']}"))
            continue
        for row in check["rows"]:
            ci = row.get("ci")
            table.add_row(check["check"], row["dimension"], str(row["n"]), row["label"], _num(row.get("estimate")),
                          f"[{_num(ci[0])}, {_num(ci[1])}]" if ci else "-", _flag(row.get("flagged")),
                          escape(details(check["check"], row)))
    return table


def details(check: str, row: dict[str, Any]) -> str:
    """The row's secondary figures in a few words."""
    if row.get("note"):
        return row["note"]
    if check == "length_bias":
        ci = row.get("rho_length_ci") or [None, None]
        return (f"rho(score, length) {_num(row.get('rho_length'))} [{_num(ci[0])}, {_num(ci[1])}]; "
                f"rho(human, length) {_num(row.get('rho_human_length'))}")
    if check == "scale_use":
        hist = " ".join(f"{k}:{v}" for k, v in row["histogram"].items())
        frac = "" if row.get("fractional") is None else f"; fractional {_num(row['fractional'])}"
        return f"parse failures {_num(row.get('parse_failure_rate'))}{frac}; failed calls {row['failed_calls']}; {hist}"
    if check == "preference_gap":
        return (f"judge gap {_num(row.get('judge_gap'))}, human gap {_num(row.get('human_gap'))} "
                f"({row['n_human_written']} human-written)")
    if check == "self_consistency":
        return (f"{row['runs']} runs; exact agreement {_num(row.get('exact_agreement'))}; "
                f"mean std {_num(row.get('mean_std'))}")
    extra = (f"; parse failures when injected {row['injected_parse_failures']}"
             if "injected_parse_failures" in row else "")
    return (f"mean |change| {_num(row.get('mean_abs_change'))}; changed {_num(row.get('share_changed'))}; "
            f"of range {_num(row.get('shift_of_range'))}{extra}")


def _num(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}"


def _flag(v: bool | None) -> str:
    return "-" if v is None else ("[red]FLAGGED[/]" if v else "ok")


def register(app: typer.Typer) -> None:
    """Add ``probe`` to the ``assay`` command."""
    app.command(name="probe")(probe)
