"""Usage counted once per request (whatever its n), cached prompt tokens as servers report them, cache_prompt."""

from __future__ import annotations

import pytest

import assay
from assay.judges.base import Request
from assay.judges.openai import OpenAIJudge, cached_tokens
from assay.judges.scripted import ScriptedJudge
from assay.testing import Behaviour, FakeOpenAIServer

SAMPLING = {"mode": "sampling", "n": 5, "no_cot": True}
NO_PROBE = {"logprobs": False, "schema": False}  # no probes: the server sees only the method's requests


def _usage(result):
    [j] = result.judgments
    return j.usage["score"]


def test_a_sampling_request_counts_its_prompt_once_with_the_scripted_judge():
    ds = assay.load_dataset("summeval").select(limit=1)
    judge = ScriptedJudge(lambda r: "3")
    u = _usage(assay.evaluate(ds, method="geval", judge=judge, dimensions=["fluency"], options=SAMPLING))
    [req] = judge.requests
    assert req.n == 5 and u.calls == 1
    assert u.prompt_tokens == sum(len(m.content.split()) for m in req.messages)  # once, not 5 times
    assert u.completion_tokens == 5


def test_usage_is_what_the_server_reports_once_per_request():
    ds = assay.load_dataset("summeval").select(limit=1)
    with FakeOpenAIServer() as srv:  # all 5 choices in one answer: its usage once
        u = _usage(assay.evaluate(ds, method="geval", judge=f"openai:m@{srv.url}", dimensions=["fluency"],
                                  options=SAMPLING, judge_options=NO_PROBE))
    assert (u.calls, u.prompt_tokens, u.completion_tokens) == (1, 10, 5)
    with FakeOpenAIServer(default=Behaviour(choices=1)) as srv:  # a server that caps n: 5 requests, each counted
        u = _usage(assay.evaluate(ds, method="geval", judge=f"openai:m@{srv.url}", dimensions=["fluency"],
                                  options=SAMPLING, judge_options=NO_PROBE))
        assert len(srv.requests) == 5
    assert (u.calls, u.prompt_tokens) == (5, 50)


@pytest.mark.parametrize(("fields", "cached"), [
    ({"usage": {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 8}}}, 8),
    ({"timings": {"cache_n": 7, "prompt_n": 3}}, 7),  # llama.cpp server, recent
    ({"timings": {"prompt_n": 4}}, 6),  # llama.cpp server: 4 of the 10 evaluated, the rest from its cache
    ({"tokens_cached": 30}, 0),  # llama.cpp's count of everything kept, not of the prompt served: not read
])
async def test_cached_prompt_tokens_are_read_where_the_server_reports_them(fields, cached):
    with FakeOpenAIServer(default=Behaviour(fields=fields)) as srv:
        judge = OpenAIJudge("m", srv.url)
        resp = await judge.generate(Request.chat("hello", max_tokens=1))
    assert (resp.prompt_tokens, resp.cached_prompt_tokens) == (10, cached)


def test_cached_tokens_never_exceed_the_prompt():
    assert cached_tokens({"timings": {"cache_n": 50}}, 10) == 10
    assert cached_tokens({"timings": {"prompt_n": 12}}, 10) == 0
    assert cached_tokens({}, 10) == 0


async def test_cache_prompt_is_sent_only_when_asked_and_is_part_of_the_identity():
    with FakeOpenAIServer() as srv:
        plain, caching = OpenAIJudge("m", srv.url), OpenAIJudge("m", srv.url, cache_prompt=True)
        await plain.generate(Request.chat("a", max_tokens=1))
        await caching.generate(Request.chat("a", max_tokens=1))
        sent = [dict(r) for r in srv.requests]
    assert "cache_prompt" not in sent[0]  # OpenAI's API refuses fields it does not know
    assert sent[1]["cache_prompt"] is True
    assert plain.identity.settings == {} and caching.identity.settings == {"cache_prompt": True}


def test_cache_prompt_is_a_judge_option_recorded_in_the_manifest(tmp_path):
    ds = assay.load_dataset("summeval").select(limit=1)
    with FakeOpenAIServer() as srv:
        res = assay.evaluate(ds, method="direct", judge=f"openai:m@{srv.url}", dimensions=["fluency"],
                             judge_options={"cache_prompt": True}, run_dir=tmp_path)
        assert srv.requests[-1]["cache_prompt"] is True
    assert res.manifest["judge"]["settings"] == {"cache_prompt": True}
