"""``assay labels plan`` and ``assay labels pick``: how many human labels a wanted interval needs, and which samples."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.meta import (
    AlphaOpt,
    DatasetOpt,
    DimOpt,
    HumanOpt,
    IdOpt,
    IntervalOpt,
    JsonOpt,
    LabelsOpt,
    MatchOpt,
    RatingOpt,
    print_table,
    write_json,
)

labels_app = typer.Typer(no_args_is_help=True, help="Plan and pick the human labels that make a judge's scores "
                                                    "trustworthy on your data (docs/trust.md).")

TEXT_FIELDS = ("source", "output", "reference", "context")


@labels_app.command("plan")
def plan_cmd(
    run: Annotated[Path, typer.Argument(help="The run directory (or scores file)")],
    width: Annotated[float, typer.Option("--width", help="Wanted half-width of the interval, on the human scale")],
    human: HumanOpt = None,
    labels: LabelsOpt = None,
    seed: Annotated[int, typer.Option(help="--labels: the simulated draw")] = 0,
    price: Annotated[float | None, typer.Option(help="Cost of one label, to price each plan")] = None,
    alpha: AlphaOpt = 0.05,
    interval: IntervalOpt = "auto",
    dimension: DimOpt = None,
    id_field: IdOpt = None,
    match: MatchOpt = None,
    rating: RatingOpt = None,
    dataset: DatasetOpt = None,
    json_path: JsonOpt = None,
) -> None:
    """How many labels a 95% interval of half-width W needs, human-only vs PPI, from pilot labels."""
    from assay.errors import ConfigError
    from assay.meta.trust.session import plan
    from assay.report.trust import plan_table

    if rating and len(dimension or []) != 1:
        raise ConfigError("--rating names the field of one dimension: give exactly one --dimension")
    res = plan(run, width=width, price=price, alpha=alpha, interval=interval, human=human, labels=labels, seed=seed,
               dimensions=None if rating else dimension, id_field=id_field, match=match,
               dimension=dimension[0] if rating and dimension else None, rating=rating, dataset=dataset)
    table = plan_table(res["plans"])
    table["notes"].insert(0, f"pilot labels: {res['labels']}")
    print_table(table)
    if json_path:
        write_json(json_path, res)


@labels_app.command("pick")
def pick_cmd(
    run: Annotated[Path, typer.Argument(help="The run directory")],
    n: Annotated[int, typer.Option("-n", help="How many samples to label")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The labelling sheet (.csv or .jsonl)")],
    strategy: Annotated[str, typer.Option(help="random, or stratified by judge score and system")] = "random",
    seed: Annotated[int, typer.Option(help="The draw's seed")] = 0,
    dataset: DatasetOpt = None,
) -> None:
    """Which samples to send to people: a sheet with the texts and an empty rating column per dimension."""
    import pandas as pd
    from rich.markup import escape

    from assay.cli.main import console, out
    from assay.errors import ConfigError
    from assay.meta.inputs import load_scores
    from assay.meta.trust.human import PROBABILITY
    from assay.meta.trust.plan import pick
    from assay.meta.trust.session import judge_scales, run_samples, units

    suffix = output.name.lower()
    if not suffix.endswith((".csv", ".jsonl")):
        raise ConfigError(f"-o {output}: the sheet is .csv or .jsonl")
    table = load_scores(run, dataset=dataset)
    try:
        picked, notes = pick(units(table, judge_scales(run)), n, strategy=strategy, seed=seed)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    samples = {s.id: s for s in run_samples(table, dataset, texts=True)}
    rows = []
    for rec in picked.itertuples():
        s = samples[rec.sample_id]
        row = {"sample_id": s.id, "doc_id": s.doc_id, "system_id": s.system_id, PROBABILITY: rec.inclusion_probability}
        row |= {f: getattr(s, f) for f in TEXT_FIELDS if getattr(s, f) is not None}
        row |= dict.fromkeys(table.dimensions(), "")
        rows.append(row)
    sheet = pd.DataFrame(rows)
    if suffix.endswith(".csv"):
        sheet.to_csv(output, index=False)
    else:
        sheet.to_json(output, orient="records", lines=True, force_ascii=False)
    for note in notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    out.print(f"wrote {escape(str(output))}: {len(rows)} samples ({strategy}, seed {seed}) with empty columns "
              f"{', '.join(table.dimensions())}; fill them in (an empty cell is 'not rated'), then: "
              f"assay meta {escape(str(run))} --human {escape(str(output))}")


def register(app: typer.Typer) -> None:
    """Add ``labels`` to the ``assay`` command."""
    app.add_typer(labels_app, name="labels")
