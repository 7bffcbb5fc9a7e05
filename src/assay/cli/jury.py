"""``assay jury``: several judges' runs combined per unit into one jury run, each member's figures beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.meta import DatasetOpt, DimOpt, HumanOpt, IdOpt, LabelsOpt, MatchOpt, print_table


def jury(
    runs: Annotated[list[Path], typer.Argument(help="Member run directories (same dataset)")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The jury's run directory (new)")],
    weights: Annotated[str, typer.Option(help="equal (mean on the human scale) or learned (fitted on labels, "
                                              "cross-fitted)")] = "equal",
    missing: Annotated[str, typer.Option(help="A unit some member did not score: none (no jury score, recorded) "
                                              "or mean (the others' mean, recorded in its trace)")] = "none",
    human: HumanOpt = None,
    labels: LabelsOpt = None,
    seed: Annotated[int, typer.Option(help="--labels draw and cross-fitting folds")] = 0,
    id_field: IdOpt = None,
    match: MatchOpt = None,
    dataset: DatasetOpt = None,
    dimension: DimOpt = None,
) -> None:
    """Combine judges' runs into a jury run that meta, compare, view and export read like any run."""
    from rich.markup import escape

    from assay.cli.main import console, out
    from assay.importer.jury import make_jury
    from assay.meta.evaluate import meta_evaluate
    from assay.report.tables import fmt

    res = make_jury(runs, output, weights=weights, missing=missing, human=human, labels=labels, seed=seed,
                    id_field=id_field, match=match, dataset=dataset, dimensions=dimension)
    for note in res.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    dims = list(res.dimensions)
    rows = []
    for entry, path in [*((m, Path(m["run"])) for m in res.members), ({"judge": "jury", "method": "jury"}, output)]:
        meta = meta_evaluate(path, dimensions=dims, measures=["spearman"])
        by_dim = {r["dimension"]: r for r in meta["rows"]}
        cost = entry.get("cost_usd") if entry["judge"] != "jury" else (
            sum(m["cost_usd"] for m in res.members) if all(m.get("cost_usd") is not None for m in res.members)
            else None)
        rows.append([entry["judge"], entry.get("method") or "-",
                     *[f"{fmt(by_dim[d]['spearman'])} ({by_dim[d]['coverage']:.0%})" for d in dims],
                     fmt(by_dim.get("average", by_dim[dims[0]])["spearman"]), fmt(cost, 4)])
    print_table({"title": f"jury ({weights} weights) and its members: Spearman with the human ratings "
                          f"({meta['level']} level), coverage in brackets",
                 "columns": ["judge", "method", *dims, "average", "cost (USD)"], "rows": rows,
                 "notes": [f"{d}: weights {', '.join(f'{k} {v:.3f}' for k, v in w['weights'].items())}"
                           for d, w in res.dimensions.items()]})
    out.print(f"wrote the jury run {escape(str(output))}: assay meta / compare / view / export read it")


def register(app: typer.Typer) -> None:
    """Add ``jury`` to the ``assay`` command."""
    app.command(name="jury")(jury)
