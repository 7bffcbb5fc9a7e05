"""``assay rubric``: generate, show, measure and compare GER-Eval rubrics (thin over assay.methods.gereval)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from assay.cli.options import JudgeOpt
from assay.judges import DEFAULT_JUDGE

rubric_app = typer.Typer(no_args_is_help=True, help="GER-Eval rubrics: generate, show, statistics, transfer.")

JudgeOpts = Annotated[list[str] | None, typer.Option("--judge-opt", help="Backend option KEY=VALUE")]
CacheDir = Annotated[Path | None, typer.Option("--cache", help="Directory keeping a call cache (repeats are free)")]


def register(app: typer.Typer) -> None:
    """Add the ``rubric`` command group to the main app."""
    app.add_typer(rubric_app, name="rubric")


def _managed(spec: str, pairs: list[str] | None, cache: Path | None) -> tuple[Any, Any]:
    from assay.cli.main import judge_options
    from assay.judges import ManagedJudge, load_judge
    from assay.run.store import RunStore

    store = RunStore(cache) if cache is not None else None
    calls = store.calls if store is not None else None
    return ManagedJudge(load_judge(spec, **judge_options(pairs)), cache=calls), store


async def _close(judge: Any, store: Any) -> None:
    await judge.aclose()
    if store is not None:
        store.close()


@rubric_app.command()
def generate(
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset name (or NAME:PATH, spec .yaml)")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Rubric file to write (JSON)")],
    condition: Annotated[str, typer.Option(help="task, contexts or contrastive")] = "task",
    judge: JudgeOpt = DEFAULT_JUDGE,
    judge_opt: JudgeOpts = None,
    k: Annotated[int, typer.Option(help="Contexts shown (contexts, contrastive)")] = 3,
    seed: Annotated[int, typer.Option(help="Seeds the contexts and the sampling")] = 0,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (paper: 0.7)")] = 0.7,
    top_p: Annotated[float, typer.Option(help="Nucleus mass")] = 0.95,
    max_tokens: Annotated[int, typer.Option(help="Length bound of the criteria answer (paper: 512)")] = 512,
    instruction_max_tokens: Annotated[int, typer.Option(help="Length bound of each instruction answer")] = 512,
    reasks: Annotated[int, typer.Option(help="Re-asks after an invalid JSON answer (paper: 3)")] = 3,
    max_chars: Annotated[int | None, typer.Option(help="Cut each shown text to N characters")] = None,
    max_criteria: Annotated[int, typer.Option(help="Answers with more criteria are invalid")] = 15,
    task_file: Annotated[Path | None, typer.Option(help="Your own task description (text file) for both steps")] = None,
    cache: CacheDir = None,
) -> None:
    """Have a judge write a rubric for a dataset's task (GER-Eval generation)."""
    from assay.cli.main import console, judge_options, out
    from assay.datasets import load_dataset
    from assay.errors import AssayError
    from assay.methods.gereval.rubric import task_text
    from assay.run.prepare import prepare

    options = {"condition": condition, "k": k, "seed": seed, "temperature": temperature, "top_p": top_p,
               "max_tokens": max_tokens, "instruction_max_tokens": instruction_max_tokens, "reasks": reasks,
               "max_chars": max_chars, "max_criteria": max_criteria, "task_file": task_file}
    ds = load_dataset(dataset)
    if condition == "contrastive":
        console.print(escape(f"contrastive examples chosen by the human rating '{ds.info.contrast_field}' "
                             f"({task_text(ds.info).contrast_note})"))
    with console.status(f"writing a rubric with {escape(judge)}") as spinner:
        built = prepare("rubric", dataset=ds, judge=judge, options=options, out=output, cache_dir=cache,
                        judge_options=judge_options(judge_opt), on_status=lambda line: spinner.update(escape(line)))
    for message in built.notes:
        console.print(f"[yellow]note:[/] {escape(message)}")
    rubric = built.value
    _print_rubric(rubric, out)
    prov = rubric.provenance
    toks = sum(u.prompt_tokens for u in built.usage.values()), sum(u.completion_tokens for u in built.usage.values())
    out.print(escape(f"{len(prov.responses)} answers, {len(prov.discarded)} discarded; calls {built.calls}, "
                     f"tokens {toks[0]} prompt / {toks[1]} completion; wrote {output}"))
    if not rubric.criteria:
        raise AssayError(f"no valid criteria: every answer was discarded (see provenance.discarded in {output})")


@rubric_app.command()
def human(name: Annotated[str | None, typer.Argument(help="Bundled dataset name")] = None,
          dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Bundled dataset name")] = None,
          output: Annotated[Path | None, typer.Option("--output", "-o", help="Also write it to a file")] = None,
          ) -> None:
    """Show (and optionally write) the human rubric of a dataset in the rubric format, with its sources."""
    from assay.cli.main import out
    from assay.methods.gereval.rubric import human_rubric, save_rubric

    if (name is None) == (dataset is None):
        from assay.errors import ConfigError

        raise ConfigError("give the dataset once: assay rubric human --dataset NAME (or assay rubric human NAME)")
    rubric = human_rubric(name or dataset or "")
    _print_rubric(rubric, out)
    for n in rubric.provenance.notes:
        out.print(f"[dim]source:[/] {escape(n)}")
    if output is not None:
        out.print(escape(f"wrote {save_rubric(rubric, output)}"))


@rubric_app.command()
def show(spec: Annotated[str, typer.Argument(help="Rubric file or human:<dataset>")]) -> None:
    """Print a rubric's criteria and provenance summary."""
    from assay.cli.main import out
    from assay.methods.gereval.rubric import load_rubric

    rubric = load_rubric(spec)
    _print_rubric(rubric, out)
    prov = rubric.provenance
    if prov.source == "generated":
        out.print(escape(f"condition {prov.condition}, settings {json.dumps(prov.settings)}"))
        out.print(escape(f"contexts: {', '.join(c['sample_id'] + ' (' + c['role'] + ')' for c in prov.contexts)}"
                         if prov.contexts else "contexts: none"))
        out.print(f"{len(prov.responses)} answers, {len(prov.discarded)} discarded")
    for n in prov.notes:
        out.print(f"[yellow]note:[/] {escape(n)}")


def _print_rubric(rubric: Any, out: Any) -> None:
    from rich.table import Table

    table = Table(title=escape(f"rubric {rubric.label} (criteria sha {rubric.content_hash()})"))
    for col in ("criterion", "scale", "description", "instruction"):
        table.add_column(col)
    for c in rubric.criteria:
        table.add_row(*(escape(x) for x in (c.name, c.scale.label(), c.description, c.instruction)))
    out.print(table)


@rubric_app.command()
def stats(
    files: Annotated[list[str], typer.Argument(help="Rubric files (or human:<dataset>)")],
    human: Annotated[str | None, typer.Option("--human", help="Dataset whose human rubric to align with")] = None,
    threshold: Annotated[float, typer.Option(help="Cosine similarity at which criteria are merged")] = 0.8,
    embedder: Annotated[str, typer.Option(
        help="sentence-transformers model name or path (needs the embed extra); 'none' skips uniqueness")]
    = "all-MiniLM-L6-v2",
    tagger: JudgeOpt = DEFAULT_JUDGE,
    judge_opt: JudgeOpts = None,
    reasks: Annotated[int, typer.Option(help="Re-asks of an invalid tagging answer")] = 3,
    cache: CacheDir = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write all figures, merges and tags as JSON")] = None,
) -> None:
    """Breadth, uniqueness (embedding de-duplication) and, with --human, alignment by an LLM tagger."""
    from rich.table import Table

    from assay.cli.main import console, out
    from assay.datasets import get_info
    from assay.errors import ConfigError
    from assay.methods.gereval.embed import load_embedder
    from assay.methods.gereval.rubric import human_rubric, load_rubric, task_text
    from assay.methods.gereval.stats import rubric_stats, tag_rubric

    rubrics = [load_rubric(f) for f in files]
    model = None
    if embedder.casefold() == "none":
        console.print("uniqueness not computed (--embedder none)")
    else:
        try:
            model = load_embedder(embedder)
        except ConfigError as exc:
            raise ConfigError(f"{exc}; or pass --embedder none to skip uniqueness") from exc
        console.print(escape(f"embeddings: {model.name} from {model.location}"))
    reference = human_rubric(human) if human else None

    async def tag_all() -> list[Any]:
        managed, store = _managed(tagger, judge_opt, cache)
        try:
            task = task_text(get_info(human or "")).scoring
            return [await tag_rubric(r, reference, managed, task=task, reasks=reasks) for r in rubrics]
        finally:
            await _close(managed, store)

    all_tags = asyncio.run(tag_all()) if reference is not None else [None] * len(rubrics)
    results = [rubric_stats(r, None if model is None else model.encode([c.description for c in r.criteria]),
                            threshold, tags) for r, tags in zip(rubrics, all_tags, strict=True)]
    how = f"merge at cosine >= {threshold:g}, {model.name}" if model else "uniqueness not computed: --embedder none"
    table = Table(title=escape(f"rubric statistics ({how})"))
    for col in ("rubric", "breadth", "unique %", "align %", "merged"):
        table.add_column(col)
    for res in results:
        merged = "not computed" if res["merged"] is None else "; ".join(" = ".join(g) for g in res["merged"]) or "-"
        unique = "not computed" if model is None else _pct(res["unique"])
        table.add_row(escape(res["rubric"]), str(res["breadth"]), unique, _pct(res.get("align")), escape(merged))
    out.print(table)
    for res in results:
        for name, tags in (res.get("tags") or {}).items():
            out.print(escape(f"  {res['rubric']} | {name}: "
                             f"{', '.join(tags) if tags else 'untagged (invalid answers)'}"))
    if json_out is not None:
        used = None if model is None else {"name": model.name, "location": model.location}
        json_out.write_text(json.dumps({"embedder": used, "human": human, "rubrics": results}, indent=2),
                            encoding="utf-8")
        out.print(escape(f"wrote {json_out}"))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}"


@rubric_app.command()
def transfer(
    runs: Annotated[list[Path], typer.Argument(help="Run directories applying the same rubric (2 or more)")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the tables as JSON")] = None,
) -> None:
    """Consistency of rubric application across runs: zero- vs few-shot, or across judges.

    With two runs: exact agreement and correlation per criterion (the paper's table 3). With two
    or more: ICC(2), Krippendorff's alpha and Fleiss' kappa per criterion, the runs being the raters
    (tables 6-8 and 13).
    """
    from rich.table import Table

    from assay.cli.main import console, out
    from assay.meta.inputs import load_transfer_runs
    from assay.meta.transfer import transfer_tables

    loaded = load_transfer_runs(runs)
    for msg in loaded.notes:
        console.print(f"[yellow]note:[/] {escape(msg)}")
    tables = transfer_tables(loaded)
    pair = Table(title="pairwise: exact agreement and correlation (common scored units)")
    for col in ("criterion", "run A", "run B", "n", "agreement %", "pearson", "spearman"):
        pair.add_column(col)
    for row in tables["pairwise"]:
        pair.add_row(escape(row["criterion"]), escape(row["a"]), escape(row["b"]), str(row["n"]),
                     _pct(row["agreement"]), _f(row["pearson"]), _f(row["spearman"]))
    out.print(pair)
    multi = Table(title=f"reliability across {len(loaded.labels)} runs as raters")
    for col in ("criterion", "n items", "ICC(2,1)", "ICC(2,k)", "Krippendorff alpha", "Fleiss kappa"):
        multi.add_column(col)
    for row in tables["reliability"]:
        multi.add_row(escape(row["criterion"]), str(row["n"]), _f(row["icc2_1"]), _f(row["icc2_k"]), _f(row["alpha"]),
                      _f(row["kappa"]))
    out.print(multi)
    if json_out is not None:
        json_out.write_text(json.dumps(tables | {"runs": loaded.labels, "notes": loaded.notes}, indent=2),
                            encoding="utf-8")
        out.print(escape(f"wrote {json_out}"))


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
