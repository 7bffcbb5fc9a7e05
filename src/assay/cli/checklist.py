"""``assay checklist show`` and ``assay checklist build``: CheckEval checklists on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assay.cli.options import JudgeOpt
from assay.judges import DEFAULT_JUDGE

if TYPE_CHECKING:
    from assay.methods.checkeval.checklist import Checklist

checklist_app = typer.Typer(no_args_is_help=True, help="CheckEval checklists: show one, or build one with a judge.")


def register(app: typer.Typer) -> None:
    """Add the ``checklist`` command group to the main app."""
    app.add_typer(checklist_app, name="checklist")


def _consoles() -> tuple[Any, Any]:
    from assay.cli.main import console, out

    return console, out


@checklist_app.command()
def show(
    checklist: Annotated[str, typer.Argument(help="A shipped name (summeval, topical-chat, qags) or a YAML file")],
    removed: Annotated[bool, typer.Option("--removed/--kept-only", help="List removed questions too")] = True,
) -> None:
    """Print a checklist as a tree, with the number of questions at each stage (as CheckEval's tables 5-6)."""
    from assay.methods.checkeval.checklist import checklist_hash
    from assay.methods.checkeval.shipped import load_checklist

    _, out = _consoles()
    cl = load_checklist(checklist)
    out.print(f"[bold]{cl.name}[/] (sha256 {checklist_hash(cl)}): {cl.description}")
    out.print(f"source: {cl.source}")
    if cl.dataset:
        out.print(f"dataset: {cl.dataset}")
    out.print(render_tree(cl, removed=removed))
    out.print(counts_table(cl))
    if cl.build is not None:
        _print_build(cl, out)


def render_tree(cl: Checklist, *, removed: bool = True) -> Any:
    """The checklist as a rich Tree: dimension -> sub-dimension -> questions with origin, seed and fate."""
    from rich.markup import escape
    from rich.tree import Tree

    tree = Tree(f"[bold]{escape(cl.name)}[/]")
    for dim in cl.dimensions:
        kept = sum(len(s.kept()) for s in dim.sub_dimensions)
        dnode = tree.add(f"[bold cyan]{escape(dim.name)}[/] ({kept} questions) - {escape(dim.definition)}")
        for sub in dim.sub_dimensions:
            label = f"[bold]{escape(sub.name)}[/] ({len(sub.kept())}/{len(sub.questions)} kept)"
            if not sub.kept():
                label += " [red]no question left: not asked[/]"
            snode = dnode.add(label + (f" - {escape(sub.definition)}" if sub.definition else ""))
            for q in sub.questions:
                if not q.kept and not removed:
                    continue
                tag = escape(f"{q.id} ({q.origin}" + (f" of {q.seed})" if q.seed else ")"))
                line = f"[dim]{tag}[/] {escape(q.text)}"
                if not q.kept:
                    line = (f"[red]x[/] [strike]{escape(q.text)}[/strike] [dim]{tag}[/] "
                            f"[red]removed: {escape(q.removed_because or '')}[/]")
                snode.add(line)
    return tree


def counts_table(cl: Checklist) -> Any:
    """Questions per stage and dimension, in the layout of CheckEval's tables 5-6."""
    from rich.table import Table

    from assay.methods.checkeval.checklist import STAGES, stage_counts

    counts = stage_counts(cl)
    table = Table(title="questions per stage")
    table.add_column("stage")
    for dim in counts:
        table.add_column(dim, justify="right")
    table.add_column("total", justify="right")
    labels = {"seed": "seed questions", "filtered out": "filtered out", "final": "final checklist"}
    for stage in STAGES:
        row = [counts[d][stage] for d in counts]
        table.add_row(labels.get(stage, stage), *map(str, row), str(sum(row)))
    return table


def _print_build(cl: Checklist, out: Any) -> None:
    b = cl.build
    assert b is not None
    judge = f"{b.judge.get('backend')}:{b.judge.get('model')}"
    rejected = sum(len(c.rejected) for c in b.calls)
    retried = sum(1 for c in b.calls if c.attempt > 1)
    out.print(f"built {b.created_at} by assay {b.assay_version} with {judge}; settings {b.settings}; "
              f"filter: {b.filter}")
    out.print(f"{len(b.calls)} generation calls ({retried} re-asks), {rejected} generated or returned items "
              f"rejected (see build.calls[].rejected)")
    for note in b.notes:
        out.print(f"[yellow]note:[/] {note}")
    for failure in b.failures:
        out.print(f"[red]failed:[/] {failure}")


@checklist_app.command()
def build(
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="The dataset the checklist is for")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the checklist YAML")],
    dimension: Annotated[list[str] | None, typer.Option("--dimension", help="Repeatable; default: all")] = None,
    judge: JudgeOpt = DEFAULT_JUDGE,
    judge_opt: Annotated[list[str] | None, typer.Option("--judge-opt", help="Backend option KEY=VALUE")] = None,
    seeds: Annotated[str | None, typer.Option(help="Seed checklist name or file; default: the dataset's")] = None,
    no_filter: Annotated[bool, typer.Option("--no-filter", help="Skip the LLM filter; edit the file by hand")] = False,
    style: Annotated[str, typer.Option(help="2025 (diversification + elaboration) or 2024 (table 3)")] = "2025",
    name: Annotated[str | None, typer.Option(help="Name of the new checklist")] = None,
    temperature: Annotated[float, typer.Option(help="Generation temperature")] = 0.7,
    max_tokens: Annotated[int, typer.Option(help="Room for one augmentation answer")] = 400,
    reasks: Annotated[int, typer.Option(help="Re-asks per step after a malformed answer, then it is given up")] = 2,
    max_attempts: Annotated[int | None, typer.Option(hidden=True, help="Deprecated: --reasks N-1")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Keep judge calls here; a rebuild reuses them")] = None,
    diversification_per_seed: Annotated[int | None, typer.Option(
        help="New questions per seed in diversification; default: as the authors' released pools hold (2)")] = None,
    elaboration_per_seed: Annotated[int | None, typer.Option(
        help="Sub-questions per seed in elaboration; default: as the authors' released pools hold (4)")] = None,
) -> None:
    """Grow a seed checklist with CheckEval's augmentation and filtering, and write it as YAML."""
    from rich.markup import escape

    from assay.cli.main import judge_options
    from assay.run.prepare import prepare

    console, out = _consoles()
    options = {"seeds": seeds, "name": name, "style": style, "filter": not no_filter, "temperature": temperature,
               "max_tokens": max_tokens,
               "reasks": reasks if max_attempts is None else None, "max_attempts": max_attempts,
               "diversification_per_seed": diversification_per_seed, "elaboration_per_seed": elaboration_per_seed}
    with console.status(f"building a checklist for {escape(dataset)} with {escape(judge)}") as spinner:
        built = prepare("checklist", dataset=dataset, judge=judge, dimensions=dimension or None,
                        options={k: v for k, v in options.items() if v is not None}, out=output,
                        cache_dir=cache_dir, judge_options=judge_options(judge_opt),
                        on_status=lambda line: spinner.update(escape(line)))
    out.print(counts_table(built.value))
    _print_build(built.value, out)
    out.print(f"wrote {output}; check it with `assay checklist show {output}`")
