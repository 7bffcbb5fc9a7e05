"""``assay probe``: the statistics on hand-computed cases, length bias flagged (or not) on scripted judges built
that way, the order hook, re-asks served from the run's cache, imported runs, the command."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest

import assay
from assay.datasets import Dataset
from assay.errors import ConfigError
from assay.importer.write import ImportOptions, import_answers
from assay.judges.scripted import ScriptedJudge
from assay.meta.bootstrap import bootstrap_ci
from assay.methods import direct
from assay.probe import probe
from assay.probe import stats as st
from assay.probe.table import probe_rows
from assay.run.store import RunStore

NAN = float("nan")


# -- pure statistics, by hand ---------------------------------------------------------------------


def test_token_count_splits_words_and_punctuation():
    assert st.token_count("Hello, world! It's") == 7  # Hello , world ! It ' s
    assert st.token_count("   ") == 0


def test_partial_spearman_by_hand_and_as_pingouin():
    # within each pair of equal z, x rises while y falls: controlling for z leaves a perfect negative relation
    x, y, z = [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5], [1, 1, 2, 2, 3, 3]
    assert st.spearman(x, y) == pytest.approx(1 - 6 * 6 / (6 * 35))  # sum d^2 = 6
    assert st.partial_spearman(x, y, z) == pytest.approx(-1.0)
    rng = np.random.default_rng(3)
    a, b, c = rng.normal(size=40), rng.normal(size=40), rng.normal(size=40)
    assert st.partial_spearman(a, b + c, c) == pytest.approx(st.pingouin_partial(a, b + c, c), abs=1e-9)


def test_partial_spearman_undefined_when_too_few_or_fully_explained():
    assert np.isnan(st.partial_spearman([1, 2, 3], [1, 2, 3], [3, 2, 1]))
    assert np.isnan(st.partial_spearman([1, 2, 3, 4, 5], [5, 3, 4, 1, 2], [1, 2, 3, 4, 5]))  # x follows z exactly


def test_bootstrap_interval_of_a_constant_is_that_constant_and_seeded():
    values = np.array([2.0, 2.0, 2.0])
    assert bootstrap_ci(st.mean_boot(values), 3, n_boot=50) == (2.0, 2.0)
    v = np.array([1.0, 5.0, 2.0, 8.0, 3.0])
    assert bootstrap_ci(st.mean_boot(v), 5, seed=1) == bootstrap_ci(st.mean_boot(v), 5, seed=1)
    low, high = bootstrap_ci(st.mean_boot(v), 5, seed=1)
    assert 1.0 <= low < v.mean() < high <= 8.0


def test_exact_agreement_and_mean_std_over_runs():
    runs = np.array([[1, 2, 3, NAN], [1, 2, 4, 5], [1, 3, 3, NAN]], float)
    assert st.exact_agreement(runs) == pytest.approx(1 / 3)  # item 0 agrees; item 3 has one score only
    assert st.mean_run_std(np.array([[1, 2, 5], [3, 2, NAN]], float)) == pytest.approx(np.sqrt(2) / 2)


def test_scale_use_integer_and_continuous():
    use = st.scale_use([1, 2, 2, 5, 4.5], 1, 5, True)
    assert use["histogram"] == {"1": 1, "2": 2, "3": 0, "4": 1, "5": 1}  # 4.5 counted at its nearest value (4)
    assert use["share_used"] == pytest.approx(0.8) and use["fractional"] == pytest.approx(0.2)
    cont = st.scale_use([0.0, 0.05, 1.0, 0.55], 0, 1, False)
    assert cont["histogram"]["0-0.1"] == 2 and cont["histogram"]["0.9-1"] == 1
    assert cont["share_used"] == pytest.approx(0.3) and cont["fractional"] is None


def test_preference_gap_in_standard_deviations():
    # the judge ranks the human-written outputs on top, the humans at the bottom: 2 sd - (-2 sd)
    gap = st.preference_gap(np.array([3, 3, 1, 1.0]), np.array([1, 1, 3, 3.0]), np.array([1, 1, 0, 0], bool))
    assert gap == pytest.approx(4.0)
    assert np.isnan(st.preference_gap(np.array([1, 2.0]), np.array([1, 2.0]), np.array([1, 1], bool)))


# -- length bias: a judge biased by construction is flagged, a fair one is not ---------------------


def _tc_samples(topical_chat: Dataset, n: int) -> Dataset:
    """Topical-Chat engagingness samples whose output the direct prompt shows verbatim (so a script can find it)."""
    dim = topical_chat.info.dimension("engagingness")
    keep = [s for s in topical_chat.samples
            if s.output in direct.build_prompt(s, dim, topical_chat.info)][:n]
    return Dataset(info=topical_chat.info, samples=keep, sha256=topical_chat.sha256, path=topical_chat.path,
                   pool=topical_chat.all_samples)


def _by_output(data: Dataset, rate) -> ScriptedJudge:
    def answer(req):
        prompt = req.messages[-1].content
        hits = [s for s in data.samples if s.output in prompt]
        return str(rate(max(hits, key=lambda s: len(s.output)))) if hits else "no idea"
    return ScriptedJudge(answer, name="by-output")


def _noise(sample_id: str) -> int:
    return int(hashlib.sha256(sample_id.encode()).hexdigest(), 16) % 3 - 1  # -1, 0 or 1, unrelated to length


def _length_row(res):
    check = next(c for c in res["checks"] if c["check"] == "length_bias")
    return check, check["rows"][0]


def test_a_length_biased_judge_is_flagged(tmp_path, topical_chat):
    data = _tc_samples(topical_chat, 120)
    judge = _by_output(data, lambda s: min(3, 1 + st.token_count(s.output) // 15))  # longer reads as better
    assay.evaluate(data, method="direct", judge=judge, dimensions=["engagingness"], run_dir=tmp_path / "run")
    res = probe(tmp_path / "run", checks=["length_bias"], judge=judge)
    check, row = _length_row(res)
    assert check["computed"] and check["flagged"] is True and row["flagged"] is True
    assert row["estimate"] >= 0.1 and row["ci"][0] > 0
    assert row["estimate"] == pytest.approx(row["estimate_pingouin"], abs=1e-4)


def test_a_judge_that_follows_the_humans_is_not_flagged(tmp_path, topical_chat):
    data = _tc_samples(topical_chat, 120)
    judge = _by_output(data, lambda s: int(np.clip(round(s.human["engagingness"]) + _noise(s.id), 1, 3)))
    assay.evaluate(data, method="direct", judge=judge, dimensions=["engagingness"], run_dir=tmp_path / "run")
    res = probe(tmp_path / "run", checks=["length_bias"], judge=judge)
    check, row = _length_row(res)
    # Topical-Chat's humans do prefer longer responses: the raw correlation is there, the partial one is not
    assert row["rho_length"] > 0.15 and row["rho_length_ci"][0] > 0 and row["rho_human_length"] > 0.3
    assert check["computed"] and check["flagged"] is False and row["flagged"] is False
    assert row["estimate"] < 0.1


# -- re-asks: the order hook, the cache, the reasons ------------------------------------------------


def _checkeval_judge(first_only: bool) -> ScriptedJudge:
    """Yes to the question about the central topic wherever it is (order-free), or only when it is asked first
    (order-bound: a judge that reads the first question alone); no to every other question."""
    def answer(req):
        asked = req.messages[-1].content.split("# Questions", 1)[1]
        qs = re.findall(r"^Q(\d+): (.*)$", asked, re.M)
        return "\n".join(f"Q{i}: {'yes' if 'topic' in text and (i == '1' or not first_only) else 'no'}"
                          for i, text in qs)
    return ScriptedJudge(answer, name="order-first" if first_only else "order-free")


@pytest.mark.parametrize("first_only", [False, True])
def test_order_sensitivity_follows_the_judge(tmp_path, summeval, first_only):
    data = summeval.select(limit=6)
    judge = _checkeval_judge(first_only)
    assay.evaluate(data, method="checkeval", judge=judge, dimensions=["coherence"], run_dir=tmp_path / "run")
    res = probe(tmp_path / "run", checks=["order_sensitivity", "self_consistency"], budget=6, judge=judge)
    order = next(c for c in res["checks"] if c["check"] == "order_sensitivity")
    consistency = next(c for c in res["checks"] if c["check"] == "self_consistency")
    row = order["rows"][0]
    assert order["computed"] and row["n"] == 6
    if first_only:
        assert row["share_changed"] > 0 and order["flagged"] is True
        assert consistency["rows"][0]["exact_agreement"] < 1
    else:  # the answers are read back to their questions: the same questions, the same score
        assert row["estimate"] == 0 and row["share_changed"] == 0 and order["flagged"] is False
        assert consistency["rows"][0]["exact_agreement"] == 1 and consistency["rows"][0]["mean_std"] == 0
    assert len({r.messages[-1].content for r in judge.requests}) > len(data.samples)  # other orders were asked


def test_checkeval_settings_record_shuffle_seed_only_when_set():
    from assay.methods import make_method

    assert "shuffle_seed" not in make_method("checkeval").settings()  # older runs still resume
    assert make_method("checkeval", {"shuffle_seed": 3}).settings()["shuffle_seed"] == 3


def _sampled_judge() -> ScriptedJudge:
    return ScriptedJudge(lambda req: str(1 + (req.sample_index // 1000 + len(req.messages[-1].content)) % 5),
                         name="sampler")


def test_reasks_are_stored_and_served_from_the_cache_the_second_time(tmp_path, summeval):
    data = summeval.select(limit=8)
    judge = _sampled_judge()
    assay.evaluate(data, method="direct", judge=judge, dimensions=["coherence"], run_dir=tmp_path / "run",
                   options={"temperature": 0.7})
    with RunStore(tmp_path / "run", readonly=True) as store:
        before = len(list(store.calls.requests()))
    first = probe(tmp_path / "run", budget=4, judge=judge)
    # two repeats and one injected output per unit; the units share one article, so one reference call
    assert first["calls"]["new"] == 4 * 2 + 4 + 1
    with RunStore(tmp_path / "run", readonly=True) as store:
        assert len(list(store.calls.requests())) == before + first["calls"]["new"]  # kept in the run's cache
        assert store.get_meta("probe")["checks"] == json.loads(json.dumps(first["checks"]))
    asked = len(judge.requests)
    second = probe(tmp_path / "run", budget=4, judge=judge)
    assert second["calls"] == {"new": 0, "cached": first["calls"]["new"] + first["calls"]["cached"]}
    assert len(judge.requests) == asked
    assert second["checks"] == first["checks"]
    consistency = next(c for c in first["checks"] if c["check"] == "self_consistency")
    assert consistency["computed"] and consistency["rows"][0]["runs"] == 3
    assert consistency["rows"][0]["exact_agreement"] < 1  # the script answers each sample index differently


def test_budget_zero_and_deterministic_direct_say_why_not(tmp_path, summeval):
    data = summeval.select(limit=4)
    judge = _sampled_judge()
    assay.evaluate(data, method="direct", judge=judge, dimensions=["coherence"], run_dir=tmp_path / "run")
    res = probe(tmp_path / "run", budget=0, judge=judge)
    reasons = {c["check"]: c["reason"] for c in res["checks"] if not c["computed"]}
    assert reasons["injection"].startswith("budget 0") and res["calls"]["new"] == 0
    res = probe(tmp_path / "run", checks=["self_consistency", "order_sensitivity"], budget=2, judge=judge)
    reasons = {c["check"]: c["reason"] for c in res["checks"]}
    assert "deterministic judge" in reasons["self_consistency"]
    assert "no reorderable" in reasons["order_sensitivity"]


def test_an_imported_run_is_probed_without_a_judge(tmp_path, summeval):
    data = summeval.select(docs=1)
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"id": s.id, "a": f"Score: {1 + i % 5}"}) + "\n"
                            for i, s in enumerate(data.samples)), encoding="utf-8")
    import_answers(path, ImportOptions(method="direct", dataset="summeval", dimension="coherence", answers="a",
                                       id="id"), tmp_path / "run")
    res = probe(tmp_path / "run")
    by = {c["check"]: c for c in res["checks"]}
    assert by["scale_use"]["computed"] and by["length_bias"]["computed"]
    for name in ("self_consistency", "order_sensitivity", "injection"):
        assert not by[name]["computed"] and by[name]["reason"].startswith("imported run")
    assert "references carry no human ratings" in by["preference_gap"]["reason"]


def test_a_judge_other_than_the_runs_is_refused(tmp_path, summeval):
    data = summeval.select(limit=4)
    assay.evaluate(data, method="direct", judge=_sampled_judge(), dimensions=["coherence"], run_dir=tmp_path / "run",
                   options={"temperature": 0.7})
    with pytest.raises(ConfigError, match="not the run's judge"):
        probe(tmp_path / "run", checks=["injection"], judge=ScriptedJudge(lambda r: "3", name="other"))


def test_probe_command_prints_the_table_and_writes_json(tmp_path, summeval, cli, monkeypatch):
    from assay.cli import main as cli_main

    monkeypatch.setattr(cli_main.out, "width", 250)  # one table row per line
    data = summeval.select(limit=6)
    assay.evaluate(data, method="direct", judge=_sampled_judge(), dimensions=["coherence"], run_dir=tmp_path / "run")
    code, out, _ = cli("probe", str(tmp_path / "run"), "--budget", "0", "--json", str(tmp_path / "p.json"),
                       "--checks", "scale_use,injection", "--no-save")
    with RunStore(tmp_path / "run", readonly=True) as store:
        assert store.get_meta("probe") is None  # --no-save
    assert code == 0 and "scale_use" in out and "not computed: budget 0" in out and "0 new" in out
    saved = json.loads((tmp_path / "p.json").read_text())
    assert [c["check"] for c in saved["checks"]] == ["scale_use", "injection"]
    assert saved["checks"][1]["reason"].startswith("budget 0") and saved["notes"] == []
    code, _, err = cli("probe", str(tmp_path / "run"), "--checks", "lenght_bias")
    assert code == 1 and "unknown check 'lenght_bias'" in err


# -- the embedded judge, end to end ---------------------------------------------------------------


def test_probe_end_to_end_with_the_embedded_judge(tmp_path, topical_chat, smollm2):
    data = topical_chat.select(limit=3)  # about 45 s on 2 busy cores
    assay.evaluate(data, method="direct", judge=smollm2, dimensions=["engagingness"], run_dir=tmp_path / "run",
                   options={"temperature": 0.8})
    first = probe(tmp_path / "run", budget=2, judge=smollm2)
    by = {c["check"]: c for c in first["checks"]}
    assert by["scale_use"]["computed"] and by["self_consistency"]["computed"]
    assert by["injection"]["rows"][0]["n"] <= 2 and first["calls"]["new"] > 0
    assert probe(tmp_path / "run", budget=2, judge=smollm2)["calls"]["new"] == 0



def test_seal_shuffle_lists_units_in_another_order_and_reads_answers_back_to_them():
    ds = assay.load_dataset("summeval").select(docs=1, limit=1)

    def answer(req):  # 1 for sentences of odd length, in the order the prompt lists them
        prompt = req.messages[-1].content
        example = json.loads(re.findall(r"Example: (.*)", prompt)[-1])
        units = re.findall(r"^(s\d+): (.*)$", prompt, re.M)
        key = next(iter(example))
        if units and isinstance(example[key], str) and example[key].count(",") == len(units) - 1:
            return json.dumps({key: ",".join(str(len(text) % 2) for _, text in units)})
        return json.dumps(example)

    judge = ScriptedJudge(answer)
    stored = assay.evaluate(ds, method="seal", judge=judge, dimensions=["fluency"]).judgments[0]
    shuffled = assay.evaluate(ds, method="seal", judge=judge, dimensions=["fluency"],
                              options={"shuffle_seed": 1}).judgments[0]
    ids = [u["id"] for u in stored.trace["units"]]
    assert [u["id"] for u in shuffled.trace["units"]] != ids and sorted(u["id"] for u in shuffled.trace["units"]) \
        == sorted(ids)
    by_unit = {d["unit"]: d for d in stored.trace["decisions"]}
    assert all(by_unit[d["unit"]] == d for d in shuffled.trace["decisions"])
    assert shuffled.score == stored.score and shuffled.trace["shuffle_seed"] == 1


def test_bootstrap_resamples_whole_documents_when_given_them():
    values = np.array([0.0, 0.0, 10.0, 10.0])
    # two documents whose outputs agree: a resample holds whole documents, so the mean is 0, 5 or 10
    seen = []
    bootstrap_ci(lambda idx: seen.append(values[idx].mean()) or values[idx].mean(axis=1), 4, n_boot=200,
                    groups=["a", "a", "b", "b"])
    assert set(np.round(seen, 9)) <= {0.0, 5.0, 10.0} and len(seen) == 200
    assert bootstrap_ci(st.mean_boot(values), 4, n_boot=200, groups=["a", "a", "b", "b"]) == (0.0, 10.0)


def test_the_viewer_shows_the_last_probe_of_a_run(tmp_path, summeval):
    from assay.cli.view import sections

    data = summeval.select(limit=6)
    assay.evaluate(data, method="direct", judge=_sampled_judge(), dimensions=["coherence"], run_dir=tmp_path / "run")
    assert [s.id for s in sections([tmp_path / "run"])] == ["overview", "samples"]  # not probed: no tab
    probe(tmp_path / "run", budget=0)
    tabs = {s.id: s for s in sections([tmp_path / "run"])}
    [table] = tabs["diagnostics"].data["tables"]
    cells = [c for row in table["rows"] for c in row]
    assert table["title"].startswith("probe: direct") and "scale_use" in cells
    assert any(c.startswith("not computed: budget 0") for c in cells)


def test_unrated_references_give_the_judges_side_of_the_preference_gap(tmp_path, summeval):
    data = summeval.select(limit=6)
    references = {s.reference for s in data.samples}
    judge = ScriptedJudge(lambda req: "5" if any(r in req.messages[-1].content for r in references) else "2",
                          name="likes-references")
    assay.evaluate(data, method="direct", judge=judge, dimensions=["coherence"], run_dir=tmp_path / "run")
    res = probe(tmp_path / "run", checks=["preference_gap"], budget=4, judge=judge)
    (gap,) = res["checks"]
    assert gap["computed"] and "human side is not computed" in gap["method"]
    row = gap["rows"][0]
    assert row["n"] == 4 and row["estimate"] == 3.0 and row["human_gap"] is None and gap["flagged"] is None
    (shown,) = probe_rows(res)
    assert shown[4:7] == ("3.000", "[3.000, 3.000]", "-") and "human side not computed" in shown[7]
    assert probe(tmp_path / "run", checks=["preference_gap"], budget=0)["checks"][0]["reason"].startswith(
        "the dataset's human-written references carry no human ratings")


def test_few_items_or_documents_are_neither_flagged_nor_resampled_by_document(tmp_path, topical_chat):
    data = _tc_samples(topical_chat, 12)  # two dialogue contexts
    judge = _by_output(data, lambda s: min(3, 1 + st.token_count(s.output) // 15))
    assay.evaluate(data, method="direct", judge=judge, dimensions=["engagingness"], run_dir=tmp_path / "run")
    check, row = _length_row(probe(tmp_path / "run", checks=["length_bias"], judge=judge))
    assert row["estimate"] is not None and row["flagged"] is None and check["flagged"] is None
    assert "too few items" in row["note"] and row["resampled"] == "items"
