"""The openai judge's hot path: chat calls over its own aiohttp session, with the SDK path's body and errors."""

from __future__ import annotations

import socket

import openai
import pytest

from assay.errors import FatalJudgeError, JudgeError, TransientJudgeError
from assay.judges.base import Request
from assay.judges.openai import OpenAIJudge, chat_url, refuses_logprobs, status_error, to_response
from assay.testing import Behaviour, FakeOpenAIServer

FULL = Request.chat("Rate it.", system="You judge.", temperature=0.7, top_p=0.9, max_tokens=5, n=2, seed=11,
                    stop=("\n", "END"), top_logprobs=3, json_mode=True)


@pytest.mark.parametrize(("status", "kind", "words"), [
    (400, FatalJudgeError, "request rejected (HTTP 400): scripted words"),
    (401, FatalJudgeError, "refused the credentials (HTTP 401)"),
    (403, FatalJudgeError, "refused the credentials (HTTP 403)"),
    (404, FatalJudgeError, "not found (HTTP 404) at URL: scripted words"),
    (422, FatalJudgeError, "request rejected (HTTP 422): scripted words"),
    (408, TransientJudgeError, "server error HTTP 408 from URL"),
    (409, TransientJudgeError, "server error HTTP 409 from URL"),
    (429, TransientJudgeError, "rate limited (HTTP 429): scripted words"),
    (500, TransientJudgeError, "server error HTTP 500 from URL"),
    (502, TransientJudgeError, "server error HTTP 502 from URL"),
    (503, TransientJudgeError, "server error HTTP 503 from URL"),
])
async def test_each_status_is_classified_like_the_sdk_path(status, kind, words):
    """One bare call (no middleware, so no retry): the class, the message and the server's Retry-After."""
    with FakeOpenAIServer() as srv:
        srv.enqueue(Behaviour(kind="error", status=status, message="scripted words", retry_after=1.5))
        judge = OpenAIJudge("fake-model", srv.url, logprobs=False)
        with pytest.raises(JudgeError) as caught:
            await judge.generate(Request.chat("x"))
        await judge.aclose()
    assert type(caught.value) is kind
    assert words.replace("URL", srv.url) in str(caught.value)
    if kind is TransientJudgeError:
        assert caught.value.retry_after == 1.5
    assert caught.value.__cause__.status_code == status  # what refuses_logprobs reads


def test_retry_after_ms_wins_and_a_logprob_refusal_is_recognised():
    err = status_error(503, {"retry-after-ms": "250", "retry-after": "7"}, "", "openai:m", "http://h/v1")
    assert isinstance(err, TransientJudgeError) and err.retry_after == 0.25
    refusal = status_error(400, {}, '{"error": {"message": "logprobs are not supported"}}', "openai:m", "http://h")
    assert isinstance(refusal, FatalJudgeError) and refuses_logprobs(refusal)
    plain = status_error(400, {}, "<html>Bad Request</html>", "openai:m", "http://h")
    assert str(plain).endswith("(HTTP 400): <html>Bad Request</html>") and not refuses_logprobs(plain)


async def test_a_malformed_body_is_a_transient_error_naming_the_endpoint():
    with FakeOpenAIServer() as srv:
        srv.enqueue(Behaviour(kind="malformed"))
        judge = OpenAIJudge("fake-model", srv.url, logprobs=False)
        with pytest.raises(TransientJudgeError, match=f"malformed response body from {srv.url}"):
            await judge.generate(Request.chat("x"))
        assert (await judge.generate(Request.chat("x"))).text == "3"  # the connection pool survived it
        await judge.aclose()


async def test_a_refused_connection_names_the_endpoint():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = OpenAIJudge("fake-model", f"http://127.0.0.1:{port}/v1", logprobs=False)
    with pytest.raises(TransientJudgeError, match=f"cannot reach http://127.0.0.1:{port}/v1: connection refused"):
        await judge.generate(Request.chat("x"))
    await judge.aclose()


@pytest.mark.parametrize("request_", [Request.chat("plain"), FULL], ids=["plain", "every-setting"])
async def test_the_body_and_credentials_are_what_the_sdk_sends(request_):
    """The same Request through the judge and through the SDK's typed call: the server gets equal bodies."""
    with FakeOpenAIServer() as srv:
        url = srv.url.replace("http://", "http://someone:pa55word@")
        judge = OpenAIJudge("fake-model", url, api_key="sk-test-key-123456", logprobs=False)
        await judge.generate(request_)
        sdk = openai.AsyncOpenAI(api_key="sk-test-key-123456", base_url=srv.url, max_retries=0,
                                 default_headers=judge._connect["default_headers"])
        await sdk.chat.completions.create(**judge.payload(request_))
        await sdk.close()
        await judge.aclose()
    mine, theirs = srv.requests
    assert mine == theirs
    assert srv.auth[0] == srv.auth[1] and srv.auth[0].startswith("Basic ")


async def test_chat_calls_bypass_the_sdk_and_share_its_session(monkeypatch):
    """The SDK client stays for the batch API, on the very pool the chat calls use."""
    with FakeOpenAIServer() as srv:
        judge = OpenAIJudge("fake-model", srv.url, logprobs=False)
        judge.plan_concurrency(40)
        client = judge.client

        async def no_sdk(*args, **kwargs):
            raise AssertionError("a chat call went through the SDK")

        monkeypatch.setattr(client, "post", no_sdk)
        assert (await judge.generate(Request.chat("x"))).text == "3"
        assert client._client._transport.client is judge._session and judge._session.connector.limit == 40
        assert (await client.models.list()).data[0].id == "fake-model"  # the SDK still works on that session
        await judge.aclose()
        assert judge._session is None and client.is_closed()


async def test_usage_logprobs_and_finish_reason_are_parsed():
    with FakeOpenAIServer() as srv:
        judge = OpenAIJudge("fake-model", srv.url, logprobs=True)
        resp = await judge.generate(FULL)
        await judge.aclose()
    assert [c.finish_reason for c in resp.choices] == ["stop", "stop"] and resp.text == "3"
    assert (resp.prompt_tokens, resp.completion_tokens, resp.model) == (10, 2, "fake-model")
    top = resp.choices[0].logprobs[0]
    assert (top.token, top.logprob) == ("3", -0.1) and [t.token for t in top.top] == ["3", "alt0", "alt1"]
    raw = {"model": "m", "choices": [{"message": {"content": None}, "finish_reason": "length", "logprobs": None}],
           "usage": {"prompt_tokens": 7, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 5}}}
    parsed = to_response(raw, 0.1, "http://h/v1")
    assert (parsed.text, parsed.choices[0].finish_reason, parsed.cached_prompt_tokens) == ("", "length", 5)
    with pytest.raises(TransientJudgeError, match="malformed response from http://h/v1: no choices"):
        to_response({"error": "busy"}, 0.1, "http://h/v1")
    # a field of the wrong type is a malformed answer too (retried), named, never a pydantic traceback
    bad = {"choices": [{"message": {"content": "3"},
                        "logprobs": {"content": [{"token": "3", "logprob": "high", "top_logprobs": []}]}}]}
    with pytest.raises(TransientJudgeError, match=r"malformed response from http://h/v1: choices\.0\.logprobs\.0"
                                                  r"\.logprob: Input should be a valid number"):
        to_response(bad, 0.1, "http://h/v1")
    with pytest.raises(TransientJudgeError, match="malformed response from http://h/v1: KeyError"):
        to_response({"choices": [{"logprobs": {"content": [{"logprob": -1.0}]}}]}, 0.1, "http://h/v1")


def test_the_chat_url_keeps_the_endpoint_path_and_query():
    assert chat_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert (chat_url("https://x.example/openai/v1?api-version=2")
            == "https://x.example/openai/v1/chat/completions?api-version=2")


async def test_a_proxy_from_the_environment_is_used(monkeypatch):
    """The SDK's clients honour HTTP_PROXY; the hot path looks it up once per session and does too."""
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAIServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
        judge = OpenAIJudge("fake-model", "http://judge.invalid:9/v1", logprobs=False)
        assert (await judge.generate(Request.chat("via the proxy"))).text == "3"
        await judge.aclose()
    assert [r["messages"][0]["content"] for r in proxy.requests] == ["via the proxy"]


async def test_connections_carry_tcp_keepalive(monkeypatch):
    """A silent connection (a long answer) keeps its NAT state and notices a vanished peer."""
    options = []
    real = socket.socket.setsockopt

    def noting(self, level, name, value, *rest):
        options.append((level, name, value))
        return real(self, level, name, value, *rest)

    monkeypatch.setattr(socket.socket, "setsockopt", noting)
    with FakeOpenAIServer() as srv:
        judge = OpenAIJudge("fake-model", srv.url, logprobs=False)
        assert (await judge.generate(Request.chat("x"))).text == "3"
        await judge.aclose()
    assert (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1) in options
