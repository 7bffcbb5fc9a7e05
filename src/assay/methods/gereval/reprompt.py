"""Reading a JSON answer that passes a schema: GER-Eval's reader for :func:`assay.judges.ask.ask`.

GER-Eval (appendix A.3.1) validates every structured answer and re-prompts a malformed one up to
three times before discarding it. The re-ask loop is :func:`assay.judges.ask.ask`'s (the judge sees its
invalid answers and their validation errors, and is asked for the corrected JSON only); this module gives it
the reader (:func:`json_reader`) and the follow-up wording (:func:`reask_prompt`). Every call is kept in the
call records, so a discarded answer is data (in the rubric's provenance or the judgment's trace), never a
silent default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from assay.answers.parsing import extract_json
from assay.judges.ask import Asked, Read, Reader, ask
from assay.judges.base import Request, Response

if TYPE_CHECKING:
    from assay.judges.middleware import ManagedJudge

T = TypeVar("T")

#: GER-Eval's re-asks after an invalid answer (the paper: three).
DEFAULT_REASKS = 3


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
    judged text) is not taken (:func:`assay.answers.parsing.extract_json`).
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


def json_reader(validate: Callable[[Any], T]) -> Reader:
    """A reader for :func:`~assay.judges.ask.ask`: the judge's own JSON, validated by ``validate``.

    The prompt the answer must not echo is the request's user turns (its earlier answers left out).
    """

    def read(response: Response, request: Request) -> Read[T]:
        value, error = check_answer(response.text, validate, prompt_text(request))
        return Read(value, error)

    return read


async def ask_json(judge: ManagedJudge, request: Request, validate: Callable[[Any], T], *, stage: str,
                   reasks: int = DEFAULT_REASKS) -> Asked[T]:
    """:func:`~assay.judges.ask.ask` with :func:`json_reader` and GER-Eval's follow-up wording."""
    return await ask(judge, request, stage=stage, read=json_reader(validate), reasks=reasks,
                     reask_message=reask_prompt)
