"""Shared command-line options: the judge spec (names from the registries), and a method's flags as its options."""

from __future__ import annotations

import typing
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from assay.errors import UsageError, did_you_mean
from assay.judges import DEFAULT_JUDGE, backend_names
from assay.methods import method_names

#: The help of every ``--judge``: the backends registered here (built-ins and plugins), never a written-out list.
JUDGE_HELP = (f"Judge spec BACKEND:MODEL or BACKEND:MODEL@URL, backends: {', '.join(backend_names())} "
              f"(e.g. {DEFAULT_JUDGE}, openai:gpt-4o-mini@http://127.0.0.1:8000/v1, replay:RUN_DIR)")
JudgeOpt = Annotated[str, typer.Option("--judge", "-j", envvar="ASSAY_JUDGE", help=JUDGE_HELP)]
METHOD_HELP = ", ".join(method_names())


def _is_bool(annotation: Any) -> bool:
    if annotation is bool:
        return True
    return bool(typing.get_origin(annotation) in (typing.Union, getattr(__import__("types"), "UnionType", None))
                and bool in typing.get_args(annotation) and len(typing.get_args(annotation)) <= 2
                and type(None) in typing.get_args(annotation))


def _deprecated(key: str, inline: str | None, args: list[str], i: int,
                renamed: dict[str, Any]) -> tuple[str, Any, int]:
    """A deprecated flag (``--max-reasks 1``, ``--reask``, ``--no-reask``): its key, its value, the next index.

    A flag with no value after it was an on/off switch: ``--X`` is on, ``--no-X`` off.
    """
    if key not in renamed:
        return key[3:], False, i + 1
    if inline is not None:
        return key, inline, i + 1
    if i + 1 >= len(args) or args[i + 1].startswith("--"):
        return key, True, i + 1
    return key, args[i + 1], i + 2


def flags_to_options(args: list[str], model: type[BaseModel], method: str,
                     general: list[str] | None = None) -> dict[str, Any]:
    """Map ``--some-flag VALUE`` / ``--flag`` / ``--no-flag`` onto the fields of ``model``.

    A boolean field ``soft`` is set by ``--soft``; a boolean field ``no_cot`` by ``--no-cot``;
    ``--no-X`` also turns off a boolean field ``X``. Other fields take the next argument as
    their value (pydantic then converts and validates it). Repeating a list field appends.

    Args:
        args: The flags the command did not know.
        model: The method's options.
        method: The method's name, for messages.
        general: The command's own flags (``--limit``, ``--quiet``), suggested beside the method's for a typo.

    Raises:
        UsageError: A flag neither the method nor the command has (with the closest of both), a flag without its
            value, or a stray argument.
    """
    fields = model.model_fields
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            raise UsageError(f"unexpected argument {arg!r}")
        name, eq, inline = arg[2:].partition("=")
        key = name.replace("-", "_")
        negated = False
        renamed = getattr(model, "renamed", {})
        if key not in fields and (key in renamed or (key.startswith("no_") and key[3:] in renamed)):
            key, value, i = _deprecated(key, inline if eq else None, args, i, renamed)
            out[key] = value  # converted to the new option on validation
            continue
        if key not in fields and key.startswith("no_") and key[3:] in fields:
            key, negated = key[3:], True
        if key not in fields:
            raise UsageError(_unknown_flag(name, method, sorted(fields), general or []))
        info = fields[key]
        if _is_bool(info.annotation) and not eq:
            out[key] = not negated
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(args):
                raise UsageError(f"option --{name} needs a value")
            value = args[i + 1]
            i += 2
        if typing.get_origin(info.annotation) in (list, tuple):
            out.setdefault(key, []).append(value)
        else:
            out[key] = value
    return out


#: Exit code of ``assay run`` and ``assay meta`` when a dimension's coverage is below ``--fail-under-coverage``
#: (docs/judges.md, "Exit codes"): apart from 1 (an error) and 3 (units failed or undone: re-run to retry).
EXIT_COVERAGE = 4
CoverageOpt = Annotated[float | None, typer.Option(
    "--fail-under-coverage", min=0.0, max=1.0,
    help=f"Exit {EXIT_COVERAGE} when a dimension's coverage (scored / asked) is below this share, e.g. 0.95 (CI)")]


def gate_coverage(rows: list[dict[str, Any]], bound: float | None, where: str) -> None:
    """Stop with :data:`EXIT_COVERAGE` when a dimension row's coverage is below ``bound``, naming each one.

    Args:
        rows: Dimension rows with ``dimension``, ``coverage``, ``scored`` and ``items`` (``meta_evaluate``'s).
        bound: ``--fail-under-coverage``; None: no gate.
        where: The run or scores file, for the message.
    """
    if bound is None:
        return
    from assay.cli.main import console
    from assay.meta.coverage import below_coverage

    low = below_coverage(rows, bound)
    if low:
        named = ", ".join(f"{r['dimension']} {r['coverage'] or 0.0:.3f} ({r['scored']} of {r['items']} scored)"
                          for r in low)
        console.print(f"[red]coverage below --fail-under-coverage {bound:g}[/] in {where}: {named}")
        raise typer.Exit(EXIT_COVERAGE)


def _unknown_flag(name: str, method: str, fields: list[str], general: list[str]) -> str:
    """The message for ``--name``, which neither the method nor the command has: the closest flags of both."""
    own = ["--" + f.replace("_", "-") for f in fields]
    close = did_you_mean("--" + name, own + general).partition(" Known:")[0].strip()
    return (f"method {method!r} has no option --{name}, nor has the command.{' ' + close if close else ''} "
            f"Its options: {', '.join(own) or 'none'}; the command's: see --help.")
