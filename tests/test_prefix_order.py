"""Prefix-aware unit order: every method's requests, in executor order, share the longest prefix with the last one."""

from __future__ import annotations

import pytest

import assay
from assay.judges.scripted import ScriptedJudge
from assay.run import session
from assay.run.executor import order_units, prefix_reuse, text_tokens
from assay.testing import formatted_answer

FACTS_INTRO = "You will rewrite a text as a list of monadic facts."


def test_prefix_reuse_counts_the_prefix_shared_with_the_previous_request():
    stream = [list("abcd"), list("abxy"), list("abxz"), list("q")]
    # a b c d | a b (reused) x y | a b x (reused) z | q: 5 of 13 tokens reused
    assert prefix_reuse(stream) == pytest.approx(5 / 13)
    assert prefix_reuse([list("abc")]) == 0.0
    assert prefix_reuse([]) == 0.0
    assert text_tokens("Q1: yes, it is.") == ["Q1", ":", "yes", ",", "it", "is", "."]


def reuse(monkeypatch, method: str, by: str, options: dict | None = None) -> tuple[float, str, ScriptedJudge]:
    """Prefix reuse of the judge requests of a run (one call at a time, units in ``by`` order), and the order
    the method asked the executor for."""
    asked: list[str] = []

    def forced(samples, dimensions, done, **kw):
        asked.append(kw["by"])
        return order_units(samples, dimensions, done, by=by)

    monkeypatch.setattr(session, "order_units", forced)
    ds = assay.load_dataset("summeval").select(docs=1, limit=4)
    judge = ScriptedJudge(formatted_answer)
    assay.evaluate(ds, method=method, judge=judge, concurrency=1, options=options or {})
    scored = [r for r in judge.requests if not r.messages[0].content.startswith(FACTS_INTRO)]
    return prefix_reuse(text_tokens("\n".join(m.content for m in r.messages)) for r in scored), asked[0], judge


@pytest.mark.parametrize(("method", "options"), [
    ("seal", {}),
    ("checkeval", {}),
    ("checkeval", {"definition": "before"}),
    ("geval", {"mode": "greedy", "no_cot": True}),
    ("direct", {}),
])
def test_the_order_a_method_asks_for_reuses_the_longest_prefix(monkeypatch, method, options):
    sample_major, wanted, _ = reuse(monkeypatch, method, "sample", options)
    dimension_major, _, _ = reuse(monkeypatch, method, "dimension", options)
    got = {"sample": sample_major, "dimension": dimension_major}
    other = "sample" if wanted == "dimension" else "dimension"
    assert got[wanted] > got[other], got
    assert got[wanted] > 0.5, got


def test_seal_verification_prompts_put_rules_and_texts_before_the_units_and_question(monkeypatch):
    _, wanted, judge = reuse(monkeypatch, "seal", "dimension")
    assert wanted == "dimension"
    units = ("<<<SUMMARY SENTENCES>>>", "<<<SUMMARY FACTS>>>")
    verify = [r.messages[0].content for r in judge.requests
              if not r.messages[0].content.startswith(FACTS_INTRO) and any(u in r.messages[0].content for u in units)]
    assert verify
    for prompt in verify:
        block = min(prompt.index(u) for u in units if u in prompt)
        question = max(prompt.find("Question ("), prompt.find("Task: "))
        rules = prompt.index("Rules:")
        assert rules < prompt.find("\n<<<", rules) < block < question, prompt  # rules, texts, units, question


@pytest.mark.parametrize("method", ["direct", "geval", "checkeval", "seal"])
def test_the_formatted_answers_take_every_method_along_its_full_path(tmp_path, method):
    """The benchmarks' scripted answers: no fallback, no parse failure; G-Eval's score prompts carry generated steps."""
    ds = assay.load_dataset("summeval").select(docs=1, limit=2)
    judge = ScriptedJudge(formatted_answer)
    result = assay.evaluate(ds, method=method, judge=judge, run_dir=tmp_path / "run")
    assert result.units["scored"] == result.units["asked"] > 0
    assert not [n for n in result.notes if n["kind"] == "fallback"], result.notes
    if method == "geval":
        steps = {d["steps_source"] for d in result.manifest["artifacts"]["dimensions"].values()}
        assert steps == {"generated"}
        assert all("Evaluation Steps:\n1. " in r.messages[0].content for r in judge.requests
                   if r.top_logprobs or r.n > 1 or "Evaluation Form" in r.messages[0].content)
