"""The embedded judge end to end: real SmolLM2 answers, next-token log-probabilities, KV-cache prefix reuse."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

import assay
from assay.judges.base import Request
from assay.judges.llamacpp import common_prefix, resolve_model, top_logprobs


def test_model_resolves_from_the_package():
    path = resolve_model("smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000


def test_pure_helpers():
    assert common_prefix([1, 2, 3, 4], [1, 2, 9]) == 2
    assert common_prefix([], [1]) == 0
    logp, idx = top_logprobs(np.array([0.0, 2.0, 1.0]), 2)
    assert list(idx) == [1, 2]
    assert math.isclose(np.exp(logp).sum(), 1.0)


async def test_greedy_answer_with_top_logprobs(smollm2):
    req = Request.chat("What is 2+2? Answer with one digit.", max_tokens=3, top_logprobs=5)
    a = await smollm2.generate(req)
    b = await smollm2.generate(req)
    assert a.text == b.text and a.text.strip()
    first = a.choices[0].logprobs[0]
    assert len(first.top) == 5
    probs = [math.exp(t.logprob) for t in first.top]
    assert probs == sorted(probs, reverse=True) and sum(probs) <= 1.0 + 1e-6
    assert first.top[0].token == first.token  # greedy picks the most likely token
    assert a.prompt_tokens > 10 and a.completion_tokens >= 1


async def test_shared_prefix_is_reused(smollm2):
    article = "The city council met on Tuesday to discuss the new park. " * 20
    before = dict(smollm2.stats)
    await smollm2.generate(Request.chat(article + "\nQuestion one: is it about a park?", max_tokens=1))
    mid = dict(smollm2.stats)
    await smollm2.generate(Request.chat(article + "\nQuestion two: is it about a road?", max_tokens=1))
    after = dict(smollm2.stats)
    reused = after["prompt_tokens_reused"] - mid["prompt_tokens_reused"]
    evaluated = after["prompt_tokens_evaluated"] - mid["prompt_tokens_evaluated"]
    assert reused > 200 and evaluated < 30, (before, mid, after)


async def test_sampling_differs_by_sample_index_and_is_reproducible(smollm2):
    base = dict(max_tokens=12, temperature=1.0, top_p=1.0)
    prompt = "Write a random word."
    texts = {(await smollm2.generate(Request.chat(prompt, sample_index=i, **base))).text for i in range(4)}
    assert len(texts) > 1
    again = await smollm2.generate(Request.chat(prompt, sample_index=0, **base))
    first = await smollm2.generate(Request.chat(prompt, sample_index=0, **base))
    assert again.text == first.text


async def test_n_completions(smollm2):
    resp = await smollm2.generate(Request.chat("Say a number.", max_tokens=4, temperature=1.0, n=3))
    assert len(resp.choices) == 3


async def test_n_completions_count_and_evaluate_the_prompt_once(smollm2):
    prompt = "Rate the fluency of this sentence from 1 to 5: the cat sat on the mat, and then it slept."
    one = await smollm2.generate(Request.chat(prompt, max_tokens=2))
    await smollm2.generate(Request.chat("Something else entirely.", max_tokens=1))  # the cache holds another prompt
    before = dict(smollm2.stats)
    many = await smollm2.generate(Request.chat(prompt, max_tokens=3, temperature=1.0, n=5))
    evaluated = smollm2.stats["prompt_tokens_evaluated"] - before["prompt_tokens_evaluated"]
    assert len(many.choices) == 5
    assert many.prompt_tokens == one.prompt_tokens  # once per request, as a server bills it, not once per choice
    assert 0 < many.cached_prompt_tokens < many.prompt_tokens  # the chat template's opening was still cached
    assert evaluated == many.prompt_tokens - many.cached_prompt_tokens  # the prompt was evaluated once


async def test_json_mode_answers_are_json(smollm2):
    """JSON mode decodes under llama.cpp's JSON grammar: an answer the model ended is one JSON object, greedy or
    sampled, and the log-probabilities are those of the tokens the grammar allowed. (Whether the model ends its
    object within the budget depends on its text, which changes with the CPU: issue 23.)"""
    ask = 'Name two criteria for judging a summary, as JSON: {"criteria": [{"name": "...", "description": "..."}]}'
    for req in (Request.chat(ask, max_tokens=200, json_mode=True, top_logprobs=3),
                Request.chat(ask, max_tokens=200, json_mode=True, temperature=1.0, n=2, top_logprobs=3)):
        res = await smollm2.generate(req)
        assert len(res.choices) == req.n
        for choice in res.choices:
            assert choice.text.lstrip().startswith("{")
            if choice.finish_reason == "stop":  # the grammar let it end: a whole object, as OpenAI's json_object
                assert isinstance(json.loads(choice.text), dict)
            else:
                assert choice.finish_reason == "length" and len(choice.logprobs) == 200
            # at the first position the grammar allows only tokens that open an object
            assert all(t.token[:1] == "{" for t in choice.logprobs[0].top)


def test_direct_method_end_to_end_on_topical_chat(tmp_path, smollm2):
    result = assay.evaluate("topical-chat", method="direct", judge=smollm2, limit=3, run_dir=tmp_path,
                            dimensions=["naturalness", "engagingness"])
    assert len(result.judgments) == 6
    for j in result.judgments:
        assert (j.score is None) == bool(j.error)
        assert j.score is None or 1 <= j.score <= 3
        assert j.trace["answer"] is not None
    gguf = hashlib.sha256(resolve_model("smollm2").read_bytes()).hexdigest()
    assert result.manifest["judge"] == {"backend": "llamacpp", "model": "smollm2", "base_url": None,
                                        "model_sha256": gguf, "settings": {"n_ctx": smollm2.identity.settings["n_ctx"]}}
    assert sum(u.calls for u in result.usage.values()) == 6


def _spy_on_model_loads(monkeypatch, stop: bool = False) -> list[bool]:
    """Record ``use_extra_bufts`` of every params object llama-cpp-python hands to llama.cpp's model loader
    (``stop``: refuse the load after recording, so that no native code runs)."""
    import llama_cpp._internals as internals

    seen: list[bool] = []
    real = internals.LlamaModel

    def spy(*args, **kwargs):
        seen.append(bool(kwargs["params"].use_extra_bufts))
        if stop:
            raise RuntimeError("load refused by the test")
        return real(*args, **kwargs)

    monkeypatch.setattr(internals, "LlamaModel", spy)
    return seen


async def test_the_model_loads_with_extra_buffer_types_off_by_default(monkeypatch):
    """The AMX buffer type kills the process on CPUs that report AMX without letting a process use it (issue 23):
    the params llama.cpp gets say use_extra_bufts=false unless the judge option asks, and the runtime says so."""
    import llama_cpp

    from assay.judges.llamacpp import LlamaCppJudge

    seen = _spy_on_model_loads(monkeypatch)
    judge = LlamaCppJudge("smollm2", n_threads=1)
    try:
        assert seen == [False] and judge._llm.model_params.use_extra_bufts is False
        runtime = judge.runtime()
        assert runtime["extra_buffers"] is False and isinstance(runtime["cpu_amx"], list)
        answer = await judge.generate(Request.chat("Say yes.", max_tokens=2))  # runs on every CPU
        assert answer.completion_tokens >= 1
    finally:
        await judge.aclose()
    assert llama_cpp.llama_model_default_params().use_extra_bufts is True  # llama.cpp's own default is restored

    asked = _spy_on_model_loads(monkeypatch, stop=True)
    with pytest.raises(RuntimeError, match="refused by the test"):
        LlamaCppJudge("smollm2", n_threads=1, extra_buffers=True)
    assert asked == [True]


def test_extra_buffers_must_be_a_boolean():
    from assay.errors import ConfigError
    from assay.judges.llamacpp import LlamaCppJudge

    with pytest.raises(ConfigError, match="extra_buffers='maybe': expected true or false"):
        LlamaCppJudge("smollm2", extra_buffers="maybe")


async def test_closing_waits_for_the_evaluation_in_flight_and_stops_it():
    """Ctrl-C closes the judge while a worker thread is inside llama.cpp: the close must wait for that thread
    (freeing the model under it was the segfault of issue 23) and the thread must stop at its next token."""
    import asyncio

    from assay.errors import FatalJudgeError
    from assay.judges.llamacpp import LlamaCppJudge

    judge = LlamaCppJudge("smollm2", n_threads=1)
    long = asyncio.ensure_future(judge.generate(Request.chat("Write a long story about a cat.", max_tokens=400)))
    while not judge._tokens:  # the prompt is being evaluated or the answer decoded
        await asyncio.sleep(0.01)
    await judge.aclose()
    assert judge._llm is None
    with pytest.raises(FatalJudgeError, match="closed"):
        await long  # stopped early, not after 400 tokens, and never on a freed model
    await judge.aclose()  # closing twice is harmless


def test_answer_format_json_with_the_embedded_judge(tmp_path, smollm2):
    """--answer-format auto uses the grammar: every answer is the schema's object, reasoning first, and G-Eval's
    rating position under the grammar holds the scale's tokens only (no mass off the scale)."""
    result = assay.evaluate("topical-chat", method="direct", judge=smollm2, limit=1, run_dir=tmp_path / "direct",
                            dimensions=["naturalness"])
    assert result.manifest["answer_format"]["used"] == "json"
    assert "grammar" in result.manifest["answer_format"]["judge_reason"]
    for j in result.judgments:
        answer = json.loads(j.trace["answer"])
        assert list(answer) == ["reasoning", "score"]
        assert j.score is None or 1 <= j.score <= 3  # a score is read by the same reader and checked on the scale
    geval = assay.evaluate("summeval", method="geval", judge=smollm2, limit=1, run_dir=tmp_path / "geval",
                           dimensions=["coherence"], options={"no_cot": True})
    (j,) = geval.judgments
    assert j.trace["answer_format"] == "json" and j.trace["mode"] == "logprobs"
    assert json.loads(j.trace["answer"])["score"] in range(1, 6)
    assert j.trace["invalid_mass"] == 0 and math.isclose(j.trace["valid_mass"], 1.0, abs_tol=1e-3)
    assert set(j.trace["distribution"]) <= {"1", "2", "3", "4", "5"}
