"""An endpoint that refuses connections, or cuts an answer short: said plainly, and given up on quickly."""

from __future__ import annotations

import socket
import time

import pytest

from assay.errors import FatalJudgeError, RefusedJudgeError, TransientJudgeError
from assay.judges import JudgeIdentity, ManagedJudge, Request, Response, RetryPolicy
from assay.judges.base import Choice, Judge
from assay.judges.openai import OpenAIJudge
from assay.testing import Behaviour, FakeOpenAIServer


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Starting(Judge):
    """Refuses ``refusals`` connections (a server still starting; forever: an absent one), then answers."""

    identity = JudgeIdentity(backend="test", model="starting")

    def __init__(self, refusals: float) -> None:
        self.refusals, self.calls = refusals, 0

    async def generate(self, request: Request) -> Response:
        self.calls += 1
        if self.calls <= self.refusals:
            raise RefusedJudgeError("cannot reach http://127.0.0.1:1/v1: connection refused")
        return Response(choices=[Choice(text="ok")], model="starting")


async def test_an_absent_endpoint_is_given_up_after_the_refusal_budget_not_the_attempts():
    statuses: list[str] = []
    judge = Starting(float("inf"))
    # many attempts and long backoffs allowed: only the refusal budget can end this quickly
    managed = ManagedJudge(judge, retry=RetryPolicy(max_attempts=1000, base_delay_s=0.05, max_delay_s=60,
                                                    refused_s=0.3), on_retry=statuses.append)
    started = time.monotonic()
    with pytest.raises(FatalJudgeError, match=r"connection refused; refused for 0.3 s, giving up") as caught:
        await managed.generate(Request.chat("x"))
    assert time.monotonic() - started < 10
    assert caught.value.attempts == judge.calls >= 2  # retried within the budget, not given up at once
    # the first refusal says at once what is happening and until when; later refusals add no line each
    assert len(statuses) == 1 and statuses[0].startswith("retrying until ")
    assert "0.3 s for refused connections" in statuses[0] and "connection refused" in statuses[0]
    # once the budget is spent, the next call is given up on at its first refusal
    calls = judge.calls
    with pytest.raises(FatalJudgeError):
        await managed.generate(Request.chat("y"))
    assert judge.calls == calls + 1


async def test_a_starting_server_is_waited_for_and_an_answer_resets_the_budget():
    judge = Starting(2)
    managed = ManagedJudge(judge, retry=RetryPolicy(max_attempts=1, base_delay_s=0.01, refused_s=5))
    assert (await managed.generate(Request.chat("x"))).text == "ok"  # refusals use no attempt of max_attempts
    assert judge.calls == 3 and managed.ledger.failures == 0
    assert managed._refused_since is None


async def test_a_zero_budget_gives_up_at_the_first_refusal():
    judge = Starting(float("inf"))
    managed = ManagedJudge(judge, retry=RetryPolicy(refused_s=0))
    with pytest.raises(FatalJudgeError, match="refused for 0 s"):
        await managed.generate(Request.chat("x"))
    assert judge.calls == 1


async def test_a_closed_port_is_a_refusal_of_the_openai_judge():
    port = _closed_port()
    judge = OpenAIJudge("m", f"http://127.0.0.1:{port}/v1", logprobs=False)
    try:
        with pytest.raises(RefusedJudgeError, match=f"cannot reach http://127.0.0.1:{port}/v1: connection refused"):
            await judge.generate(Request.chat("x"))
    finally:
        await judge.aclose()


async def test_a_body_shorter_than_its_content_length_says_so():
    with FakeOpenAIServer() as srv:
        srv.enqueue(Behaviour(kind="truncated", text="a long enough answer to cut in half"))
        judge = OpenAIJudge("m", srv.url, logprobs=False)
        try:
            with pytest.raises(TransientJudgeError) as caught:
                await judge.generate(Request.chat("x"))
            assert (await judge.generate(Request.chat("x"))).text == "3"  # retried, it answers
        finally:
            await judge.aclose()
    message = str(caught.value)
    assert not isinstance(caught.value, RefusedJudgeError)
    assert "closed the connection mid-answer" in message and "shorter than its Content-Length" in message
    assert "Not enough data" not in message and "400" not in message


def test_the_cli_gives_up_on_a_refusing_endpoint_in_one_line(cli, tmp_path):
    port = _closed_port()
    code, _out, err = cli("run", "--judge", f"openai:m@http://127.0.0.1:{port}/v1", "--limit", "2", "-q",
                          "--refused-wait", "0.2", "--run-dir", str(tmp_path / "run"))
    assert code == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "connection refused" in lines[0] and "refused for 0.2 s, giving up" in lines[0]
    assert "--refused-wait" in lines[0]
