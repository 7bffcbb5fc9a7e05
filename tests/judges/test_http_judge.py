"""The openai judge and its middleware against a real HTTP server on 127.0.0.1, scripted to misbehave."""

from __future__ import annotations

import email.utils
import os
import subprocess
import sys
import time

import pytest

from assay.errors import FatalJudgeError, JudgeError
from assay.judges.base import Request
from assay.judges.middleware import ManagedJudge, RetryPolicy
from assay.judges.openai import OpenAIJudge, retry_after_seconds
from assay.run.store import RunStore
from assay.testing import Behaviour, FakeOpenAIServer

FAST = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=2.0, timeout_s=1.0)
REQ = Request.chat("Rate it.", max_tokens=4)


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def managed(server: FakeOpenAIServer, retry: RetryPolicy = FAST) -> ManagedJudge:
    return ManagedJudge(OpenAIJudge("fake-model", server.url, logprobs=False), retry=retry)


async def test_plain_answer_and_usage(server):
    judge = managed(server)
    resp = await judge.generate(REQ, stage="score")
    assert resp.text == "3"
    assert resp.prompt_tokens == 10 and resp.completion_tokens == 1
    assert judge.ledger.by_stage["score"].calls == 1
    assert server.requests[0]["messages"][0]["content"] == "Rate it."


async def test_the_body_is_utf8_json_and_the_server_reads_the_prompt_as_sent(server):
    """The body is encoded by pydantic-core (UTF-8, not ASCII escapes): any text arrives as written; a lone surrogate
    (a text decoded from broken JSON) as its escape, through json.dumps."""
    judge = managed(server)
    for text in ("Rate it: café « ‹‹‹ » “quoted” \u2028 漢字 😀 \\ \"\n\ttab", "broken \ud83d pair"):
        resp = await judge.generate(Request.chat(text, max_tokens=8, stop=("\n\n",)), stage="score")
        assert resp.text == "3"
        assert server.requests[-1]["messages"][0]["content"] == text and server.requests[-1]["stop"] == ["\n\n"]
    await judge.aclose()


@pytest.mark.parametrize("status", [429, 503])
async def test_rate_limit_honours_retry_after(server, status):
    server.enqueue(Behaviour(kind="error", status=status, retry_after=0.6))
    judge = managed(server)
    start = time.perf_counter()
    resp = await judge.generate(REQ)
    waited = time.perf_counter() - start
    assert resp.text == "3"
    assert len(server.requests) == 2
    assert waited >= 0.6, "the Retry-After header was not honoured"
    assert judge.ledger.retries == 1


async def test_server_errors_are_retried_then_succeed(server):
    server.enqueue(Behaviour(kind="error", status=500), Behaviour(kind="error", status=503))
    judge = managed(server)
    assert (await judge.generate(REQ)).text == "3"
    assert len(server.requests) == 3 and judge.ledger.retries == 2


async def test_slow_answer_times_out_and_is_retried(server):
    server.enqueue(Behaviour(kind="slow", delay_s=2.5))
    judge = managed(server, RetryPolicy(max_attempts=3, base_delay_s=0.01, timeout_s=0.5))
    assert (await judge.generate(REQ)).text == "3"
    assert judge.ledger.retries >= 1


async def test_dropped_connection_is_retried(server):
    server.enqueue(Behaviour(kind="drop"))
    judge = managed(server)
    assert (await judge.generate(REQ)).text == "3"
    assert len(server.requests) == 2


async def test_malformed_body_is_retried(server):
    server.enqueue(Behaviour(kind="malformed"))
    judge = managed(server)
    assert (await judge.generate(REQ)).text == "3"
    assert len(server.requests) == 2


async def test_gives_up_after_max_attempts(server):
    server.enqueue(*[Behaviour(kind="error", status=500)] * 4)
    judge = managed(server)
    with pytest.raises(JudgeError, match="gave up after 4 attempts"):
        await judge.generate(REQ)
    assert len(server.requests) == 4 and judge.ledger.failures == 1


@pytest.mark.parametrize(("status", "words"), [(401, "credentials"), (403, "credentials"), (404, "not found")])
async def test_auth_and_unknown_model_stop_without_retry(server, status, words):
    server.enqueue(Behaviour(kind="error", status=status))
    judge = managed(server)
    with pytest.raises(FatalJudgeError, match=words):
        await judge.generate(REQ)
    assert len(server.requests) == 1


def test_retry_after_forms():
    now = 1_700_000_000.0
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    assert retry_after_seconds({"retry-after": email.utils.formatdate(now + 30, usegmt=True)}, now=now) == 30.0
    assert retry_after_seconds({"retry-after": email.utils.formatdate(now - 30, usegmt=True)}, now=now) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


@pytest.mark.parametrize(("status", "words"), [(401, "refused the credentials (HTTP 401); check OPENAI_API_KEY"),
                                               (404, "model or endpoint not found (HTTP 404)")])
def test_auth_and_unknown_model_stop_a_cli_run_with_one_clear_line(tmp_path, status, words):
    """A fatal judge error mid-run: exit 1, one message, no traceback, no retry, no judgment stored."""
    env = os.environ | {"OPENAI_API_KEY": "sk-wrong"}
    with FakeOpenAIServer(default=Behaviour(kind="error", status=status)) as srv:
        res = subprocess.run(
            [sys.executable, "-m", "assay.cli", "run", "--dataset", "qags-xsum", "--limit", "3", "--judge",
             f"openai:fake-model@{srv.url}", "--judge-opt", "logprobs=false", "--concurrency", "1",
             "--run-dir", str(tmp_path / "run"), "-q"], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 1
    assert words in " ".join(res.stderr.split()) and "Traceback" not in res.stderr
    assert len(srv.requests) == 1
    with RunStore(tmp_path / "run", readonly=True) as store:
        assert len(store.judgments()) == 0


async def test_payload_carries_sampling_settings_and_logprobs(server):
    judge = managed(server)
    req = Request.chat("x", temperature=0.7, top_p=0.9, max_tokens=5, n=3, seed=11, stop=("\n",), top_logprobs=5,
                       json_mode=True)
    resp = await judge.generate(req)
    body = server.requests[0]
    assert body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["n"] == 3 and body["seed"] == 11
    assert body["stop"] == ["\n"] and body["logprobs"] is True and body["top_logprobs"] == 5
    assert body["response_format"] == {"type": "json_object"}
    assert len(resp.choices) == 3
    assert resp.choices[0].logprobs and len(resp.choices[0].logprobs[0].top) == 5


async def test_logprob_probe_is_retried_through_the_given_sender(server):
    server.enqueue(Behaviour(kind="error", status=503), Behaviour(kind="drop"))
    judge = OpenAIJudge("fake-model", server.url)
    assert await judge.detect_logprobs(send=ManagedJudge(judge, retry=FAST).generate) is True
    assert len(server.requests) == 3 and "answered with log-probabilities" in judge.logprobs_reason


@pytest.mark.parametrize(("status", "message", "verdict"), [
    (400, "logprobs are not supported", False), (422, "unsupported parameter: top_logprobs", False),
    (400, "max_tokens too large", None), (404, "no such model (logprobs)", None)])
async def test_only_a_4xx_naming_logprobs_is_a_definitive_no(server, status, message, verdict):
    server.enqueue(Behaviour(kind="error", status=status, message=message))
    judge = OpenAIJudge("fake-model", server.url)
    if verdict is None:
        with pytest.raises(FatalJudgeError):
            await judge.detect_logprobs()
    else:
        assert await judge.detect_logprobs() is verdict
        assert "refused log-probabilities" in judge.logprobs_reason


async def test_logprob_capability_is_detected(server):
    judge = OpenAIJudge("fake-model", server.url)
    assert await judge.detect_logprobs() is True
    assert server.requests[0]["logprobs"] is True


def test_api_key_never_in_identity(monkeypatch, server):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-test-key")
    judge = OpenAIJudge("fake-model", server.url)
    assert "sk-secret" not in judge.identity.model_dump_json()
