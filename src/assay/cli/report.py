"""``assay report``: an HTML report of one or more runs, with tables and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories or scores files")],
    output: Annotated[Path, typer.Option("--output", "-o", help="HTML file to write")] = Path("report.html"),
    groups: Annotated[Path | None, typer.Option(help="JSON/YAML {group: [judge or run name, ...]}")] = None,
    level: Annotated[str | None, typer.Option("--level", "-l", help="sample, system or dataset")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", "-b", help="Bootstrap resamples (0: none)")] = 0,
    seed: Annotated[int, typer.Option(help="Bootstrap seed")] = 0,
) -> None:
    """Write a self-contained HTML report: correlation tables, agreement, scatter and stability plots."""
    from assay.cli.main import out
    from assay.meta.compare import load_groups
    from assay.report.html import build_report

    path = build_report(runs, output, level=level, groups=load_groups(groups) if groups else None,
                        bootstrap=bootstrap, seed=seed)
    out.print(f"wrote {path}")


def register(app: typer.Typer) -> None:
    """Add ``report`` to the ``assay`` command."""
    app.command(name="report")(report)
