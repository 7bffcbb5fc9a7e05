"""The openai judge against a real llama.cpp OpenAI-compatible server serving SmolLM2 on loopback."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

import assay
from assay.judges.base import Request
from assay.judges.llamacpp import resolve_model
from assay.judges.openai import OpenAIJudge

pytestmark = pytest.mark.server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (pip install -e '.[test]')")
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"  # a pipe would fill up and stall the server
    # llama-cpp-python's server loads the model with llama.cpp's extra buffer types on: on a CPU that reports AMX
    # without letting a process use it, its first answer kills it (issue 23). Serve with them off, as the
    # embedded judge loads by default (docs/judges.md, "CPUs").
    serve = ("import runpy, sys, llama_cpp; from assay.judges.native import model_params; sys.argv[0] = 'server'\n"
             "with model_params(llama_cpp, False): runpy.run_module('llama_cpp.server', run_name='__main__')")
    proc = subprocess.Popen(
        [sys.executable, "-c", serve, "--model", str(resolve_model("smollm2")), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--logits_all", "true", "--n_threads", "2",
         "--model_alias", "smollm2"],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=1)
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(log.read_text(errors="replace")[-2000:]) from None
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError("llama.cpp server did not start within 120 s")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


async def test_server_answers_with_logprobs(llama_server):
    judge = OpenAIJudge("smollm2", llama_server)
    assert await judge.detect_logprobs() is True
    resp = await judge.generate(Request.chat("What is 2+2? One digit.", max_tokens=3, top_logprobs=5))
    assert resp.text.strip()
    first = resp.choices[0].logprobs[0]
    assert 1 <= len(first.top) <= 5
    assert all(t.logprob <= 0 for t in first.top)
    assert sum(math.exp(t.logprob) for t in first.top) <= 1.0 + 1e-4
    assert resp.prompt_tokens > 5


def test_direct_run_through_the_server(tmp_path, llama_server):
    # free text: llama-cpp-python's server answers the default json_schema response format with HTTP 500, and a
    # probe that never answers stops a run (its JSON run: schema_field=json_object, the next test)
    result = assay.evaluate("topical-chat", method="direct", judge=f"openai:smollm2@{llama_server}", limit=2,
                            dimensions=["naturalness"], run_dir=tmp_path, answer_format="free")
    assert len(result.judgments) == 2
    assert result.manifest["judge"]["base_url"] == llama_server
    assert result.manifest["judge_logprobs_reason"].startswith("not probed")  # direct reads no log-probabilities


def test_the_server_enforces_a_json_schema_probed_once(tmp_path, llama_server):
    """llama-cpp-python's server takes a schema as ``{"type": "json_object", "schema": ...}`` (``schema_field=
    json_object``): the probe says it enforces it, and every answer of a direct run is the schema's object with the
    reasoning first. Its ``json_schema`` type is an HTTP 500, which the probe, retried, reports instead of guessing."""
    result = assay.evaluate("topical-chat", method="direct", judge=f"openai:smollm2@{llama_server}", limit=2,
                            dimensions=["naturalness"], run_dir=tmp_path,
                            judge_options={"schema_field": "json_object"})
    record = result.manifest["answer_format"]
    assert (record["used"], record["judge_schema"]) == ("json", True), record
    for j in result.judgments:
        assert list(json.loads(j.trace["answer"])) == ["reasoning", "score"]


async def test_a_llama_cpp_python_server_has_no_props_so_the_context_stays_unknown(llama_server):
    """llama-cpp-python's server (unlike llama.cpp's own llama-server) serves no ``/props``: the size is unknown,
    said so, never an error (issue 23; the loopback fake of tests/test_context_check.py serves llama.cpp's shape)."""
    n_ctx, why = await OpenAIJudge("smollm2", llama_server).context_size()
    assert n_ctx is None and why.startswith("context size unknown: GET http://127.0.0.1:")
    assert "/props failed (HTTP 404)" in why
    stated = await OpenAIJudge("smollm2", llama_server, n_ctx=2048).context_size()
    assert stated == (2048, "set by the judge option n_ctx")
