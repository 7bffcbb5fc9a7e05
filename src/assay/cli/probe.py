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
    save: Annotated[bool, typer.Option("--save/--no-save", help="Keep the result in the run (meta 'probe')")] = True,
) -> None:
    """Diagnose a run's judge: length bias, scale use, preference gap (from the run), and self-consistency,
    order and injection sensitivity (re-asking the judge on --budget units, through the run's cache)."""
    from assay.cli.main import judge_options, out
    from assay.probe.run import probe as run_probe

    res = run_probe(run_dir, checks=checks, budget=budget, judge=judge, judge_options=judge_options(judge_opt),
                    dataset=dataset, seed=seed, n_boot=bootstrap, save=save)
    out.print(probe_table(res))
    for note in res["notes"]:
        out.print(f"note: {escape(note)}")
    out.print(f"judge calls: {res['calls']['new']} new, {res['calls']['cached']} from the run's cache"
              + ("; result kept in the run (meta 'probe')" if save else ""))
    if json_file is not None:
        json_file.write_text(json.dumps(res, indent=1, ensure_ascii=False), encoding="utf-8")
        out.print(f"wrote {json_file}")


def probe_table(res: dict[str, Any]) -> Table:
    """The probe's rows (:func:`assay.probe.table.probe_rows`) as a rich table, flags in red."""
    from assay.probe.table import COLUMNS, probe_rows

    table = Table(title=f"probe: {res['method']} / {res['judge']} on {res['dataset']} ({res['units']} units)")
    for col in COLUMNS:
        table.add_column(col, overflow="fold")
    for row in probe_rows(res):
        table.add_row(*row[:6], "[red]FLAGGED[/]" if row[6] == "FLAGGED" else row[6], escape(row[7]))
    return table


def register(app: typer.Typer) -> None:
    """Add ``probe`` to the ``assay`` command."""
    app.command(name="probe")(probe)
