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
    import asyncio

    from rich.console import Console

    from assay.cli.main import judge_options
    from assay.datasets import load_dataset
    from assay.errors import AssayError
    from assay.judges import ManagedJudge, load_judge
    from assay.methods.geval.steps import generate_steps, steps_document

    console = Console(stderr=True, emoji=False)
    ds = load_dataset(dataset)
    dims = ds.dimensions(dimension)

    async def write() -> str:
        managed = ManagedJudge(load_judge(judge, **judge_options(judge_opt)))
        try:
            entries = {}
            for d in dims:
                entry, error = await generate_steps(managed, ds.info, d, max_tokens=max_tokens)
                if entry is None:
                    raise AssayError(f"{judge} wrote no usable steps for {d.name}: {error}")
                entries[d.name] = entry
                console.print(f"[bold]{d.name}[/] ({entry['sha256']}):\n{entry['steps']}\n")
            return steps_document(ds.name, entries)
        finally:
            await managed.aclose()

    text = asyncio.run(write())
    if output is None:
        typer.echo(text)
    else:
        output.write_text(text, encoding="utf-8")
        console.print(f"wrote {output}; use it with: assay run --method geval --dataset {dataset} --steps {output}")
