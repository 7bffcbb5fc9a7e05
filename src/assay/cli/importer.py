"""``assay import``: a file of answers a judge already wrote becomes one dimension of a run, read as live."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.methods import DEFAULT_METHOD


def import_cmd(
    answers_file: Annotated[Path, typer.Argument(help="Answers: JSON (list), JSONL, CSV or Parquet")],
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="The dataset the answers judge")],
    dimension: Annotated[str, typer.Option(help="The dimension the answers rate (gereval: the rubric criterion)")],
    answers: Annotated[str, typer.Option(help="Field with the judge's raw answer text (or a list of texts)")],
    method: Annotated[str, typer.Option("--method", "-m", help="The method whose answers these are (one with an "
                                                               "import reader)")] = DEFAULT_METHOD,
    match: Annotated[str | None, typer.Option(help="Fields naming the sample: FIELD or FILE_FIELD=SAMPLE_FIELD, "
                                                   "comma-separated (id, doc_id, system_id, source, output, "
                                                   "reference, context)")] = None,
    id_field: Annotated[str | None, typer.Option("--id", help="Field holding assay's sample ids")] = None,
    mode: Annotated[str | None, typer.Option(help="geval: sampling (default) or greedy")] = None,
    logprobs: Annotated[str | None, typer.Option(help="geval: field with OpenAI top-token log-probabilities "
                                                      "(logprobs.content); gives the logprobs mode")] = None,
    checklist: Annotated[str | None, typer.Option(help="checkeval: checklist name or file")] = None,
    rubric: Annotated[str | None, typer.Option(help="gereval: rubric file, human:<dataset> or human")] = None,
    judge_name: Annotated[str | None, typer.Option(help="The judge's label (default imported:<file stem>)")] = None,
    duplicates: Annotated[str, typer.Option(help="Several records for one sample: refuse, first or skip")]
    = "refuse",
    ambiguous: Annotated[str, typer.Option(help="A record matching several samples: refuse or skip")] = "refuse",
    strict_ratings: Annotated[bool, typer.Option(help="A fractional rating on an integer scale is unreadable")]
    = False,
    run_dir: Annotated[Path | None, typer.Option("--run-dir", "-o", help="Run directory (imports add dimensions)")]
    = None,
) -> None:
    """Import a judge's answers as a run: the method's own reader and aggregation, no judge called."""
    from rich.markup import escape

    from assay.cli.main import console, out, print_summary_table
    from assay.errors import ConfigError
    from assay.importer.write import ImportOptions, import_answers

    if duplicates not in ("refuse", "first", "skip") or ambiguous not in ("refuse", "skip"):
        raise ConfigError("--duplicates takes refuse, first or skip; --ambiguous takes refuse or skip")
    options = ImportOptions(method=method, dataset=dataset, dimension=dimension, answers=answers, match=match,
                            id=id_field, mode=mode, logprobs=logprobs, checklist=checklist, rubric=rubric,
                            judge_name=judge_name, duplicates=duplicates, ambiguous=ambiguous,  # type: ignore[arg-type]
                            strict_ratings=strict_ratings)
    target = run_dir or Path("runs") / f"{Path(dataset).stem.split(':')[0]}-{method}-{answers_file.stem}"
    result = import_answers(answers_file, options, target)
    c = result.counts
    if result.outcome == "noop":
        out.print(f"{escape(str(answers_file))} is already imported for {escape(result.dimension)} in "
                  f"{escape(str(target))}: nothing to do ({c.get('matched', 0)} answers stored earlier)")
        return
    out.print(f"imported {c['matched']} answers for {escape(result.dimension)} from {escape(str(answers_file))} "
              f"({c['records']} records: {c['scored']} scored, {c['parse_failed']} unreadable, {c['unmatched']} "
              f"unmatched, {c['skipped']} skipped; {c['samples_without_answer']} samples of the dataset without "
              f"an answer); no judge was called")
    for note in result.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    print_summary_table(target, f"{method} on {dataset}, imported")


def register(app: typer.Typer) -> None:
    """Add ``import`` to the ``assay`` command."""
    app.command(name="import")(import_cmd)
