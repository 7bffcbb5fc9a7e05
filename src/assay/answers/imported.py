"""Answers a judge wrote outside assay, as a live call would have returned them (pure): texts and top-token
log-probabilities read from a record's fields, with errors naming file, record and field.

Each method's import reader (:class:`assay.methods.base.AnswerReader`) takes its answers through these, so that
``assay import`` reads an answer with the live run's own reader.
"""

from __future__ import annotations

from typing import Any

from assay.errors import InputError
from assay.judges.base import Choice, Response, TokenLogprobs, TopToken


def plain(value: Any) -> Any:
    """A Parquet cell as plain Python (numpy arrays become lists)."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) and not isinstance(value, str | bytes) else value


def answer_texts(rec: dict[str, Any], name: str, *, file: str, record: Any, many: bool) -> list[str]:
    """The judge's answer(s) in a record: one text, or (``many``) a text or a list of texts.

    Raises:
        InputError: The field is missing, or holds something other than text (naming file, record, field).
    """
    if name not in rec or rec[name] is None:
        raise InputError("missing field (named by --answers)", file=file, record=record, field=name)
    value = plain(rec[name])
    if isinstance(value, str):
        return [value]
    if many and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    want = "a text or a non-empty list of texts" if many else "one answer text"
    raise InputError(f"expected {want}, got {type(value).__name__}", file=file, record=record, field=name)


def parse_logprobs(value: Any, *, file: str, record: Any, name: str) -> list[TokenLogprobs]:
    """Top-token log-probabilities in OpenAI's shape, as assay's token table.

    Accepted: ``choices[0].logprobs.content`` of a chat completion, a list of
    ``{"token", "logprob", "top_logprobs": [{"token", "logprob"}, ...]}``, or the ``logprobs`` object
    holding it under ``content``.

    Raises:
        InputError: Anything else (naming file, record and field, and the first bad position).
    """
    value = plain(value)
    if isinstance(value, dict) and "content" in value:
        value = plain(value["content"])
    if not isinstance(value, list) or not value:
        raise InputError("expected OpenAI's logprobs.content: a non-empty list of {token, logprob, top_logprobs}",
                         file=file, record=record, field=name)
    out = []
    for k, pos in enumerate(value):
        pos = plain(pos)
        try:
            tops = [TopToken(token=t["token"], logprob=float(t["logprob"])) for t in plain(pos.get("top_logprobs"))
                    or []]
            out.append(TokenLogprobs(token=pos["token"], logprob=float(pos["logprob"]), top=tops))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise InputError(f"position {k}: expected {{token, logprob, top_logprobs: [{{token, logprob}}]}} "
                             f"({type(exc).__name__}: {exc})", file=file, record=record, field=name) from None
    return out


def as_response(texts: list[str], logprobs: list[TokenLogprobs] | None = None) -> Response:
    """Answers as the response a live call would have returned (the readers take responses)."""
    return Response(choices=[Choice(text=t, logprobs=logprobs if i == 0 else None) for i, t in enumerate(texts)])
