"""The run's answer format (``--answer-format free|json|auto``): decided once per run, recorded with its reason.

A method says what its answers look like (:meth:`assay.methods.base.Method.answer_schema`); a judge says whether
it enforces a schema (:attr:`assay.judges.base.Judge.supports_schema`, probed once per run for an endpoint). This
module only combines the two: :func:`choose` is pure, :func:`decide` adds the probe. Whatever it decides goes into
the manifest (``answer_format``), the run's notes where it is not what was asked, and each judgment's trace.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from assay.errors import ConfigError
from assay.judges.ask import ask
from assay.judges.base import Judge, Request, Response
from assay.judges.middleware import ManagedJudge, RetryPolicy
from assay.methods.base import Method

ANSWER_FORMATS = ("free", "json", "auto")


@dataclass(frozen=True)
class AnswerFormat:
    """What a run's answers look like, and why.

    Attributes:
        asked: ``free``, ``json`` or ``auto`` (what the user asked for; part of the run's fingerprint).
        used: ``json`` (requests carry the method's schemas, which the judge enforces) or ``free``.
        reason: Why ``used`` follows from ``asked``, in words.
        judge_schema: Whether the judge enforces schemas (None: not asked, the method had no use for it).
        judge_reason: How that was decided (a probe, an option, the backend).
        fallback: True when ``json`` was wanted but the judge cannot enforce a schema (recorded as a note).
    """

    asked: str
    used: str
    reason: str
    judge_schema: bool | None = None
    judge_reason: str | None = None
    fallback: bool = False

    def record(self) -> dict[str, Any]:
        """The manifest's ``answer_format`` entry."""
        return asdict(self)


def check_asked(asked: str) -> str:
    """``asked`` if it is an answer format, else a clear error (before any judge is loaded)."""
    if asked not in ANSWER_FORMATS:
        raise ConfigError(f"--answer-format must be one of {', '.join(ANSWER_FORMATS)}, not {asked!r}")
    return asked


def wants_schema(asked: str, method: Method) -> bool:
    """Whether the run would use the method's schemas if the judge enforces them (and so must ask the judge)."""
    if asked == "free" or not method.schema_stages:
        return False
    return asked == "json" or method.free_text_reason() is None


def choose(asked: str, method: Method, judge_schema: bool | None, judge_reason: str | None = None) -> AnswerFormat:
    """The answer format a run uses (pure).

    ``json`` where it is asked (``json``, or ``auto`` when the method's configuration does not prescribe free text,
    :meth:`Method.free_text_reason`), the method has a schema, and the judge enforces it; otherwise ``free``, with
    the reason. A judge that cannot enforce a schema where one was wanted is a fallback (the caller notes it).
    """
    check_asked(asked)
    stages = ", ".join(method.schema_stages)
    if asked == "free":
        return AnswerFormat(asked, "free", "asked for free text (--answer-format free)")
    if not method.schema_stages:
        return AnswerFormat(asked, "free", f"{method.name} has no answer schema: its answers are free text")
    paper = method.free_text_reason()
    if asked == "auto" and paper is not None:
        return AnswerFormat(asked, "free", f"auto: {paper}", judge_schema, judge_reason)
    if not judge_schema:
        why = judge_reason or "the backend has no way to enforce one"
        return AnswerFormat(asked, "free", f"the judge does not enforce JSON schemas ({why}): {method.name} "
                                           "answers in free text instead, read by its free-text reader",
                            judge_schema, judge_reason, fallback=True)
    lead = "asked for json" if asked == "json" else "auto: the judge enforces JSON schemas"
    extra = f"; {paper}, overridden by --answer-format json" if paper and asked == "json" else ""
    return AnswerFormat(asked, "json", f"{lead} ({judge_reason or 'backend'}); {method.name}'s {stages} answers "
                                       f"are decoded under its schema{extra}", judge_schema, judge_reason)


async def decide(asked: str, method: Method, judge: Judge, *, recorded: dict[str, Any] | None = None,
                 retry: RetryPolicy | None = None) -> AnswerFormat:
    """:func:`choose` after asking the judge, once, whether it enforces a schema (only when the method would use one).

    An endpoint is probed through ``detect_schema`` with the run's retry policy, as the log-probability probe is
    (a 503 is retried, never read as "no"); the probe is no judgment's call (no cache, its own ledger). A resumed
    run adopts the answer ``recorded`` in its manifest.
    """
    if not wants_schema(asked, method):
        return choose(asked, method, None)
    detect = getattr(judge, "detect_schema", None)
    if detect is not None:
        known = recorded.get("judge_schema") if recorded else None
        prober = ManagedJudge(judge, retry=retry)

        async def send(request: Request) -> Response:
            return (await ask(prober, request, stage="capability")).response

        await detect(known, send=send)
    return choose(asked, method, judge.supports_schema, judge.schema_reason)
