"""A judge that answers from a script: for testing the logic around the model, never for scores."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

from assay.judges.base import (
    Choice,
    Judge,
    JudgeIdentity,
    Request,
    Response,
    TokenLogprobs,
    TopToken,
)

Answer = str | Response
Responder = Callable[[Request], Answer]


class ScriptedJudge(Judge):
    """Answers each request from a queue of texts/responses, or from a function of the request.

    Every request it receives is kept in ``requests`` so tests can assert on prompts.

    Args:
        script: A list of answers consumed in order, or a function from request to answer.
        logprobs: Whether it claims log-probability support.
        name: Model name in its identity (distinct names give distinct cache keys).
        schema: Whether it claims to enforce JSON schemas (``--answer-format auto`` then uses json).
    """

    default_concurrency = 4

    def __init__(self, script: list[Answer] | Responder | None = None, *,
                 logprobs: bool = False, name: str = "scripted", schema: bool = False) -> None:
        self._queue: deque[Answer] = deque()
        self._fn: Responder | None = None
        if callable(script):
            self._fn = script
        elif script:
            self._queue.extend(script)
        self.supports_logprobs = logprobs
        self.supports_schema = schema
        self.schema_reason = "set by the scripted judge's schema argument"
        self.identity = JudgeIdentity(backend="scripted", model=name)
        self.requests: list[Request] = []

    def enqueue(self, *answers: Answer) -> None:
        """Add answers to the end of the queue."""
        self._queue.extend(answers)

    async def generate(self, request: Request) -> Response:
        self.requests.append(request)
        choices: list[Choice] = []
        for _ in range(request.n):
            if self._fn is not None:
                answer = self._fn(request)
            elif self._queue:
                answer = self._queue.popleft()
            else:
                raise AssertionError(f"scripted judge ran out of answers at request {len(self.requests)}")
            if isinstance(answer, Response):
                return answer
            choices.append(Choice(text=answer, finish_reason="stop"))
        words = sum(len(m.content.split()) for m in request.messages)
        return Response(choices=choices, prompt_tokens=words,
                        completion_tokens=sum(len(c.text.split()) for c in choices), model="scripted")


def logprob_response(text: str, distributions: list[dict[str, float]]) -> Response:
    """A response whose generated positions carry the given token probability tables.

    Args:
        text: The completion text.
        distributions: One ``{token: probability}`` table per generated position; the most
            probable token is taken as the generated one.
    """
    positions = []
    for table in distributions:
        top = sorted(table.items(), key=lambda kv: -kv[1])
        positions.append(TokenLogprobs(
            token=top[0][0], logprob=math.log(top[0][1]),
            top=[TopToken(token=t, logprob=math.log(p)) for t, p in top],
        ))
    return Response(choices=[Choice(text=text, logprobs=positions, finish_reason="stop")], model="scripted")
