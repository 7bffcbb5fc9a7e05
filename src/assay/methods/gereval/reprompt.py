"""Asking for JSON that passes a schema: validate each answer, re-ask with the error, then give up on record.

GER-Eval (appendix A.3.1) validates every structured answer and re-prompts a malformed one up to
three times before discarding it. Here a re-ask continues the conversation: the judge sees its
invalid answers and their validation errors, and is asked for the corrected JSON only. Every attempt is
kept, so a discarded answer is data (in the rubric's provenance or the judgment's trace), never
a silent default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from assay.judges.base import Message, Request
from assay.parsing import extract_json

T = TypeVar("T")

DEFAULT_REASKS = 3
ECHO_CHARS = 1000


@dataclass(frozen=True)
class Attempt:
    """One answer and why it was rejected (None when it passed)."""

    text: str
    error: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "error": self.error}


@dataclass
class Asked(Generic[T]):
    """The outcome of asking: the validated value (or None) and every attempt in order."""

    value: T | None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.value is not None

    @property
    def reasks(self) -> int:
        """How many times the judge was asked again after an invalid answer."""
        return max(0, len(self.attempts) - 1)

    @property
    def error(self) -> str | None:
        """The last validation error when every attempt failed."""
        return None if self.ok or not self.attempts else self.attempts[-1].error


def describe_error(exc: Exception) -> str:
    """A validation error as one short sentence a judge can act on."""
    if isinstance(exc, ValidationError):
        parts = []
        for e in exc.errors()[:3]:
            where = ".".join(map(str, e["loc"]))
            parts.append(f"{where}: {e['msg']}" if where else e["msg"])
        return "; ".join(parts)
    return str(exc)


def check_answer(text: str, validate: Callable[[Any], T], prompt: str | None = None) -> tuple[T | None, str | None]:
    """Extract the JSON of the judge's own answer and validate it; return (value, None) or (None, error).

    With ``prompt``, JSON on lines that echo it (the format example, a JSON object inside the
    judged text) is not taken (:func:`assay.parsing.extract_json`).
    """
    parsed = extract_json(text, prompt)
    if not parsed.ok:
        echoed = parsed.error.split(": ", 1)[1] if parsed.error and ": " in parsed.error else None
        return None, "the answer contains no JSON object" + (f" of its own ({echoed})" if echoed else "")
    try:
        return validate(parsed.value), None
    except (ValueError, TypeError, ValidationError) as exc:
        return None, describe_error(exc)


def prompt_text(request: Request) -> str:
    """What the judge was asked, its own earlier answers left out: the text an answer must not echo."""
    return "\n".join(m.content for m in request.messages if m.role != "assistant")


def reask_prompt(error: str) -> str:
    """The follow-up message after an invalid answer."""
    return (f"That answer could not be used: {error}. "
            "Reply again with only the corrected JSON object, in the format asked for, and nothing else.")


def follow_up(request: Request, answer: str, error: str) -> Request:
    """The request that re-asks: the conversation so far, the invalid answer, then the error.

    An echoed answer longer than :data:`ECHO_CHARS` is cut (marked ``[...]``), which keeps the
    prompt bounded when a judge rambles; the full answer stays in the recorded attempts.
    """
    echoed = answer if len(answer) <= ECHO_CHARS else answer[:ECHO_CHARS].rstrip() + " [...]"
    messages = (*request.messages, Message(role="assistant", content=echoed),
                Message(role="user", content=reask_prompt(error)))
    return request.model_copy(update={"messages": messages})


async def ask_json(judge: Any, request: Request, validate: Callable[[Any], T], *, stage: str,
                   reasks: int = DEFAULT_REASKS, on_response: Callable[[str, Any], None] | None = None) -> Asked[T]:
    """Ask for a JSON answer, re-asking up to ``reasks`` times with the validation error.

    Args:
        judge: A :class:`ManagedJudge` (anything with ``await generate(request, stage=...)``).
        request: The first request.
        validate: Turns the decoded JSON into the value wanted, raising ValueError (or a pydantic
            ValidationError) with a message for the judge when it does not fit the schema.
        stage: Usage stage of the first call; re-asks are accounted under ``<stage>-reask``.
        reasks: Re-asks after the first answer (the paper: three).
        on_response: Called with (stage, response) after every call, e.g. for per-judgment usage.

    Returns:
        The validated value, or None with every attempt and its error kept.
    """
    outcome: Asked[T] = Asked(value=None)
    current = request
    for i in range(reasks + 1):
        call_stage = stage if i == 0 else f"{stage}-reask"
        response = await judge.generate(current, stage=call_stage)
        if on_response is not None:
            on_response(call_stage, response)
        value, error = check_answer(response.text, validate, prompt_text(current))
        outcome.attempts.append(Attempt(text=response.text, error=error))
        if error is None:
            outcome.value = value
            return outcome
        # The conversation accumulates, so every re-ask is a new request even when a greedy judge
        # repeats itself (re-sending the same messages would only hit the call cache).
        current = follow_up(current, response.text, error)
    return outcome
