"""The shared vocabulary: samples, dimensions, judgments and usage, as plain data with no I/O."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Scale(BaseModel):
    """A rating scale: the closed range [low, high], integer-valued (Likert) or continuous.

    Attributes:
        low: The lowest value on the scale.
        high: The highest value on the scale.
        integer: Whether only whole numbers are valid ratings (a Likert scale).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    low: float
    high: float
    integer: bool = True

    @model_validator(mode="after")
    def _ordered(self) -> Scale:
        if not self.high > self.low:
            raise ValueError(f"scale high ({self.high}) must be greater than low ({self.low})")
        return self

    def values(self) -> list[int]:
        """The valid integer ratings of a Likert scale, lowest first."""
        if not self.integer:
            raise ValueError("a continuous scale has no finite list of values")
        return list(range(math.ceil(self.low), math.floor(self.high) + 1))

    def contains(self, value: float) -> bool:
        """Whether ``value`` is a valid rating on this scale."""
        if math.isnan(value) or not self.low <= value <= self.high:
            return False
        return not self.integer or float(value).is_integer()

    def label(self) -> str:
        """The scale as prompts print it, e.g. ``1-5``."""
        return f"{_fmt(self.low)}-{_fmt(self.high)}"


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


class Dimension(BaseModel):
    """A quality dimension to judge: its name, what it means, and the scale of its ratings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    definition: str
    scale: Scale = Scale(low=1, high=5)


class Sample(BaseModel):
    """One output to judge, with its input and, where known, the human ratings.

    Attributes:
        id: Unique id within the dataset.
        doc_id: The source (article, dialogue context) the output was written for;
            sample-level correlation groups by it.
        system_id: The system that wrote the output; system-level correlation groups by it.
        source: The input text (article, dialogue history, prompt).
        output: The generated text under evaluation.
        reference: A human reference output, if any.
        context: Extra grounding (a knowledge fact, a persona), if any.
        human: Mean human rating per dimension.
        annotators: Per-annotator ratings per dimension, where the dataset keeps them.
        metadata: Anything else the loader wants to keep.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    doc_id: str
    system_id: str = ""
    source: str = ""
    output: str
    reference: str | None = None
    context: str | None = None
    human: dict[str, float] = Field(default_factory=dict)
    annotators: dict[str, list[float]] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Usage(BaseModel):
    """Calls, tokens, latency and cost, summable across calls and stages."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in type(self).model_fields})

    def add(self, other: Usage) -> None:
        """Add ``other`` into this usage in place.

        Every judge call is added twice (run-wide and to its judgment), so the sums are written to the fields'
        values directly: pydantic's ``setattr`` costs five times as much and checks nothing a sum of two valid
        usages could break.
        """
        mine, theirs = self.__dict__, other.__dict__
        for k in _USAGE_FIELDS:
            mine[k] += theirs[k]


_USAGE_FIELDS = tuple(Usage.model_fields)


Status = Literal["scored", "parse_failed", "failed"]


class Judgment(BaseModel):
    """The result of one method on one (sample, dimension): a score or None, always with its trace.

    ``score`` is None exactly when the method could not produce one; ``error`` then says why.
    The trace holds everything needed to audit or re-score the judgment offline: raw answers,
    per-question or per-unit decisions, distributions, weights, parse failures and fallbacks.

    ``status`` tells the two kinds of missing score apart, because they mean different things:
    ``parse_failed`` (an answer came back but could not be read: a fact about the judge, final)
    and ``failed`` (the judge calls themselves failed after all retries: a fact about the
    transport, retried when the run is resumed). Left out, it follows from ``score``: ``scored``
    or ``parse_failed``; a failed unit must say so.
    """

    model_config = ConfigDict(extra="forbid")

    sample_id: str
    dimension: str
    method: str
    judge: str
    score: float | None
    trace: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Usage] = Field(default_factory=dict)
    error: str | None = None
    status: Status | None = None

    @model_validator(mode="after")
    def _score_or_error(self) -> Judgment:
        if self.score is None and not self.error:
            raise ValueError("a judgment without a score must say why in `error`")
        if self.score is not None and math.isnan(self.score):
            raise ValueError("a score may not be NaN; use None with an error")
        if self.status is None:
            self.status = "scored" if self.score is not None else "parse_failed"
        elif (self.status == "scored") != (self.score is not None):
            raise ValueError(f"a judgment with status {self.status!r} "
                             f"{'needs' if self.status == 'scored' else 'may not have'} a score")
        return self

    def total_usage(self) -> Usage:
        """Usage summed over all stages."""
        total = Usage()
        for u in self.usage.values():
            total.add(u)
        return total
