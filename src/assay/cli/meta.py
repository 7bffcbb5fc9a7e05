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
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap, --labels' draw, --calibrate's folds")]
JsonOpt = Annotated[Path | None, typer.Option("--json", help="Write the full result as JSON to this file")]
MapOpt = Annotated[list[str] | None, typer.Option("--map", help=(
    "Scores-file field KEY=FIELD: id, doc_id, system_id, score, human, dimension, error, method, judge, score.DIM, "
    "human.DIM"))]
HumanMarginOpt = Annotated[float | None, typer.Option(help=(
    "Pairwise runs: the least difference of human mean ratings read as a preference (default: a third of the "
    "scale's step)"))]
DatasetOpt = Annotated[str | None, typer.Option(help="Benchmark a scores file belongs to (level, scales)")]


HumanOpt = Annotated[Path | None, typer.Option("--human", help=(
    "Human labels for some of the run's samples (JSON, JSONL, CSV, Parquet; a filled `assay labels pick` sheet): "
    "intervals for the mean human rating, human-only vs prediction-powered vs judge-only"))]
LabelsOpt = Annotated[int | None, typer.Option("--labels", help=(
    "Simulate K labels on a benchmark: K samples drawn at random (--seed) keep their human ratings, the rest "
    "are treated as unlabelled"))]
AlphaOpt = Annotated[float, typer.Option("--alpha", help="Error level of the trust intervals (0.05: 95%)")]
IntervalOpt = Annotated[str, typer.Option("--interval", help=(
    "--human/--labels: auto (bootstrap-t below 200 labels, normal from 200), normal (ppi_py's), t (Student, "
    "n-1 df) or bootstrap-t (studentized bootstrap, seeded by --seed); the JSON names the one used"))]
IdOpt = Annotated[str | None, typer.Option("--id", help="--human: the field holding assay's sample ids")]
MatchOpt = Annotated[str | None, typer.Option("--match", help=(
    "--human: fields naming the sample, FIELD or FILE_FIELD=SAMPLE_FIELD, comma-separated (as assay import)"))]
RatingOpt = Annotated[str | None, typer.Option("--rating", help=(
    "--human: the field holding one dimension's ratings (with one --dimension); default one column per "
    "dimension"))]
JudgeScaleOpt = Annotated[list[str] | None, typer.Option("--judge-scale", help=(
    "--human/--labels: the judge's scale DIMENSION=LOW,HIGH (repeatable) where a scores file does not say it; "
    "judge scores are moved linearly onto the human scale"))]
CalibrateOpt = Annotated[str | None, typer.Option("--calibrate", help=(
    "--human/--labels: isotonic or linear, cross-fitted on the labels; held-out figures before and after, "
    "calibrated scores kept for `assay export` (score_calibrated)"))]


def print_table(table: dict[str, Any]) -> None:
    """Print one of :mod:`assay.report.tables`' tables with rich, fitted to the terminal, its notes below it."""
    from rich.markup import escape

    from assay.cli.fit import fit, render
    from assay.cli.main import out

    for part in fit(table, out.width):
        out.print(render(part))
        for line in part.get("legend") or []:
            out.print(escape(line), soft_wrap=True, highlight=False)  # names whole, whatever the width
        for note in part.get("notes") or []:
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


def write_json(path: Path, data: Any) -> None:
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
    human_margin: HumanMarginOpt = None,
    pair_bootstrap: Annotated[int, typer.Option(help="Pairwise runs: bootstrap resamples of the win-rate and "
                                                     "Bradley-Terry intervals (0: none)")] = 1000,
    json_path: JsonOpt = None,
    human: HumanOpt = None,
    labels: LabelsOpt = None,
    alpha: AlphaOpt = 0.05,
    interval: IntervalOpt = "auto",
    id_field: IdOpt = None,
    match: MatchOpt = None,
    rating: RatingOpt = None,
    calibrate: CalibrateOpt = None,
    judge_scale: JudgeScaleOpt = None,
    systems: Annotated[bool, typer.Option(help="With --human/--labels: per-system estimates and differences")]
    = True,
    fail_under_coverage: CoverageOpt = None,
) -> None:
    """Correlation with human ratings as the papers print it: per dimension and average, with coverage; with
    --human or --labels, what humans would say (prediction-powered intervals from a few labels).

    A pairwise run also gets its pairwise figures (``pairwise.<dimension>`` in the JSON): consistency, position
    bias, tie rate, each system's win rate, Bradley-Terry strength and length-controlled win rate, and the
    agreement with people's preferences."""
    from assay.meta.evaluate import meta_evaluate
    from assay.meta.inputs import parse_mapping
    from assay.meta.pairwise_run import is_pairwise, run_report
    from assay.report.tables import agreement_table, correlation_table, pairwise_tables, quality_table

    _check(level, kendall)
    fmap = parse_mapping(mapping) if mapping else None
    trusting = human is not None or labels is not None
    if trusting:
        _check_trust(sources, human, labels, rating, dimension, calibrate, interval)
    results = []
    for src in sources:
        if trusting:
            res = _trust(src, human, labels, seed, alpha, dimension, id_field, match, rating, calibrate, dataset,
                         systems, parse_scales(judge_scale), interval)
            results.append(res)
            continue
        res = meta_evaluate(src, level=level, dimensions=dimension, measures=_measures(measure),  # type: ignore[arg-type]
                            variant=kendall, bootstrap=bootstrap, seed=seed, ci=ci, split=split,  # type: ignore[arg-type]
                            thresholds=_thresholds(threshold), mapping=fmap, dataset=dataset)
        if is_pairwise(src):
            res["pairwise"] = run_report(src, n_boot=pair_bootstrap, seed=seed, ci=ci, human_margin=human_margin,
                                         dimensions=dimension)
        results.append(res)
        print_table(correlation_table(res))
        for table in pairwise_tables(res.get("pairwise") or {}):
            print_table(table)
        if res["human_agreement"]:
            print_table(agreement_table(res["human_agreement"], "human annotators' agreement (the ceiling)"))
        if res["quality_split"]:
            print_table(quality_table(res["quality_split"], res["measures"]))
    if json_path:
        write_json(json_path, results[0] if len(results) == 1 else results)
    for src, res in zip(sources, results, strict=True):  # after every table and the JSON: the gate only decides
        if "rows" in res:  # a correlation report (the trust report of --human/--labels has no coverage rows)
            gate_coverage(res["rows"], fail_under_coverage, str(src))


def parse_scales(pairs: list[str] | None) -> dict[str, tuple[float, float]]:
    """``DIMENSION=LOW,HIGH`` pairs as ``{dimension: (low, high)}``."""
    from assay.errors import ConfigError

    out = {}
    for pair in pairs or []:
        dim, eq, rest = pair.partition("=")
        try:
            low, high = (float(x) for x in rest.split(","))
        except ValueError:
            raise ConfigError(f"--judge-scale {pair!r} must be DIMENSION=LOW,HIGH") from None
        if not eq or not dim or high <= low:
            raise ConfigError(f"--judge-scale {pair!r} must be DIMENSION=LOW,HIGH with LOW < HIGH")
        out[dim] = (low, high)
    return out


def _check_trust(sources: list[Path], human: Path | None, labels: int | None, rating: str | None,
                 dimension: list[str] | None, calibrate: str | None, interval: str = "auto") -> None:
    """Refuse contradictory trust options before anything is read."""
    from assay.errors import ConfigError
    from assay.meta.trust.ppi import CHOICES

    if interval not in CHOICES:
        raise ConfigError(f"--interval {interval!r}: choose one of {', '.join(CHOICES)}")
    if human is not None and labels is not None:
        raise ConfigError("--human reads real labels, --labels K simulates them: give one")
    if len(sources) != 1:
        raise ConfigError("--human/--labels take one run (or scores file)")
    if rating and len(dimension or []) != 1:
        raise ConfigError("--rating names the field of one dimension: give exactly one --dimension")
    if calibrate and calibrate not in ("isotonic", "linear"):
        raise ConfigError(f"--calibrate {calibrate!r}: choose isotonic or linear")


def _trust(src: Path, human: Path | None, labels: int | None, seed: int, alpha: float, dimension: list[str] | None,
           id_field: str | None, match: str | None, rating: str | None, calibrate: str | None,
           dataset: str | None, systems: bool, scales: dict[str, tuple[float, float]],
           interval: str = "auto") -> dict[str, Any]:
    """Trust on one run: estimate, print the tables, keep calibrated scores beside a run directory."""
    from rich.markup import escape

    from assay.cli.main import out
    from assay.meta.trust.session import assess, write_calibration
    from assay.report.trust import calibration_table, systems_table, trust_table

    res = assess(src, human=human, labels=labels, seed=seed, alpha=alpha,
                 dimensions=None if rating else dimension, id_field=id_field, match=match,
                 dimension=dimension[0] if rating and dimension else None, rating=rating,
                 calibrate_kind=calibrate, dataset=dataset, systems=systems, scales=scales, interval=interval)
    print_table(trust_table(res))
    if systems:
        print_table(systems_table(res))
    if res["calibration"]:
        print_table(calibration_table(res["calibration"]))
        if src.is_dir():
            path = write_calibration(src, res["calibration"], res["labels"]["source"])
            out.print(f"calibrated scores kept in {escape(str(path))}: `assay export` adds them as score_calibrated")
    return res


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
    human_margin: HumanMarginOpt = None,
    json_path: JsonOpt = None,
) -> None:
    """Runs side by side: correlations, agreement per judge group, significance tests and stability.

    A pointwise run beside a pairwise run on the same outputs (``assay compare POINTWISE_RUN PAIRWISE_RUN``)
    gets the protocol comparison instead: which of the two agrees with people's preferences more, per dimension."""
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
    if _protocols(runs, mapping, dataset, human_margin, json_path):
        return
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
        write_json(json_path, res)


def _protocols(runs: list[Path], mapping: list[str] | None, dataset: str | None, human_margin: float | None,
               json_path: Path | None) -> bool:
    """The protocol comparison when ``runs`` are one pointwise and one pairwise run; False for other runs."""
    from assay.errors import ConfigError
    from assay.meta.inputs import load_scores, parse_mapping
    from assay.meta.pairwise_run import compare_protocols, is_pairwise
    from assay.report.tables import protocol_table

    pairwise = [r for r in runs if is_pairwise(r)]
    if not pairwise:
        return False
    if len(runs) != 2 or len(pairwise) != 1:
        raise ConfigError("a pairwise run is compared with one pointwise run on the same outputs: "
                          "assay compare POINTWISE_RUN PAIRWISE_RUN")
    pointwise = next(r for r in runs if r not in pairwise)
    table = load_scores(pointwise, parse_mapping(mapping) if mapping else None, dataset=dataset)
    scores: dict[str, dict[str, float | None]] = {}
    for sid, dim, score in zip(table.frame["sample_id"], table.frame["dimension"], table.frame["score"], strict=True):
        scores.setdefault(str(dim), {})[str(sid)] = None if score != score else float(score)
    rows = compare_protocols(pairwise[0], scores, human_margin=human_margin)
    if not rows:
        raise ConfigError(f"{pointwise} and {pairwise[0]} share no pair of outputs that people rated apart: "
                          "run both on the same outputs of a dataset with human ratings")
    print_table(protocol_table(rows))
    if json_path:
        write_json(json_path, {"protocols": rows, "pointwise": str(pointwise), "pairwise": str(pairwise[0])})
    return True


def register(app: typer.Typer) -> None:
    """Add ``meta`` and ``compare`` to the ``assay`` command."""
    app.command(name="meta")(meta)
    app.command(name="compare")(compare)
