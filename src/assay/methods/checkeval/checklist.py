"""CheckEval checklists as data: a schema, YAML files with line-precise errors, shipped seed checklists.

A checklist is dimension -> sub-dimensions -> yes/no questions (CheckEval 2025, section 3).
Each question keeps where it came from (``seed``, ``diversification``, ``elaboration`` or
``manual``), the seed question it grew from, and, after filtering, whether it was kept and
why not. A 'yes' answer always means better quality. Files are plain YAML that a user can
read, edit and version; a checklist built by ``assay checklist build`` also records the judge,
the settings and the raw responses that made it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from assay.common.files import yaml_problem
from assay.errors import AssayError, ConfigError, InputError, did_you_mean

Origin = Literal["seed", "diversification", "elaboration", "manual"]
ORIGINS: tuple[str, ...] = ("seed", "diversification", "elaboration", "manual")
GROWN: tuple[str, ...] = ("diversification", "elaboration")


class Question(BaseModel):
    """One yes/no question; 'yes' means better quality.

    Attributes:
        id: Unique within the checklist; assigned from the position when a hand-written file
            leaves it out (``<dimension>-<sub>-<n>``).
        text: The question as the judge reads it.
        origin: ``seed`` (written by people, the paper's tables), ``diversification`` or
            ``elaboration`` (generated from a seed), or ``manual`` (added by a user).
        seed: The id of the seed question a generated question grew from.
        kept: False once a filter (the LLM or a person) removed it; it stays in the file for
            the record but is never asked.
        removed_because: Why it was removed (required when ``kept`` is false).
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    text: str = Field(min_length=1)
    origin: Origin = "seed"
    seed: str | None = None
    kept: bool = True
    removed_because: str | None = None

    @field_validator("text")
    @classmethod
    def _clean(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("a question needs text")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Question:
        if self.origin == "seed" and self.seed is not None:
            raise ValueError("a seed question grows from no other question: remove `seed`")
        if self.origin in GROWN and not self.seed:
            raise ValueError(f"a question from {self.origin} must name the seed question it grew from (`seed`)")
        if not self.kept and not self.removed_because:
            raise ValueError("a removed question (kept: false) must say why in `removed_because`")
        if self.kept and self.removed_because:
            raise ValueError("`removed_because` is only for removed questions (kept: false)")
        return self


class SubDimension(BaseModel):
    """A distinct component of a dimension (the paper's sub-dimension; 'key component' in 2024)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    definition: str = ""
    questions: list[Question] = Field(min_length=1)

    def kept(self) -> list[Question]:
        """The questions that are asked."""
        return [q for q in self.questions if q.kept]


class ChecklistDimension(BaseModel):
    """A quality dimension (its name matches the dataset's dimension) and its sub-dimensions."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    definition: str = Field(min_length=1)
    sub_dimensions: list[SubDimension] = Field(min_length=1)

    def questions(self) -> Iterator[tuple[SubDimension, Question]]:
        """Every question with its sub-dimension, kept or not, in file order."""
        for sub in self.sub_dimensions:
            for q in sub.questions:
                yield sub, q


class CallRecord(BaseModel):
    """One generation call of a build: what was asked, what came back, what was taken from it."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    dimension: str
    sub_dimension: str | None = None
    attempt: int = 1
    prompt_sha256: str
    response: str
    accepted: int = 0
    rejected: list[dict[str, str]] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    error: str | None = None


class BuildRecord(BaseModel):
    """How a checklist was generated: judge, settings, every raw response, every rejection and failure."""

    model_config = ConfigDict(extra="forbid")

    judge: dict[str, Any]
    settings: dict[str, Any]
    seeds_from: str
    created_at: str
    assay_version: str
    filter: str
    calls: list[CallRecord] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)


class Checklist(BaseModel):
    """A whole checklist file.

    Attributes:
        schema_version: The file format's version.
        name: Short name (shipped ones: ``summeval``, ``topical-chat``, ``qags``).
        description: What it is for.
        source: Where the questions come from (the paper and table, or the project).
        dataset: The dataset it was written for, if any.
        dimensions: The dimensions it covers.
        build: Present when ``assay checklist build`` made it.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    name: str = Field(min_length=1)
    description: str = ""
    source: str = Field(min_length=1)
    dataset: str | None = None
    dimensions: list[ChecklistDimension] = Field(min_length=1)
    build: BuildRecord | None = None

    @model_validator(mode="after")
    def _ids_and_references(self, info: ValidationInfo) -> Checklist:
        assign_ids(self)
        if info.context and info.context.get("defer_references"):
            return self
        errors = reference_errors(self)
        if errors:
            raise ValueError("; ".join(f"{_path(loc)}: {msg}" for loc, msg in errors))
        return self

    def dimension(self, name: str) -> ChecklistDimension:
        """The dimension called ``name``.

        Raises:
            ConfigError: The checklist has no such dimension (with the ones it has).
        """
        for d in self.dimensions:
            if d.name == name:
                return d
        raise ConfigError(f"checklist {self.name!r} has no dimension {name!r}."
                          + did_you_mean(name, [d.name for d in self.dimensions]))


def assign_ids(checklist: Checklist) -> None:
    """Give questions without an id one from their position: ``<dimension>-<sub>-<n>``."""
    for dim in checklist.dimensions:
        for si, sub in enumerate(dim.sub_dimensions, start=1):
            for qi, q in enumerate(sub.questions, start=1):
                if not q.id:
                    q.id = f"{dim.name}-{si}-{qi}"


def reference_errors(checklist: Checklist) -> list[tuple[tuple[str | int, ...], str]]:
    """Cross-field problems, each with the location of the offending field.

    Checked: dimension names unique; sub-dimension names unique within a dimension; question
    ids unique in the file; a generated question's ``seed`` names a seed question of the same
    dimension.
    """
    errors: list[tuple[tuple[str | int, ...], str]] = []
    seen_dims: set[str] = set()
    seen_ids: dict[str, str] = {}
    for di, dim in enumerate(checklist.dimensions):
        if dim.name in seen_dims:
            errors.append((("dimensions", di, "name"), f"dimension {dim.name!r} appears twice"))
        seen_dims.add(dim.name)
        seeds = {q.id: q for _, q in dim.questions() if q.origin == "seed"}
        subs: set[str] = set()
        for si, sub in enumerate(dim.sub_dimensions):
            where: tuple[str | int, ...] = ("dimensions", di, "sub_dimensions", si)
            if sub.name in subs:
                errors.append(((*where, "name"), f"sub-dimension {sub.name!r} appears twice in {dim.name!r}"))
            subs.add(sub.name)
            for qi, q in enumerate(sub.questions):
                qloc = (*where, "questions", qi)
                assert q.id is not None
                if q.id in seen_ids:
                    errors.append(((*qloc, "id"), f"question id {q.id!r} is already used by {seen_ids[q.id]}"))
                seen_ids[q.id] = f"{dim.name}/{sub.name}"
                if q.seed is not None and q.seed not in seeds:
                    errors.append(((*qloc, "seed"), f"seed {q.seed!r} is not a seed question of dimension "
                                   f"{dim.name!r}." + did_you_mean(q.seed, [s for s in seeds if s])))
    return errors


class ChecklistError(InputError):
    """A checklist file that does not validate; every problem names its line."""

    def __init__(self, file: str, problems: list[tuple[int | None, str, str]]) -> None:
        self.problems = problems
        lines = [f"{file}" + (f", line {line}" if line else "") + (f" ({path})" if path else "") + f": {msg}"
                 for line, path, msg in problems]
        AssayError.__init__(self, "invalid checklist:\n  " + "\n  ".join(lines))  # not InputError's layout
        self.file, self.record, self.field = file, problems[0][0] if problems else None, None


def _path(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def node_line(root: yaml.Node | None, loc: tuple[str | int, ...]) -> int | None:
    """The 1-based line of the YAML node at ``loc`` (or of the deepest existing node on the way).

    A missing field reports the line of the mapping that should hold it.
    """
    if root is None:
        return None
    node = root
    for part in loc:
        nxt: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    nxt = value
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            nxt = node.value[part]
        if nxt is None:
            break
        node = nxt
    return node.start_mark.line + 1


def parse_checklist(text: str, file: str = "<checklist>") -> Checklist:
    """Parse and validate checklist YAML.

    Raises:
        ChecklistError: YAML syntax errors and schema violations, each with its line.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        ctx = getattr(exc, "context_mark", None)
        began = f" (in what starts at line {ctx.line + 1})" if ctx and line and ctx.line + 1 != line else ""
        raise ChecklistError(file, [(line, "", f"not valid YAML: {problem}{began}")]) from exc
    if not isinstance(data, dict):
        raise ChecklistError(file, [(1, "", "a checklist file is a mapping with name, source and dimensions")])
    try:
        checklist = Checklist.model_validate(data, context={"defer_references": True})
    except ValidationError as exc:
        problems = [(node_line(root, tuple(e["loc"])), _path(tuple(e["loc"])), _message(e)) for e in exc.errors()]
        raise ChecklistError(file, problems) from exc
    refs = reference_errors(checklist)
    if refs:
        raise ChecklistError(file, [(node_line(root, loc), _path(loc), msg) for loc, msg in refs])
    return checklist


def _message(error: Any) -> str:
    msg = str(error["msg"])
    return msg.removeprefix("Value error, ")


def checklist_hash(checklist: Checklist) -> str:
    """A stable hash of what decides the judge's prompts: dimensions, definitions, questions, kept flags.

    The build record (raw responses, usage) is left out: two files that ask the same questions
    hash alike.
    """
    import hashlib

    body = checklist.model_dump(mode="json", exclude={"build"})
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


class _Dumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    if style:
        value = "\n".join(line.rstrip() for line in value.splitlines())
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_checklist(checklist: Checklist) -> str:
    """The checklist as YAML: fields in schema order, defaults left out of questions, raw answers as blocks."""
    data = checklist.model_dump(mode="json", exclude_none=True)
    for dim in data["dimensions"]:
        for sub in dim["sub_dimensions"]:
            for q in sub["questions"]:
                if q.get("kept", True):
                    q.pop("kept", None)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)


STAGES = ("seed", "diversification", "elaboration", "manual", "filtered out", "final")


def stage_counts(checklist: Checklist) -> dict[str, dict[str, int]]:
    """Questions per stage and dimension, as in the paper's tables 5-6.

    ``seed``/``diversification``/``elaboration``/``manual`` count every question of that
    origin (before filtering); ``filtered out`` counts the removed ones; ``final`` the kept ones,
    so that final = seed + diversification + elaboration + manual - filtered out.
    """
    out: dict[str, dict[str, int]] = {}
    for dim in checklist.dimensions:
        counts = dict.fromkeys(STAGES, 0)
        for _, q in dim.questions():
            counts[q.origin] += 1
            counts["final" if q.kept else "filtered out"] += 1
        out[dim.name] = counts
    return out


_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "`": "'"})


def normalise_question(text: str) -> str:
    """A question's identity for matching: case, spacing, quotes, markup, list markers and end punctuation ignored.

    The remove-only filter uses it to decide whether a question the judge returned is one of
    the pool (kept) or new/rewritten (rejected); any change of words makes it a different question.
    """
    t = unicodedata.normalize("NFKC", text).translate(_QUOTES).lower()
    t = re.sub(r"^\s*(?:[-*•]+|q?\d+(?:[-.]\d+)*[.):]?|[a-z][.)])\s+", "", t)
    t = re.sub(r"[*_`\"]", "", t)
    t = " ".join(t.split())
    return t.strip(" .?!:;,'")
