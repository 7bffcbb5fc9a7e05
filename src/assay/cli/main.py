"""The ``assay`` command: thin over the Python API, adding progress bars, tables and files."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column, Table

from assay.cli.options import JUDGE_HELP, METHOD_HELP, CoverageOpt, JudgeOpt, gate_coverage
from assay.errors import AssayError, UsageError
from assay.judges import DEFAULT_JUDGE
from assay.methods import DEFAULT_METHOD

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Judge generated text with LLMs and measure how far the judges can be trusted.")
console = Console(stderr=True, emoji=False)  # a spec like openai:m: must not print as an emoji
out = Console(emoji=False)

# Exit codes of `assay run` (docs/judges.md, "Exit codes"): 1 is an error before judging (AssayError),
# 130 an interruption; a run that ended with failed or undone units exits with EXIT_INCOMPLETE.
EXIT_INCOMPLETE = 3
#: Seconds between two updates of the progress bar's counts (rich redraws at 10 Hz: more would be lost work).
PROGRESS_EVERY_S = 0.1
#: Units from which a run computes its summary table in a helper process (:mod:`assay.report.ahead`), started as the
#: command starts unless ``--limit`` keeps the run below this (else at the plan, which counts the units): its imports
#: then overlap this process's imports and the judging instead of following the last answer. A smaller run computes
#: it itself, saving the helper (about a second of CPU on another core) where the table comes quickly either way.
AHEAD_MIN_UNITS = 500
EXIT_USAGE = 2  # a usage error: an unknown command or flag, a missing argument (as click and typer exit)

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
    = DEFAULT_METHOD,
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
    refused_wait: Annotated[float, typer.Option(
        help="Seconds to retry an endpoint that refuses connections (a server starting) before giving up")] = 3.0,
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
    fail_under_coverage: CoverageOpt = None,
    retry_parse_failures: Annotated[bool, typer.Option(
        "--retry-parse-failures", help="On resume, ask parse-failed units again (a new attempt; answers kept)")]
    = False,
    answer_format: Annotated[str, typer.Option(
        "--answer-format", help="free | json | auto: json decodes the method's answers under its JSON schema where "
        "the judge enforces one; auto (default) does so unless a paper preset prescribes free text")] = "auto",
) -> None:
    """Judge a dataset with a method; re-run the same command to resume.

    Method options follow as flags, e.g. ``--method geval --mode sampling --n 20`` or
    ``--method checkeval --checklist summeval --soft``.
    """
    from assay.report.ahead import SummaryAhead

    # The summary's helper process (a large run's table, computed beside it): started now where the run may be large,
    # so that its imports overlap this process's on the other core; at the plan, stopped where the run is small
    # after all, or started where a limit hid that it is large.
    ahead: list[SummaryAhead] = []

    def end_helpers() -> None:  # a helper that was asked for its table has ended already
        for helper in ahead:
            helper.close()
        ahead.clear()

    ctx.call_on_close(end_helpers)  # a run that failed or was stopped: its helper ended with the command
    if not estimate and (limit is None or limit >= AHEAD_MIN_UNITS):
        ahead.append(SummaryAhead.start())

    def on_plan(units: int) -> None:
        if units < AHEAD_MIN_UNITS:
            end_helpers()
        elif not ahead:
            ahead.append(SummaryAhead.start())

    from assay.api import RunResult, evaluate
    from assay.cli.options import flags_to_options
    from assay.judges import PriceTable, RetryPolicy
    from assay.methods import get_method

    general = [o for p in ctx.command.params for o in p.opts if o.startswith("--")]
    options = flags_to_options(list(ctx.args), get_method(method).Options, method, general)
    run_path = run_dir or Path("runs") / f"{Path(dataset).stem.split(':')[0]}-{method}"
    price_table = PriceTable.load(prices) if prices else None
    batch_options = _batch_options(batch_retry, batch_poll) if batch else False
    if estimate:
        _print_estimate(evaluate(dataset, method=method, judge=judge, dimensions=dimension, run_dir=run_path,
                                 options=options, judge_options=judge_options(judge_opt), limit=limit, docs=docs,
                                 prices=price_table, estimate=True, batch=batch, answer_format=answer_format))
        return
    stages, bar = _stage_progress(quiet), _progress(quiet)
    task: list[Any] = []
    stage = stages.add_task("starting", total=None)  # every stage before judging: its own line, the whole width

    def on_status(message: str) -> None:  # once judging started (batch states, retries), on the units' bar
        if task:
            bar.update(task[0], stats=escape(message))
        else:
            stages.update(stage, description=escape(message))

    def on_start(todo: int, done: int) -> None:
        stages.stop()
        if done:
            console.print(f"[bold]resuming[/] {escape(str(run_path))}: {done} units already done, {todo} to go")
        task.append(bar.add_task(method, total=todo, stats=""))
        bar.start()

    def on_warning(message: str) -> None:  # kept above the stage line (units over the judge's context)
        console.print(f"[yellow]warning:[/] {escape(message)}")

    shown = [0.0]  # when the bar was last updated

    def on_update(p: Any, judge_: Any) -> None:  # after each unit; the bar redraws 10 times a second at most
        now = time.monotonic()
        if now - shown[0] < PROGRESS_EVERY_S and p.done + p.failed < p.total:
            return
        shown[0] = now
        u = judge_.ledger.total()
        bar.update(task[0], completed=p.done + p.failed, stats=(  # a unit done: past any retry or status
            f"calls {u.calls} (cached {u.cached_calls}) tok {u.prompt_tokens}/{u.completion_tokens} "
            f"unscored {p.unscored} failed {p.failed}"))

    stages.start()
    try:
        result = evaluate(dataset, method=method, judge=judge, dimensions=dimension, run_dir=run_path,
                          options=options, judge_options=judge_options(judge_opt), limit=limit, docs=docs,
                          concurrency=concurrency, retry=RetryPolicy(timeout_s=timeout, max_attempts=retries,
                                                             refused_s=refused_wait),
                          prices=price_table, on_plan=on_plan, on_start=on_start, on_update=on_update,
                          on_status=on_status,
                          on_warning=on_warning,
                          batch=batch_options, retry_parse_failures=retry_parse_failures,
                          answer_format=answer_format,
                          executor=executor, workers=workers, worker_cpus=worker_cpus, worker_gpus=worker_gpus)
    finally:
        stages.stop()
        bar.stop()
    assert isinstance(result, RunResult)  # without estimate=True, evaluate runs
    _print_run(result, priced=price_table is not None, ahead=ahead[0] if ahead else None)
    if not result.complete:
        raise typer.Exit(EXIT_INCOMPLETE)  # before the coverage gate: re-running may still reach the bound
    if fail_under_coverage is not None:
        from assay.meta.coverage import coverage
        from assay.meta.inputs import read_run

        table = read_run(result.run_dir)
        rows = [{"dimension": d, **coverage(table.dim(d))} for d in table.dimensions()]
        gate_coverage(rows, fail_under_coverage, str(result.run_dir))


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
    if est.over_context:
        shown = "; ".join(escape(u) for u in est.over_context[:5])
        out.print(f"[yellow]{len(est.over_context)} unit(s) have a prompt over the judge's context of {est.n_ctx} "
                  f"tokens[/] (with max_tokens; a run fails them): {shown}"
                  + (" ..." if len(est.over_context) > 5 else "") + "; raise it with --judge-opt n_ctx=N")
    for kind, message in dict.fromkeys(est.notes):  # the method's, after stand-in answers: a run may differ
        out.print(f"[yellow]note ({escape(kind)}, on the stand-in answers):[/] {escape(message)}")


def _stage_progress(quiet: bool) -> Progress:
    """The line of the stages before judging (loading, probing, preparing): a spinner, the stage's status over the
    whole width (so that "retrying until ..." or the step being written is read at 80 columns), the time; it
    gives way to the units' bar."""
    return Progress(SpinnerColumn(), TextColumn("{task.description}", table_column=Column(
                        ratio=1, no_wrap=True, overflow="ellipsis")), TimeElapsedColumn(),
                    console=console, disable=quiet, transient=True, expand=True)


def _progress(quiet: bool) -> Progress:
    """The run's bar: the counts and times always whole; the stage's status or the calls and tokens take the rest
    of the line (cut with an ellipsis at 80 columns, their first words being the news: "retrying until ...")."""
    flexible = {"no_wrap": True, "overflow": "ellipsis"}
    return Progress(TextColumn("[bold]{task.description}", table_column=Column(ratio=1, **flexible)),
                    BarColumn(bar_width=10), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
                    TimeRemainingColumn(), TextColumn("{task.fields[stats]}", table_column=Column(ratio=3, **flexible)),
                    console=console, disable=quiet, transient=False, expand=True)


def _print_run(result: Any, *, priced: bool = False, ahead: Any = None) -> None:
    m = result.manifest
    print_summary_table(result.run_dir, f"{m['method']} on {m['dataset']['name']} "
                                         f"with {m['judge']['backend']}:{m['judge']['model']}", ahead)
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


def print_summary_table(run_dir: Path, title: str, ahead: Any = None) -> None:
    """The run's table per dimension (units, coverage, mean score, correlations with the human ratings), from
    ``ahead`` (a :class:`assay.report.ahead.SummaryAhead`) where the run started one."""
    from assay.cli.meta import print_table
    from assay.report.summary import run_summary

    summary = run_summary(run_dir) if ahead is None else ahead.summary(run_dir)
    if ahead is not None and ahead.fell_back:
        out.print(f"[dim]summary computed in this process: {escape(ahead.fell_back)}[/]")
    print_table({"title": title, "columns": summary["columns"],
                 "rows": [[_cell(v) for v in row] for row in summary["rows"]]})
    if summary.get("level_note"):
        out.print(summary["level_note"])


def _print_incomplete(result: Any, shown: int = 5) -> None:
    """Say how many units failed or were left undone, the first few errors, and how to see them all."""
    if result.complete:
        return
    units = result.units
    failed = [j for j in result.judgments if j.status == "failed"]
    refused = sum(1 for j in failed if (j.trace.get("over_context") or {}).get("refused_without_call"))
    console.print(f"[red]incomplete run:[/] {result.failed} of {units['asked']} units failed after retries"
                  + (f" ({refused} of them refused before any call: over the judge's context; a larger "
                     "--judge-opt n_ctx lets a re-run judge them)" if refused else "")
                  + (f", {result.undone} left undone" if result.undone else "")
                  + "; re-run the same command to retry them (scored units are not judged again).")
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
    return str(v)  # printed as plain text (assay.cli.fit.render), never as markup


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
    """Export a run's judgments as JSONL, CSV or Parquet (with score_calibrated after `assay meta --calibrate`)."""
    from assay.meta.trust.session import read_calibration
    from assay.run.store import RunStore

    calibrated, said = read_calibration(run_dir)
    with RunStore(run_dir, readonly=True) as store:
        path = store.export(output or run_dir / f"judgments.{format}", format, calibrated)
    if said:
        out.print(said)
    out.print(f"wrote {path}")


# Sub-commands living in their own modules: each module has ``register(app)``.
_SUBCOMMAND_MODULES = ("assay.cli.meta", "assay.cli.geval", "assay.cli.checklist", "assay.cli.rubric",
                       "assay.cli.view", "assay.cli.importer", "assay.cli.probe", "assay.cli.labels",
                       "assay.cli.jury")


def _register_subcommands() -> None:
    import importlib
    import importlib.util

    for module in _SUBCOMMAND_MODULES:
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module).register(app)


_register_subcommands()


def main() -> None:
    """Entry point: user errors print as one clear message, not a traceback.

    Exit codes: 0 done, 1 an error before or while judging (AssayError), 2 a usage error (unknown command or
    flag, missing argument, bad value: typer's own errors and :class:`UsageError`), 3 an incomplete run,
    130 an interruption.
    """
    try:
        code = app(standalone_mode=False)  # typer returns 130 for Ctrl-C and the code of typer.Exit
    except UsageError as exc:
        _error(str(exc))
        sys.exit(EXIT_USAGE)
    except AssayError as exc:
        _error(str(exc))
        sys.exit(1)
    except typer.TyperException as exc:  # typer's usage errors (its vendored click's), whichever click is installed
        sys.exit(_typer_error(exc))
    except (KeyboardInterrupt, typer.Abort):
        code = 130
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        sys.exit(code)
    if code == 130:
        console.print("[yellow]interrupted[/]: finished judgments are stored; re-run the same command to resume.")
    if isinstance(code, int) and code:
        sys.exit(code)


def main_process() -> NoReturn:
    """:func:`main` as the whole life of a process: ``python -m assay.cli`` and the ``assay`` launcher's child.

    When it is done, the process ends as Python ends it (the exit handlers run, the standard streams are flushed,
    the same exit status) but without the interpreter's teardown, which frees every object one by one: about
    0.09 s after a 6,400-unit run, a fifth of the time from its last answer to its exit. Only where no other
    thread is alive (nothing to wait for); otherwise, and after an exception :func:`main` does not handle, the
    process exits normally.
    """
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if threading.active_count() > 1:
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # as Python does with a SystemExit that carries a message
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            stream.flush()
    os._exit(status)


def _error(message: str) -> None:
    console.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)  # one line, not cut at 80 columns


def _typer_error(exc: typer.TyperException) -> int:
    """Show one of typer's errors as one ``error:`` line (with typer's "did you mean") and return its exit code.

    ``assay`` (or a group) without arguments raises typer's ``NoArgsIsHelpError``, whose message is the help (typer's
    rich formatting has already printed it and left the message empty): the help is all there is to show.
    """
    ctx = getattr(exc, "ctx", None)
    message = exc.format_message()
    if type(exc).__name__ == "NoArgsIsHelpError":  # not exported by typer; named here, not imported from _click
        if message.strip():
            console.print(message, markup=False, highlight=False)
        return exc.exit_code
    command = ctx.command_path if ctx is not None else "assay"
    option, close = getattr(exc, "option_name", None), getattr(exc, "possibilities", None)
    if option:  # an unknown option ("Possible options: ..." in typer's words)
        message = f"No such option: {option}" + (
            f". Did you mean {', '.join(sorted(close))}?" if close else "")
    _error(f"{message.rstrip('.')} (see '{command} --help')")
    return exc.exit_code
