"""How calls travel: the fake server's single write without Nagle, the openai judge's aiohttp transport and pool."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import socket

import openai
import pytest

from assay import evaluate
from assay.judges import openai as openai_judge
from assay.judges.base import Request
from assay.judges.middleware import ManagedJudge
from assay.judges.openai import OpenAIJudge, redact, url_credentials
from assay.testing import Behaviour, FakeOpenAIServer

REQ = Request.chat("Rate it.", max_tokens=4)


def _server_writes(monkeypatch, port: int) -> list[int]:
    """Record, for every send by the server's side of a connection (local port ``port``), its TCP_NODELAY."""
    writes: list[int] = []
    real_send, real_sendall = socket.socket.send, socket.socket.sendall

    def note(sock: socket.socket) -> None:
        if sock.getsockname()[1] == port:
            writes.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    def send(self, data, *args):
        note(self)
        return real_send(self, data, *args)

    def sendall(self, data, *args):
        note(self)
        return real_sendall(self, data, *args)

    monkeypatch.setattr(socket.socket, "send", send)
    monkeypatch.setattr(socket.socket, "sendall", sendall)
    return writes


@pytest.mark.parametrize("size", [1, 200_000])
def test_fake_server_answers_in_one_write_with_nagle_off(monkeypatch, size):
    """Headers then body in two writes with Nagle on wait ~44 ms for the client's delayed ACK (issue 16)."""
    with FakeOpenAIServer(default=Behaviour(text="x" * size)) as srv:
        writes = _server_writes(monkeypatch, srv._server.server_address[1])
        conn = http.client.HTTPConnection("127.0.0.1", srv._server.server_address[1])
        conn.request("POST", "/v1/chat/completions", body=json.dumps({"messages": []}),
                     headers={"content-type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        conn.close()
    assert answer["choices"][0]["message"]["content"] == "x" * size
    assert writes and all(writes), "a response left with Nagle's algorithm on"
    if size == 1:
        assert len(writes) == 1, "a small response left in more than one write"


async def test_openai_judge_uses_the_aiohttp_transport_with_a_pool_sized_to_the_concurrency():
    with FakeOpenAIServer() as srv:
        bare = OpenAIJudge("fake-model", srv.url, logprobs=False)
        judge = ManagedJudge(bare, concurrency=48)
        for _ in range(3):
            assert (await judge.generate(REQ.model_copy(update={"seed": _}))).text == "3"
        client = bare._client_now()
        transport = client._client._transport  # the SDK client's httpx client, then its transport
        assert isinstance(client._client, openai.DefaultAioHttpClient)
        assert transport.client.connector.limit == 48
        assert bare.runtime() == {"transport": "aiohttp", "pool": 48}
        await judge.aclose()
        assert client.is_closed()


# the first loop's pool cannot be closed once its loop has ended: aiohttp says so when it is collected
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_one_sdk_client_per_judge_and_event_loop(monkeypatch):
    """Chat calls build no SDK client (its import is a run's slowest start-up step); one is built when asked
    for (the batch API), once per judge and event loop, on the session the chat calls use in that loop."""
    built = []
    real = openai.AsyncOpenAI

    def counting(*args, **kwargs):
        built.append(kwargs)
        return real(*args, **kwargs)

    async def calls(judge: OpenAIJudge, seeds: range, clients_before: int) -> list[str]:
        texts = [(await judge.generate(REQ.model_copy(update={"seed": i}))).text for i in seeds]
        assert len(built) == clients_before, "a chat call built an SDK client"
        assert judge.client is judge.client
        assert judge.client._client._transport.client is judge._session
        return texts

    monkeypatch.setattr(openai, "AsyncOpenAI", counting)
    with FakeOpenAIServer() as srv:
        judge = OpenAIJudge("fake-model", srv.url, logprobs=False)
        assert asyncio.run(calls(judge, range(5), 0)) == ["3"] * 5
        assert len(built) == 1 and built[0]["max_retries"] == 0
        assert asyncio.run(calls(judge, range(5, 7), 1)) == ["3"] * 2  # the first loop's pool is gone with it
        assert len(built) == 2
        asyncio.run(judge.aclose())


async def test_without_aiohttp_the_judge_falls_back_to_httpx_and_says_so(monkeypatch):
    monkeypatch.setattr(openai_judge, "aiohttp_installed", lambda: False)
    with FakeOpenAIServer() as srv:
        judge = OpenAIJudge("fake-model", srv.url, logprobs=False)
        assert (await judge.generate(REQ)).text == "3"
        assert isinstance(judge._client_now()._client, openai.DefaultAsyncHttpxClient)
        assert judge._session is None
        await judge.aclose()
    runtime = judge.runtime()
    assert runtime["transport"] == "httpx" and "openai[aiohttp]" in runtime["transport_note"]


async def test_url_credentials_travel_as_basic_auth_on_aiohttp():
    """httpx sent a URL's user:password as Basic auth; aiohttp refuses such a URL beside the bearer header."""
    with FakeOpenAIServer() as srv:
        url = srv.url.replace("http://", "http://someone:pa55%40word@")
        judge = OpenAIJudge("fake-model", url, api_key="sk-test-key-123456", logprobs=False)
        assert (await judge.generate(REQ)).text == "3"
        await judge.aclose()
    assert srv.auth == ["Basic " + base64.b64encode(b"someone:pa55@word").decode()]
    assert url_credentials("http://h:1/v1") == ("http://h:1/v1", {})


def test_the_transport_is_in_the_manifest_not_in_the_identity(tmp_path):
    with FakeOpenAIServer() as srv:
        result = evaluate("topical-chat", method="direct", judge=f"openai:fake-model@{srv.url}",
                          run_dir=tmp_path / "run", limit=1, dimensions=["coherence"], concurrency=24,
                          judge_options={"logprobs": False})
    assert result.manifest["judge_runtime"] == {"transport": "aiohttp", "pool": 24}
    assert "transport" not in json.dumps(result.manifest["judge"])


def test_a_basic_auth_header_echoed_in_an_error_is_redacted():
    header = url_credentials("http://someone:pa55word-123@h:1/v1")[1]["Authorization"]
    assert redact(f"proxy said: bad Authorization: {header}", []) == "proxy said: bad Authorization: Basic [redacted]"
