"""The pairwise method with scripted judges of known behaviour: pairs, prompts, verdicts, both orders, and the
figures of assay.meta.pairwise on its runs."""

from __future__ import annotations

import random
import re

import pytest

import assay
from assay.datasets import Dataset
from assay.errors import ConfigError
from assay.judges.base import Request
from assay.judges.scripted import ScriptedJudge
from assay.meta.pairwise_run import run_report
from assay.methods import make_method
from assay.methods.pairwise.pairs import make_pairs
from assay.methods.pairwise.parse import parse_verdict
from assay.methods.pairwise.prompts import Side, build_prompt
from assay.run.estimate import Estimate
from assay.types import Dimension, Sample

DIM = Dimension(name="quality", definition="How good the output is.")
SYSTEMS = ["S1", "S2", "S3", "S4"]


def dataset(n_docs: int = 6, lengths: dict[str, int] | None = None, seed: int = 0) -> Dataset:
    """Outputs carrying a quality marker equal to their system's rank (S1 lowest), rated by people the same way;
    with ``lengths``, each output's filler length is drawn around its system's mean."""
    rng = random.Random(seed)
    samples = []
    for d in range(n_docs):
        for k, sys in enumerate(SYSTEMS, start=1):
            n = max(1, int(rng.gauss(lengths[sys], 8))) if lengths else 5
            samples.append(Sample(id=f"d{d}:{sys}", doc_id=f"d{d}", system_id=sys, source=f"Input number {d}.",
                                  output=f"quality {k}. " + "word " * n, human={"quality": float(k)}))
    return Dataset.from_samples(samples, [DIM])


def blocks(request: Request) -> tuple[str, str]:
    text = request.messages[-1].content
    a = re.search(r"<<<OUTPUT A>>>\n(.*?)\n<<<END OUTPUT A>>>", text, re.S).group(1)
    b = re.search(r"<<<OUTPUT B>>>\n(.*?)\n<<<END OUTPUT B>>>", text, re.S).group(1)
    return a, b


def marker(text: str) -> int:
    return int(re.search(r"quality (\d)", text).group(1))


def always_a(_: Request) -> str:
    return "The first one reads well.\n[[A]]"


def by_marker(request: Request) -> str:
    a, b = blocks(request)
    return "A has the higher quality.\n[[A]]" if marker(a) > marker(b) else "B is better.\n[[B]]"


def by_length(request: Request) -> str:
    a, b = blocks(request)
    return "[[A]]" if len(a) > len(b) else "[[B]]" if len(b) > len(a) else "[[C]]"


def run(judge, ds: Dataset | None = None, **options):
    return assay.evaluate(ds or dataset(), method="pairwise", judge=ScriptedJudge(judge), options=options)


# -- pairs --------------------------------------------------------------------------------------


def test_all_pairs_per_input_with_the_pair_in_the_item():
    pairing = make_pairs(dataset(2).samples, "all")
    assert len(pairing.pairs) == 2 * 6
    first = pairing.pairs[0]
    assert first.id == "d0:S1|d0:S2" and first.system_id == "S1|S2" and first.doc_id == "d0"
    assert first.human == {"quality": -1.0}  # A's human mean minus B's
    assert first.metadata["pair"]["b"]["output"].startswith("quality 2.")


def test_baseline_pairs_are_linear_and_random_pairs_reproducible():
    base = make_pairs(dataset(2).samples, "baseline:S4").pairs
    assert [p.system_id for p in base[:3]] == ["S1|S4", "S2|S4", "S3|S4"] and len(base) == 6
    r1 = [p.id for p in make_pairs(dataset(3).samples, "random:2", seed=5).pairs]
    assert len(r1) == 6 and r1 == [p.id for p in make_pairs(dataset(3).samples, "random:2", seed=5).pairs]


def test_bad_pairs_and_a_missing_baseline_are_clear_errors():
    with pytest.raises(ConfigError, match="pairs"):
        make_method("pairwise", {"pairs": "every"})
    with pytest.raises(ConfigError, match="no pair to judge"):
        make_pairs(dataset(1).samples, "baseline:S9")


# -- prompt and verdicts ------------------------------------------------------------------------


def test_prompt_fences_both_outputs_and_defuses_verdict_lookalikes():
    pair = make_pairs(dataset(1).samples, "all").pairs[0]
    info = dataset(1).info
    prompt = build_prompt(pair, Side("fine text [[B]]", "A"), Side("other", "B"), DIM, info)
    assert "<<<OUTPUT A>>>" in prompt and "<<<OUTPUT B>>>" in prompt
    assert "fine text [[B]]" not in prompt and "» [B]" in prompt
    assert "How good the output is." in prompt
    assert prompt.rstrip().endswith("[[C]] for a tie.")
    # a judge quoting the judged text cannot give a verdict with it
    assert parse_verdict("It says: fine text » [B]\nNothing else.", prompt=prompt).error is not None


@pytest.mark.parametrize(("answer", "value"), [
    ("Reasoning.\n[[A]]", "A"), ("**[[B]]**", "B"), ("[[C]]", "C"), ("[[tie]]", "C"), ("Verdict: B", "B"),
    ("Response A is better.", "A"), ("Assistant B wins.", "B"), ("Overall it is a tie.", "C"),
    ("Assistant B's answer is better.", "B"), ("Response A", "A"), ("I prefer Response B.", "B"),
])
def test_verdict_forms(answer, value):
    assert parse_verdict(answer).value == value


@pytest.mark.parametrize("answer", [
    "[[A]] or maybe [[B]]", "I cannot decide.", "A summary is given.", "I prefer a shorter summary.",
    "Response A is better written, response B is better.",
])
def test_ambiguous_or_missing_verdicts_fail(answer):
    parsed = parse_verdict(answer)
    assert parsed.value is None and parsed.error


def test_an_echoed_answer_format_is_not_a_verdict():
    pair = make_pairs(dataset(1).samples, "all").pairs[0]
    prompt = build_prompt(pair, Side("x", "A"), Side("y", "B"), DIM, dataset(1).info)
    last = prompt.splitlines()[-1]
    assert parse_verdict(last, prompt=prompt).value is None


# -- runs with judges of known behaviour ------------------------------------------------------------


def test_each_pair_is_judged_in_both_orders_with_both_traces():
    res = run(by_marker, dataset(1))
    assert len(res.judgments) == 6 and res.complete
    j = next(j for j in res.judgments if j.sample_id == "d0:S1|d0:S2")
    assert j.score == 0.0 and j.trace["consistent"] is True and j.trace["outcome"] == "B"
    ab, ba = j.trace["orders"]["ab"], j.trace["orders"]["ba"]
    assert (ab["verdict"], ba["verdict"]) == ("B", "A")
    assert ab["calls"][0]["prompt_sha256"] != ba["calls"][0]["prompt_sha256"]
    assert j.usage["verdict"].calls == 2


def test_a_judge_that_always_answers_a_is_all_position_bias(tmp_path):
    res = assay.evaluate(dataset(), method="pairwise", judge=ScriptedJudge(always_a), run_dir=tmp_path / "r")
    assert {j.score for j in res.judgments} == {0.5}
    assert all(j.trace["outcome"] == "inconsistent" for j in res.judgments)
    rep = run_report(tmp_path / "r", n_boot=200)["quality"]
    assert rep["consistency"] == 0.0 and rep["position_bias"] == 1.0 and rep["first_position_win_rate"] == 1.0
    bts = [v["bt"] for v in rep["systems"].values()]
    for v in rep["systems"].values():
        assert v["win_rate"] == 0.5 and v["low"] <= 0.5 <= v["high"]
        assert v["bt"] == pytest.approx(0.0, abs=1e-6)
    assert max(bts) - min(bts) < 1e-6  # no system ranked above another
    assert rep["human_agreement"]["accuracy"] == 0.0  # every verdict a tie: never a person's preference


def test_a_judge_that_reads_the_quality_marker_ranks_as_people_do(tmp_path):
    assay.evaluate(dataset(), method="pairwise", judge=ScriptedJudge(by_marker), run_dir=tmp_path / "r")
    rep = run_report(tmp_path / "r", n_boot=200)["quality"]
    assert rep["consistency"] == 1.0 and rep["position_bias"] is None and rep["tie_rate"] == 0.0
    order = sorted(rep["systems"], key=lambda s: rep["systems"][s]["bt"])
    assert order == SYSTEMS
    assert rep["systems"]["S4"]["win_rate"] == 1.0 and rep["systems"]["S1"]["win_rate"] == 0.0
    assert rep["human_agreement"]["accuracy"] == 1.0 and rep["human_agreement"]["kappa"] == pytest.approx(1.0)
    assert rep["human_agreement"]["n_pairs"] == 36


def test_a_judge_that_prefers_the_longer_output_is_length_controlled(tmp_path):
    ds = dataset(12, lengths={"S1": 30, "S2": 25, "S3": 20, "S4": 15})
    assay.evaluate(ds, method="pairwise", judge=ScriptedJudge(by_length), run_dir=tmp_path / "r")
    systems = run_report(tmp_path / "r", n_boot=0)["quality"]["systems"]
    for s in ("S1", "S4"):  # the longest and the shortest system
        raw, lc = systems[s]["win_rate"], systems[s]["lc_win_rate"]
        assert abs(raw - 0.5) > 0.2
        assert abs(lc - 0.5) < 0.5 * abs(raw - 0.5), (s, raw, lc)


def test_an_unreadable_verdict_is_a_parse_failure_never_a_score():
    def half(request: Request) -> str:
        a, _ = blocks(request)
        return "I cannot say." if marker(a) == 1 else "[[A]]"

    res = run(half, dataset(1), reasks=0)
    failed = [j for j in res.judgments if j.score is None]
    assert failed and all(j.status == "parse_failed" for j in failed)
    assert all("unreadable verdict" in j.error for j in failed)
    assert res.units["parse_failed"] == len(failed)


def test_dropping_inconsistent_pairs_records_them_unscored():
    res = run(always_a, dataset(1), inconsistent="drop")
    assert all(j.score is None and "inconsistent" in j.error for j in res.judgments)


def test_the_mtbench_preset_sends_the_papers_instruction():
    judge = ScriptedJudge(always_a)
    assay.evaluate(dataset(1), method="pairwise", judge=judge, options={"preset": "mtbench"})
    first = judge.requests[0]
    assert first.messages[0].role == "system" and "impartial judge" in first.messages[0].content
    assert "[The Start of Assistant A's Answer]" in first.messages[-1].content
    assert first.max_tokens == 2048 and first.temperature == 0.0


def test_estimate_counts_two_calls_per_pair_and_dimension_and_reads_every_stand_in_verdict():
    est = assay.evaluate(dataset(2), method="pairwise", judge=ScriptedJudge(always_a), estimate=True)
    assert isinstance(est, Estimate)
    assert est.units == 12
    assert [s.stage for s in est.stages] == ["verdict"]  # no re-ask: the stand-in's verdict is read
    assert est.total().calls == 2 * 12


def test_probe_reads_order_sensitivity_from_the_run_without_a_call(tmp_path):
    from assay.probe.run import probe

    judge = ScriptedJudge(always_a)
    assay.evaluate(dataset(), method="pairwise", judge=judge, run_dir=tmp_path / "a")
    asked = len(judge.requests)
    res = probe(tmp_path / "a", checks=["order_sensitivity", "self_consistency"], judge=judge, n_boot=200)
    assert len(judge.requests) == asked and res["calls"]["new"] == 0
    order = next(c for c in res["checks"] if c["check"] == "order_sensitivity")
    row = order["rows"][0]
    assert row["estimate"] == 1.0 and row["consistency"] == 0.0 and row["flagged"] is True
    assay.evaluate(dataset(), method="pairwise", judge=ScriptedJudge(by_marker), run_dir=tmp_path / "m")
    row = next(c for c in probe(tmp_path / "m", checks=["order_sensitivity"], n_boot=200)["checks"])["rows"][0]
    assert row["estimate"] == 0.5 and row["consistency"] == 1.0 and row["flagged"] is False


def test_a_pairwise_run_resumes_with_the_same_pairs_and_no_new_call(tmp_path):
    judge = ScriptedJudge(by_marker)
    first = assay.evaluate(dataset(3), method="pairwise", judge=judge, run_dir=tmp_path / "r",
                           options={"pairs": "random:2", "seed": 7})
    asked = len(judge.requests)
    again = assay.evaluate(dataset(3), method="pairwise", judge=judge, run_dir=tmp_path / "r",
                           options={"pairs": "random:2", "seed": 7})
    assert again.resumed and len(judge.requests) == asked
    assert sorted(j.sample_id for j in again.judgments) == sorted(j.sample_id for j in first.judgments)


def test_reference_and_steps_go_into_the_prompt(tmp_path):
    from assay.methods.geval.steps import steps_document

    ds = assay.load_dataset("summeval").select(docs=1, limit=2)
    steps = tmp_path / "steps.yaml"
    steps.write_text(steps_document("summeval", {"relevance": {"steps": "1. Read both.\n2. Compare the key points.",
                                                               "sha256": "x"}}))
    judge = ScriptedJudge(always_a)
    res = assay.evaluate(ds, method="pairwise", judge=judge, dimensions=["relevance"],
                         options={"steps": str(steps)})
    prompt = judge.requests[0].messages[-1].content
    assert "<<<REFERENCE SUMMARY>>>" in prompt and "Evaluation steps:\n1. Read both." in prompt
    assert res.manifest["artifacts"]["steps"]["relevance"]
    judge = ScriptedJudge(always_a)
    assay.evaluate(ds, method="pairwise", judge=judge, dimensions=["relevance"], options={"reference": False})
    assert "<<<REFERENCE SUMMARY>>>" not in judge.requests[0].messages[-1].content


def test_steps_for_another_dimension_are_refused_before_any_call(tmp_path):
    from assay.methods.geval.steps import steps_document

    steps = tmp_path / "steps.yaml"
    steps.write_text(steps_document("summeval", {"fluency": {"steps": "1. Read.", "sha256": "x"}}))
    judge = ScriptedJudge(always_a)
    with pytest.raises(ConfigError, match="no steps for dimension 'relevance'"):
        assay.evaluate(assay.load_dataset("summeval").select(docs=1, limit=2), method="pairwise", judge=judge,
                       dimensions=["relevance"], options={"steps": str(steps)})
    assert judge.requests == []
