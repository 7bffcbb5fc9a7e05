"""``assay geval ...``: G-Eval helpers; ``assay geval steps`` writes evaluation steps to read, edit and reuse."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.options import JudgeOpt
from assay.judges import DEFAULT_JUDGE


def register(app: typer.Typer) -> None:
    """Add the ``geval`` command group to the main app."""
    group = typer.Typer(no_args_is_help=True, help="G-Eval: write and inspect auto-CoT evaluation steps.")
    group.command("steps")(steps)
    app.add_typer(group, name="geval")


def steps(
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset name, NAME:PATH, or spec .yaml")],
    dimension: Annotated[list[str] | None, typer.Option("--dimension", help="Repeatable; default: the dataset's")]
    = None,
    judge: JudgeOpt = DEFAULT_JUDGE,
    judge_opt: Annotated[list[str] | None, typer.Option("--judge-opt", help="Backend option KEY=VALUE")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the steps file here (default: stdout)")]
    = None,
    max_tokens: Annotated[int, typer.Option(help="Room for the judge's steps")] = 256,
) -> None:
    """Ask the judge to write G-Eval evaluation steps for each dimension; edit them and pass
    the file to ``assay run --method geval --steps FILE``."""
    from rich.console import Console
    from rich.markup import escape

    from assay.cli.main import judge_options
    from assay.errors import AssayError
    from assay.run.prepare import prepare

    console = Console(stderr=True, emoji=False)
    with console.status(f"writing steps with {escape(judge)}") as spinner:
        built = prepare("geval-steps", dataset=dataset, judge=judge, dimensions=dimension or None,
                        options={"max_tokens": max_tokens}, out=output, judge_options=judge_options(judge_opt),
                        on_status=lambda line: spinner.update(escape(line)))
    for name, entry in built.value.items():
        console.print(f"[bold]{escape(name)}[/] ({entry['sha256']}):\n{escape(entry['steps'])}\n")
    if built.failures:
        raise AssayError("; ".join(built.failures))
    if output is None:
        typer.echo(built.text)
    else:
        console.print(f"wrote {output}; use it with: assay run --method geval --dataset {dataset} --steps {output}")
