"""``assay meta`` and ``assay compare``: the meta-evaluation tables in the terminal, and JSON for reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from assay.cli.options import CoverageOpt, gate_coverage

LevelOpt = Annotated[str | None, typer.Option(
    "--level", "-l", help="sample (summary), system or dataset (turn); default: the dataset's convention")]
DimOpt = Annotated[list[str] | None, typer.Option("--dimension", help="Repeatable; default: every scored one")]
MeasureOpt = Annotated[list[str] | None, typer.Option("--measure", help="pearson, spearman, kendall (repeatable)")]
VariantOpt = Annotated[str, typer.Option("--kendall", help="Kendall variant: a, b or c")]
BootOpt = Annotated[int, typer.Option("--bootstrap", "-b", help="Bootstrap resamples (0: no intervals)")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Bootstrap seed")]
JsonOpt = Annotated[Path | None, typer.Option("--json", help="Write the full result as JSON to this file")]
MapOpt = Annotated[list[str] | None, typer.Option("--map", help=(
    "Scores-file field KEY=FIELD: id, doc_id, system_id, score, human, dimension, error, method, judge, score.DIM, "
    "human.DIM"))]
DatasetOpt = Annotated[str | None, typer.Option(help="Benchmark a scores file belongs to (level, scales)")]


def print_table(table: dict[str, Any]) -> None:
    """Print one of :mod:`assay.report.tables`' tables with rich, its notes below it."""
    from rich.table import Table

    from assay.cli.main import out

    t = Table(title=table["title"])
    for i, col in enumerate(table["columns"]):
        t.add_column(col, justify="left" if i == 0 else "right")
    for row in table["rows"]:
        t.add_row(*row)
    out.print(t)
    for note in table.get("notes") or []:
        out.print(f"[dim]{note}[/]", highlight=False)


def _measures(measure: list[str] | None) -> list[str]:
    from assay.errors import ConfigError
    from assay.meta.correlation import MEASURES

    chosen = measure or list(MEASURES)
    bad = [m for m in chosen if m not in MEASURES]
    if bad:
        raise ConfigError(f"unknown measure(s) {bad}; choose from {list(MEASURES)}")
    return chosen


def _check(level: str | None, kendall: str) -> None:
    """Reject a bad level or Kendall variant before any file is read."""
    from assay.errors import ConfigError
    from assay.meta.table import normalise_level

    if kendall not in ("a", "b", "c"):
        raise ConfigError(f"--kendall {kendall!r}: choose a, b or c")
    if level:
        try:
            normalise_level(level)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def _thresholds(pairs: list[str] | None) -> dict[str, float]:
    from assay.errors import ConfigError

    out = {}
    for pair in pairs or []:
        dim, eq, value = pair.partition("=")
        try:
            out[dim] = float(value)
        except ValueError:
            raise ConfigError(f"--threshold {pair!r} must be DIMENSION=NUMBER") from None
        if not eq:
            raise ConfigError(f"--threshold {pair!r} must be DIMENSION=NUMBER")
    return out


def _write_json(path: Path, data: Any) -> None:
    from assay.cli.main import out
    from assay.meta.table import jsonable

    path.write_text(json.dumps(jsonable(data), indent=1, ensure_ascii=False), encoding="utf-8")
    out.print(f"wrote {path}")


def meta(
    sources: Annotated[list[Path], typer.Argument(help="Run directories or scores files (JSON, JSONL, CSV, Parquet)")],
    level: LevelOpt = None,
    dimension: DimOpt = None,
    measure: MeasureOpt = None,
    kendall: VariantOpt = "b",
    bootstrap: BootOpt = 0,
    seed: SeedOpt = 0,
    ci: Annotated[float, typer.Option(help="Interval coverage")] = 0.95,
    split: Annotated[bool, typer.Option("--split", help="Add the high/low quality split (CheckEval 6.2)")] = False,
    threshold: Annotated[list[str] | None, typer.Option(help="Quality split DIMENSION=VALUE (repeatable)")] = None,
    mapping: MapOpt = None,
    dataset: DatasetOpt = None,
    json_path: JsonOpt = None,
    fail_under_coverage: CoverageOpt = None,
) -> None:
    """Correlation with human ratings as the papers print it: per dimension and average, with coverage."""
    from assay.meta.evaluate import meta_evaluate
    from assay.meta.inputs import parse_mapping
    from assay.report.tables import agreement_table, correlation_table, quality_table

    _check(level, kendall)
    fmap = parse_mapping(mapping) if mapping else None
    results = []
    for src in sources:
        res = meta_evaluate(src, level=level, dimensions=dimension, measures=_measures(measure),  # type: ignore[arg-type]
                            variant=kendall, bootstrap=bootstrap, seed=seed, ci=ci, split=split,  # type: ignore[arg-type]
                            thresholds=_thresholds(threshold), mapping=fmap, dataset=dataset)
        results.append(res)
        print_table(correlation_table(res))
        if res["human_agreement"]:
            print_table(agreement_table(res["human_agreement"], "human annotators' agreement (the ceiling)"))
        if res["quality_split"]:
            print_table(quality_table(res["quality_split"], res["measures"]))
    if json_path:
        _write_json(json_path, results[0] if len(results) == 1 else results)
    for src, res in zip(sources, results, strict=True):  # after every table and the JSON: the gate only decides
        gate_coverage(res["rows"], fail_under_coverage, str(src))


def compare(
    runs: Annotated[list[Path], typer.Argument(help="Run directories or scores files, one per (method, judge)")],
    groups: Annotated[Path | None, typer.Option(help="JSON/YAML {group: [judge or run name, ...]}")] = None,
    level: LevelOpt = None,
    dimension: DimOpt = None,
    measure: MeasureOpt = None,
    kendall: VariantOpt = "b",
    bootstrap: BootOpt = 0,
    seed: SeedOpt = 0,
    alpha: Annotated[float, typer.Option(help="False discovery rate for Benjamini-Hochberg")] = 0.05,
    bins: Annotated[str | None, typer.Option(help="Fleiss bin edges for continuous scores, e.g. 0,0.25,0.5,0.75,1")]
    = None,
    mapping: MapOpt = None,
    dataset: DatasetOpt = None,
    json_path: JsonOpt = None,
) -> None:
    """Runs side by side: correlations, agreement per judge group, significance tests and stability."""
    from assay.cli.main import out
    from assay.errors import ConfigError
    from assay.meta.compare import compare as run_compare
    from assay.meta.compare import load_groups
    from assay.meta.inputs import load_scores, parse_mapping
    from assay.report.tables import (
        agreement_table,
        paired_table,
        runs_table,
        significance_table,
        stability_table,
    )

    _check(level, kendall)
    try:
        edges = [float(x) for x in bins.split(",")] if bins else None
    except ValueError:
        raise ConfigError(f"--bins {bins!r} must be comma-separated numbers") from None
    fmap = parse_mapping(mapping) if mapping else None
    tables = [load_scores(r, fmap, dataset=dataset) for r in runs]
    res = run_compare(tables, groups=load_groups(groups) if groups else None, level=level, dimensions=dimension,
                      measures=_measures(measure), variant=kendall, bootstrap=bootstrap,  # type: ignore[arg-type]
                      seed=seed, alpha=alpha, fleiss_bins=edges)
    print_table(runs_table(res))
    if res["agreement"]:
        print_table(agreement_table(res["agreement"], "agreement among judges"))
    for note in res["notes"]:
        out.print(f"[yellow]note:[/] {note}")
    if res["human_agreement"]:
        print_table(agreement_table(res["human_agreement"], "human annotators' agreement (the ceiling)"))
    if res["significance"]:
        print_table(significance_table(res["significance"]))
    print_table(stability_table(res["stability"]))
    if res["paired_bootstrap"]:
        print_table(paired_table(res["paired_bootstrap"]))
    if json_path:
        _write_json(json_path, res)


def register(app: typer.Typer) -> None:
    """Add ``meta`` and ``compare`` to the ``assay`` command."""
    app.command(name="meta")(meta)
    app.command(name="compare")(compare)
