"""Reading a YAML or JSON file into a pydantic model, with one kind of error naming file, record and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from assay.errors import InputError

M = TypeVar("M", bound=BaseModel)


def yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """The line (1-based, when the parser knows it) and the parser's own words for a YAML error.

    Kept apart so that a reader listing every problem with its line (the checklist) words it the same way.
    """
    mark = getattr(exc, "problem_mark", None)
    return (mark.line + 1 if mark else None), str(getattr(exc, "problem", None) or exc)


def parse_yaml(text: str, *, file: str, syntax: str = "YAML", error: type[InputError] = InputError) -> Any:
    """Parse YAML, or JSON when the file's name ends in ``.json``; a syntax error names the file and the line.

    A ``.json`` file is read as JSON, not as YAML (which would take ``"2025-01-01"`` for a date).

    Args:
        text: The file's text.
        file: The file's name, for the message.
        syntax: What the file may be written in, for the message (``"JSON or YAML"``).
        error: The error raised (an :class:`InputError` subclass, where a caller's users catch their own).
    """
    if file.endswith(".json") or syntax == "JSON":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise error(f"not valid {syntax}: {exc.msg}", file=file, record=f"line {exc.lineno}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        raise error(f"not valid {syntax}: {problem}", file=file,
                    record=f"line {line}" if line else None) from exc


def read_yaml(path: str | Path, *, what: str, syntax: str = "YAML",
              error: type[InputError] = InputError) -> tuple[Any, str]:
    """A file's parsed content and its text; an unreadable file or bad syntax is an error naming the file.

    Args:
        path: The file.
        what: What the file is, for the message (``"price table"``).
        syntax: See :func:`parse_yaml`.
        error: See :func:`parse_yaml`.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read the {what}: {exc.strerror or exc}", file=str(path)) from exc
    return parse_yaml(text, file=str(path), syntax=syntax, error=error), text


def validate(model: type[M], data: Any, *, file: str, mapping: str | None = None, prefix: str = "",
             error: type[InputError] = InputError, context: dict[str, Any] | None = None) -> M:
    """Parsed data as ``model``; the first problem is an error naming the file and the field's dotted path.

    Args:
        model: The pydantic model.
        data: The parsed content.
        file: The file's name, for the message.
        mapping: When given, data that is not a mapping is refused with this message (what the file holds),
            before pydantic's less telling one.
        prefix: Put before pydantic's message (``"not a valid rubric: "``).
        error: See :func:`parse_yaml`.
        context: Passed to the model's validators.
    """
    if mapping is not None and not isinstance(data, dict):
        raise error(mapping, file=file)
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise error(f"{prefix}{err['msg']}", file=file,
                    field=".".join(str(p) for p in err["loc"]) or None) from exc


def load_model(path: str | Path, model: type[M], *, what: str, syntax: str = "YAML", mapping: str | None = None,
               prefix: str = "", error: type[InputError] = InputError) -> M:
    """A YAML or JSON file read into ``model`` (:func:`read_yaml`, then :func:`validate`)."""
    data, _ = read_yaml(path, what=what, syntax=syntax, error=error)
    return validate(model, data, file=str(path), mapping=mapping, prefix=prefix, error=error)
