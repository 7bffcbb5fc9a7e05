"""The ``assay`` command: thin over the Python API, adding progress bars, tables and files."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from assay.cli.options import JUDGE_HELP, METHOD_HELP, JudgeOpt
from assay.errors import AssayError
from assay.judges import DEFAULT_JUDGE

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Judge generated text with LLMs and measure how far the judges can be trusted.")
console = Console(stderr=True, emoji=False)  # a spec like openai:m: must not print as an emoji
out = Console(emoji=False)

# Exit codes of `assay run` (docs/judges.md, "Exit codes"): 1 is an error before judging (AssayError),
# 130 an interruption; a run that ended with failed or undone units exits with EXIT_INCOMPLETE.
EXIT_INCOMPLETE = 3

JudgeOpts = Annotated[list[str] | None,
                      typer.Option("--judge-opt", help="Backend option KEY=VALUE (n_threads=2, timeout=60)")]


def judge_options(pairs: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as backend options, with numbers and booleans converted."""
    opts: dict[str, Any] = {}
    for pair in pairs or []:
        key, eq, value = pair.partition("=")
        if not eq:
            raise AssayError(f"--judge-opt {pair!r} must be KEY=VALUE")
        opts[key] = _convert(value)
    return opts


def _convert(value: str) -> Any:
    low = value.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(
    ctx: typer.Context,
    method: Annotated[str, typer.Option("--method", "-m", help=METHOD_HELP)]
    = "direct",
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Name, NAME:PATH, or a dataset spec .yaml")]
    = "topical-chat",
    dimension: Annotated[list[str] | None, typer.Option("--dimension", help="Repeatable; default: the dataset's")]
    = None,
    judge: JudgeOpt = DEFAULT_JUDGE,
    judge_opt: JudgeOpts = None,
    limit: Annotated[int | None, typer.Option(help="Judge only the first N samples")] = None,
    docs: Annotated[int | None, typer.Option(help="Judge only the first N source documents")] = None,
    run_dir: Annotated[Path | None, typer.Option("--run-dir", "-o", help="Run directory (resumable)")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Judge calls in flight")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per call attempt")] = 180.0,
    retries: Annotated[int, typer.Option(help="Attempts per call")] = 6,
    prices: Annotated[Path | None, typer.Option(
        help="Price table (JSON or YAML): USD per million prompt/completion tokens by model")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar")] = False,
    batch: Annotated[bool, typer.Option(
        "--batch", help="Send the calls through the provider's batch API (openai: judges; resumable)")] = False,
    batch_retry: Annotated[str, typer.Option(
        "--batch-retry", help="Retry requests that failed in a batch: 'batch' (a later batch) or 'live'")] = "batch",
    batch_poll: Annotated[float, typer.Option(help="Seconds between polls of a batch's status")] = 30.0,
    executor: Annotated[str, typer.Option(
        help="Where units run: local, ray (a local Ray instance), ray:auto or ray:ray://HOST:PORT (the ray extra)")]
    = "local",
    workers: Annotated[int | None, typer.Option(help="Ray: judge actors (default: as many as the cluster fits)")]
    = None,
    worker_cpus: Annotated[float | None, typer.Option(
        help="Ray: CPUs per worker (default 1; embedded judge: its n_threads)")] = None,
    worker_gpus: Annotated[float | None, typer.Option(help="Ray: GPUs per worker (default 0)")] = None,
    estimate: Annotated[bool, typer.Option(
        "--estimate", help="Call no judge: print the calls, tokens (and cost with --prices) per stage")] = False,
    answer_format: Annotated[str, typer.Option(
        "--answer-format", help="free | json | auto: json decodes the method's answers under its JSON schema where "
        "the judge enforces one; auto (default) does so unless a paper preset prescribes free text")] = "auto",
) -> None:
    """Judge a dataset with a method; re-run the same command to resume.

    Method options follow as flags, e.g. ``--method geval --mode sampling --n 20`` or
    ``--method checkeval --checklist summeval --soft``.
    """
    from assay.api import RunResult, evaluate
    from assay.cli.options import flags_to_options
    from assay.judges import PriceTable, RetryPolicy
    from assay.methods import get_method

    options = flags_to_options(list(ctx.args), get_method(method).Options, method)
    run_path = run_dir or Path("runs") / f"{Path(dataset).stem.split(':')[0]}-{method}"
    price_table = PriceTable.load(prices) if prices else None
    batch_options = _batch_options(batch_retry, batch_poll) if batch else False
    if estimate:
        _print_estimate(evaluate(dataset, method=method, judge=judge, dimensions=dimension, run_dir=run_path,
                                 options=options, judge_options=judge_options(judge_opt), limit=limit, docs=docs,
                                 prices=price_table, estimate=True, batch=batch, answer_format=answer_format))
        return
    bar = _progress(quiet)
    task: list[Any] = []
    stage = bar.add_task("starting", total=None, stats="")  # every stage before judging shows here

    def on_status(message: str) -> None:  # once judging started (batch mode's batch states), on the units' bar
        bar.update(task[0] if task else stage, description=escape(message))

    def on_start(todo: int, done: int) -> None:
        bar.remove_task(stage)
        if done:
            console.print(f"[bold]resuming[/] {escape(str(run_path))}: {done} units already done, {todo} to go")
        task.append(bar.add_task(method, total=todo, stats=""))

    def on_update(p: Any, judge_: Any) -> None:
        u = judge_.ledger.total()
        bar.update(task[0], completed=p.done + p.failed, stats=(
            f"calls {u.calls} (cached {u.cached_calls}) tok {u.prompt_tokens}/{u.completion_tokens} "
            f"unscored {p.unscored} failed {p.failed}"))

    with bar:
        result = evaluate(dataset, method=method, judge=judge, dimensions=dimension, run_dir=run_path,
                          options=options, judge_options=judge_options(judge_opt), limit=limit, docs=docs,
                          concurrency=concurrency, retry=RetryPolicy(timeout_s=timeout, max_attempts=retries),
                          prices=price_table, on_start=on_start, on_update=on_update, on_status=on_status,
                          batch=batch_options, answer_format=answer_format,
                          executor=executor, workers=workers, worker_cpus=worker_cpus, worker_gpus=worker_gpus)
    assert isinstance(result, RunResult)  # without estimate=True, evaluate runs
    _print_run(result, priced=price_table is not None)
    if not result.complete:
        raise typer.Exit(EXIT_INCOMPLETE)


def _batch_options(retry: str, poll_s: float) -> Any:
    """``--batch-retry`` and ``--batch-poll`` as batch options; a bad value is an error before any call."""
    from pydantic import ValidationError

    from assay.judges.batch import BatchOptions

    try:
        return BatchOptions(retry=retry, poll_s=poll_s)  # type: ignore[arg-type]
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = {"retry": "--batch-retry", "poll_s": "--batch-poll"}.get(str(err["loc"][0]), str(err["loc"][0]))
        raise AssayError(f"{flag} {err['input']!r}: {err['msg']}") from None


def _print_estimate(est: Any) -> None:
    """The estimate as a table, one row per stage, then how it was counted."""
    table = Table(title=f"estimate: {est.method} on {est.dataset} with {est.judge}, {est.units} units"
                        + (f" ({est.units_done} already done)" if est.units_done else ""))
    columns = ["stage", "calls", "cached", "prompt", "compl", "max", "exact"]
    for col in columns + (["USD"] if est.priced else []):
        table.add_column(col, justify="left" if col == "stage" else "right", no_wrap=True)
    for row in [*est.stages, est.total()]:
        table.add_row(escape(row.stage), str(row.calls), str(row.cached_calls), str(row.prompt_tokens),
                      str(row.completion_tokens), str(row.completion_tokens_max),
                      "yes" if row.exact else f"{row.exact_calls}/{row.calls}",
                      *([f"{row.cost_usd:.4f}"] if est.priced else []))
    out.print(table)
    for row in est.stages:
        out.print(f"{escape(row.stage)}: {escape(row.why)}")
    out.print(f"tokenizer: {escape(est.tokenizer)}")
    out.print(f"completion tokens: {escape(est.completion_basis)}; re-asks: {est.reask_rate:g} per call (stated)")
    for line in est.assumptions:
        out.print(f"assumed: {escape(line)}")
    for kind, message in dict.fromkeys(est.notes):  # the method's, after stand-in answers: a run may differ
        out.print(f"[yellow]note ({escape(kind)}, on the stand-in answers):[/] {escape(message)}")


def _progress(quiet: bool) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[stats]}"),
                    console=console, disable=quiet, transient=False)


def _print_run(result: Any, *, priced: bool = False) -> None:
    m = result.manifest
    _print_summary_table(result.run_dir, f"{m['method']} on {m['dataset']['name']} "
                                         f"with {m['judge']['backend']}:{m['judge']['model']}")
    usage = result.usage
    total_calls = sum(u.calls for u in usage.values())
    cached = sum(u.cached_calls for u in usage.values())
    toks = sum(u.prompt_tokens for u in usage.values()), sum(u.completion_tokens for u in usage.values())
    out.print(f"calls {total_calls} (+{cached} from cache), tokens {toks[0]} prompt / {toks[1]} completion; "
              f"run stored in {result.run_dir}")
    if len(usage) > 1:
        out.print("by stage: " + "; ".join(
            f"{stage} {u.calls} calls, {u.prompt_tokens}/{u.completion_tokens} tok, {u.latency_s:.1f} s"
            + (f", ${u.cost_usd:.4f}" if priced else "") for stage, u in usage.items()))
    if priced:
        cost = f"cost ${sum(u.cost_usd for u in usage.values()):.4f}"
        if result.resumed:
            cost += f" (whole run ${result.manifest['cost_usd']:.4f})"
        out.print(cost)
    if isinstance(m.get("answer_format"), dict):
        out.print(f"answer format: {m['answer_format']['used']} ({escape(m['answer_format']['reason'])})")
    if m.get("batch"):
        created, resumed = m["batch"]["created"], m["batch"].get("resumed", [])
        out.print(f"batches: {len(created)} created" + (f", {len(resumed)} taken up from an earlier session"
                                                         if resumed else ""))
    for n in result.notes:
        out.print(f"[yellow]note ({escape(n['kind'])}, x{n['count']}):[/] {escape(n['message'])}")
    _print_incomplete(result)


def _print_summary_table(run_dir: Path, title: str) -> None:
    """The run's table per dimension (units, coverage, mean score, correlations with the human ratings)."""
    from assay.report.summary import run_summary

    table = Table(title=title)
    summary = run_summary(run_dir)
    for col in summary["columns"]:
        table.add_column(col, justify="right" if col not in ("dimension",) else "left")
    for row in summary["rows"]:
        table.add_row(*[_cell(v) for v in row])
    out.print(table)
    if summary.get("level_note"):
        out.print(summary["level_note"])


def _print_incomplete(result: Any, shown: int = 5) -> None:
    """Say how many units failed or were left undone, the first few errors, and how to see them all."""
    if result.complete:
        return
    units = result.units
    console.print(f"[red]incomplete run:[/] {result.failed} of {units['asked']} units failed after retries"
                  + (f", {result.undone} left undone" if result.undone else "")
                  + "; re-run the same command to retry them (scored units are not judged again).")
    failed = [j for j in result.judgments if j.status == "failed"]
    for j in failed[:shown]:
        attempts = j.trace.get("attempts")
        console.print(f"  {escape(j.sample_id)} / {escape(j.dimension)}: {escape(str(j.error))}"
                      + (f" ({attempts} attempts)" if attempts else ""))
    if failed:
        console.print(f"  all of them: assay export {escape(str(result.run_dir))} --format csv, "
                      "rows with status=failed")


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return escape(str(v))


@app.command()
def datasets(name: Annotated[str | None, typer.Argument(help="Show one dataset")] = None) -> None:
    """List the bundled datasets, or show one with its counts and dimensions."""
    from assay.datasets import list_datasets, load_dataset

    if name is None:
        table = Table(title="datasets")
        for col in ("name", "task", "level", "default dimensions"):
            table.add_column(col)
        for info in list_datasets():
            table.add_row(info.name, info.task, info.level, ", ".join(info.default_dimensions))
        out.print(table)
        return
    ds = load_dataset(name)
    docs = len({s.doc_id for s in ds.samples})
    systems = len({s.system_id for s in ds.samples})
    out.print(f"[bold]{ds.name}[/]: {len(ds.samples)} samples, {docs} source documents, {systems} systems; "
              f"correlation level: {ds.info.level}")
    out.print(f"task: {ds.info.task}\nsource: {ds.info.provenance}\nfile: {ds.path} (sha256 {ds.sha256[:16]})")
    table = Table(title="dimensions")
    for col in ("name", "scale", "rated", "definition"):
        table.add_column(col)
    for d in ds.info.dimensions:
        rated = sum(d.name in s.human for s in ds.samples)
        human = ds.info.human_scale(d.name)
        scale = d.scale.label() + (f" (human ratings {human.label()})" if human != d.scale else "")
        table.add_row(d.name, scale, str(rated), d.definition)
    out.print(table)


@app.command()
def judges(spec: Annotated[str, typer.Argument(help=JUDGE_HELP)] = DEFAULT_JUDGE,
           judge_opt: JudgeOpts = None) -> None:
    """Check a judge spec: reachable, which model answers, whether it gives log-probabilities."""
    from assay.judges import load_judge

    async def check() -> dict[str, Any]:
        judge = load_judge(spec, **judge_options(judge_opt))
        try:
            report = await judge.check()  # first: an unreachable endpoint is named by the plain call's error
            detect = getattr(judge, "detect_logprobs", None)
            if detect is not None:
                await detect()
            report["supports_logprobs"] = judge.supports_logprobs
            return report
        finally:
            await judge.aclose()

    out.print_json(json.dumps(asyncio.run(check())))


@app.command()
def export(run_dir: Path, format: Annotated[str, typer.Option("--format", "-f")] = "jsonl",
           output: Annotated[Path | None, typer.Option("--output", "-o")] = None) -> None:
    """Export a run's judgments as JSONL, CSV or Parquet."""
    from assay.run.store import RunStore

    with RunStore(run_dir, readonly=True) as store:
        path = store.export(output or run_dir / f"judgments.{format}", format)
    out.print(f"wrote {path}")


# Sub-commands living in their own modules: each module has ``register(app)``.
_SUBCOMMAND_MODULES = ("assay.cli.meta", "assay.cli.geval", "assay.cli.checklist", "assay.cli.rubric",
                       "assay.cli.view", "assay.cli.importer", "assay.cli.probe")


def _register_subcommands() -> None:
    import importlib
    import importlib.util

    for module in _SUBCOMMAND_MODULES:
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module).register(app)


_register_subcommands()


def main() -> None:
    """Entry point: user errors print as one clear message, not a traceback."""
    try:
        code = app(standalone_mode=False)  # typer returns 130 for Ctrl-C and the code of typer.Exit
    except AssayError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)  # one line, not cut at 80 columns
        sys.exit(1)
    except (KeyboardInterrupt, click.exceptions.Abort):
        code = 130
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        sys.exit(code)
    except Exception as exc:  # click usage errors
        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
    if code == 130:
        console.print("[yellow]interrupted[/]: finished judgments are stored; re-run the same command to resume.")
    if isinstance(code, int) and code:
        sys.exit(code)
