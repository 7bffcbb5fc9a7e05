"""G-Eval's build step: evaluation steps written by the judge, their parsing, and the steps file a user can edit."""

from __future__ import annotations

import re
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from assay.common.files import parse_yaml
from assay.common.hashing import content_hash
from assay.datasets import Dataset
from assay.datasets.catalog import DatasetInfo
from assay.errors import ConfigError
from assay.judges.ask import Read, ask
from assay.judges.base import Request, Response
from assay.judges.middleware import ManagedJudge
from assay.methods.base import Build, Built
from assay.methods.geval.prompts import Criteria, criterion_block, task_criteria
from assay.types import Dimension

STEPS_FORMAT = "assay.geval.steps/1"
MAX_STEPS = 10


#: The line a steps prompt ends with, after which the judge writes the steps (the paper's auto-CoT cue).
STEPS_CUE = "Evaluation Steps:"


def build_steps_prompt(dimension: Dimension, criteria: Criteria, info: DatasetInfo) -> str:
    """The auto-CoT prompt: only the task introduction and the criteria, then "Evaluation Steps:".

    The paper feeds exactly these two parts and lets the model continue after a line
    "Evaluation Steps:"; a chat model is also told what to write there.
    """
    return (
        f"{criteria.introduction}\n\n{criterion_block(dimension, criteria)}\n\n"
        f"Write the evaluation steps a careful rater should follow to rate a {info.output_name} for "
        f"{dimension.name.replace('_', ' ')}: a numbered list of at most {MAX_STEPS} short steps, the last "
        f"of which assigns the score on the {dimension.scale.label()} scale from the criteria above. "
        f"Write only the list.\n\n{STEPS_CUE}"
    )


_NUMBERED = re.compile(r"^\s*(?:step\s*)?(\d{1,2})\s*[.):]\s*(.*\S)?\s*$", re.IGNORECASE)


_BULLET = re.compile(r"^\s*[-*•]\s+(.*\S)\s*$")


_STOP = re.compile(r"^\s*(?:evaluation\s+form|evaluation\s+criteria|[\w ]{1,30}\s*\(\s*scores?\b)", re.IGNORECASE)


def parse_steps(text: str, *, truncated: bool = False) -> tuple[list[str], str | None]:
    """The steps of a judge's "Evaluation Steps" answer, cleaned and renumbered.

    Numbered lines (``1.``, ``2)``, ``Step 3:``) start steps, unnumbered lines continue the
    current one; without numbers, bulleted lines are the steps. Reading stops at a line that
    starts another section of the form. A last step cut off by the token limit is dropped, and
    so are verbatim repeats (a weak judge loops); the raw answer is kept in the steps file.

    Returns:
        The steps (at most ``MAX_STEPS``) and None, or an empty list and the reason.
    """
    steps: list[str] = []
    numbered = False
    for line in text.splitlines():
        if _STOP.match(line) and steps:
            break
        m = _NUMBERED.match(line)
        b = _BULLET.match(line)
        if m and m.group(2):
            steps.append(m.group(2))
            numbered = True
        elif b and not numbered:
            steps.append(b.group(1))
        elif line.strip() and steps:
            steps[-1] = f"{steps[-1]} {line.strip()}"
    if truncated and len(steps) > 1:
        steps = steps[:-1]
    cleaned = [" ".join(s.split()) for s in steps if s.strip()]
    steps = [s for i, s in enumerate(cleaned) if s not in cleaned[:i]][:MAX_STEPS]
    if not steps:
        return [], "no numbered or bulleted steps in the answer"
    return steps, None


def format_steps(steps: list[str]) -> str:
    """Steps as the prompt prints them: ``1. ...`` one per line."""
    return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))


def steps_entry(dimension: Dimension, criteria: Criteria, steps: str, *, written_by: dict[str, Any] | str,
                settings: dict[str, Any], raw: str | None = None) -> dict[str, Any]:
    """One dimension's entry of a steps file: the text, who wrote it, how, and hashes."""
    entry: dict[str, Any] = {
        "steps": steps,
        "sha256": content_hash(steps),
        "scale": dimension.scale.label(),
        "criteria_sha256": criteria.digest(),
        "criteria_source": criteria.source,
        "written_by": written_by,
        "settings": settings,
    }
    if raw is not None:
        entry["raw_answer"] = raw
    return entry


class _Literal(str):
    """A string YAML writes as a ``|`` block, so that steps stay readable and editable."""


yaml.SafeDumper.add_representer(
    _Literal, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", str(s), style="|"))


def steps_document(dataset: str, entries: dict[str, dict[str, Any]]) -> str:
    """A steps file (YAML): edit ``steps`` freely; the run records the hash of what it used."""
    body = {"format": STEPS_FORMAT, "dataset": dataset,
            "dimensions": {name: {k: (_Literal(v) if k in ("steps", "raw_answer") else v) for k, v in e.items()}
                           for name, e in entries.items()}}
    header = ("# G-Eval evaluation steps written by assay. Edit the `steps` text of a dimension freely and pass\n"
              "# the file back with --steps FILE; runs record the sha256 of the steps they used.\n")
    return header + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100)


def load_steps_document(text: str, origin: str) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """Read a steps file; returns its dataset name and entries (each with ``edited`` set).

    Raises:
        InputError: Not valid YAML (with its line).
        ConfigError: Not a steps file, or an entry without steps text.
    """
    data = parse_yaml(text, file=origin)
    if not isinstance(data, dict) or data.get("format") != STEPS_FORMAT or not isinstance(data.get("dimensions"), dict):
        raise ConfigError(f"{origin}: not a G-Eval steps file (expected format: {STEPS_FORMAT} and a "
                          "`dimensions` mapping); write one with `assay geval steps`")
    entries = {}
    for name, entry in data["dimensions"].items():
        steps = entry.get("steps") if isinstance(entry, dict) else None
        if not isinstance(steps, str) or not steps.strip():
            raise ConfigError(f"{origin}: dimension {name!r} has no `steps` text")
        steps = steps.strip()
        entries[str(name)] = {**entry, "steps": steps, "edited": content_hash(steps) != entry.get("sha256")}
    return data.get("dataset"), entries


async def generate_steps(judge: ManagedJudge, info: DatasetInfo, dimension: Dimension, *,
                         max_tokens: int) -> tuple[dict[str, Any] | None, str | None]:
    """Ask the judge for a dimension's evaluation steps (greedy, stage "steps").

    Returns:
        The steps-file entry, or None and the reason when the answer held no steps.
    """
    criteria = task_criteria(info, dimension)
    request = Request.chat(build_steps_prompt(dimension, criteria, info), temperature=0.0, max_tokens=max_tokens)
    asked = await ask(judge, request, stage="steps", read=read_steps)
    call = asked.calls[0]
    if not asked.ok:
        return None, f"{asked.error} (answer: {call.answer[:200]!r})"
    settings = {"temperature": 0.0, "max_tokens": max_tokens, "prompt_sha256": call.prompt_sha256}
    return steps_entry(dimension, criteria, format_steps(asked.value),
                       written_by=judge.identity.model_dump(mode="json"), settings=settings, raw=call.answer), None


def read_steps(response: Response, _: Request) -> Read[list[str]]:
    """The steps of the judge's answer, or why there are none (an answer cut at the token limit is suspect)."""
    choice = response.choices[0]
    steps, error = parse_steps(choice.text, truncated=choice.finish_reason == "length")
    return Read(steps, error)


#: G-Eval evaluation steps of a typical length (about 90 tokens: the released prompts' steps are 60-120).
TYPICAL_STEPS = (
    "1. Read the source text carefully and identify its main topic and the key points it makes.\n"
    "2. Read the text under evaluation and compare it with the source, noting what it keeps, adds or omits.\n"
    "3. Check how well the text meets the criterion, point by point, with examples from the text.\n"
    "4. Assign a score on the scale given, from the lowest for a text that fails the criterion to the highest "
    "for a text that meets it fully."
)


class StepsOptions(BaseModel):
    """Options of ``geval-steps``: the room for each dimension's steps (``assay geval steps --max-tokens``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_tokens: int = Field(default=256, ge=16)


def plan_steps(dataset: Dataset, dimensions: list[str] | None, opts: StepsOptions) -> Build:
    """G-Eval's evaluation steps for each dimension; the file text exists only when every dimension has steps."""
    dims = dataset.dimensions(dimensions)  # unknown names fail here

    async def build(judge: ManagedJudge) -> Built:
        entries, failures = {}, []
        for d in dims:
            entry, error = await generate_steps(judge, dataset.info, d, max_tokens=opts.max_tokens)
            if entry is None:
                failures.append(f"{judge.identity.label} wrote no usable steps for {d.name}: {error}")
            else:
                entries[d.name] = entry
        text = None if failures else steps_document(dataset.name, entries)
        return Built(entries, text, content_hash(text or ""), failures)

    return build
