"""CheckEval with the authors' released question pools and the paper preset, checked against the released files."""

from __future__ import annotations

import asyncio
import hashlib
from importlib import resources
from pathlib import Path

import pytest
import yaml

import assay
from assay.errors import ConfigError
from assay.judges.middleware import ManagedJudge
from assay.judges.scripted import ScriptedJudge
from assay.methods.checkeval.build import (
    PAPER_PER_SEED,
    BuildSettings,
    build_checklist,
    diversification_prompt,
    elaboration_prompt,
)
from assay.methods.checkeval.checklist import stage_counts
from assay.methods.checkeval.method import CheckEvalOptions
from assay.methods.checkeval.paper import PAPER_POOLS, split_questions
from assay.methods.checkeval.shipped import load_checklist, shipped_checklists
from published import published_dir

POOLS = resources.files("assay.methods.checkeval").joinpath("checklists/paper")
STAGES = ("seed", "diversification", "elaboration")
# Questions per released file, counted as the data README counts them (one per '?'); the diversification and
# elaboration files repeat the seed questions first. Totals: SummEval 15 + 50 + 87, Topical-Chat 18 + 49 + 76.
FILE_COUNTS = {
    "summeval-paper": {"coherence": (3, 10, 16), "consistency": (3, 15, 17), "fluency": (4, 15, 28),
                       "relevance": (5, 10, 26)},
    "topical-chat-paper": {"naturalness": (5, 14, 20), "coherence": (4, 10, 15), "engagingness": (4, 14, 21),
                           "groundedness": (5, 11, 20)},
}
# New questions per stage once the repeated seeds are taken out: the paper's Tables 5 and 6 (SummEval exactly;
# Topical-Chat naturalness elaboration is 15 in the released file, 14 in Table 6).
POOL_COUNTS = {
    "summeval-paper": {"coherence": (3, 7, 13), "consistency": (3, 12, 14), "fluency": (4, 11, 24),
                       "relevance": (5, 5, 21)},
    "topical-chat-paper": {"naturalness": (5, 9, 15), "coherence": (4, 6, 11), "engagingness": (4, 10, 17),
                           "groundedness": (5, 6, 15)},
}


def _count(path: Path | object) -> int:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))  # type: ignore[attr-defined]
    return sum(str(v).count("?") for v in data["sub_aspect"].values())


def _released_files() -> list[str]:
    return [f"{pool.folder}/{dim}_{stage}.yaml" for name, pool in PAPER_POOLS.items()
            for dim in pool.dimensions for stage in STAGES]


def test_shipped_pools_are_the_released_files_byte_for_byte() -> None:
    shared = published_dir("checkeval_official")
    for rel in _released_files():
        assert hashlib.sha256(POOLS.joinpath(rel).read_bytes()).hexdigest() == \
            hashlib.sha256((shared / rel).read_bytes()).hexdigest(), rel


def test_provenance_records_every_files_sha256_and_the_licence() -> None:
    prov = yaml.safe_load(POOLS.joinpath("provenance.yaml").read_text())
    assert prov["source"] == "https://github.com/yukyunglee/CheckEval" and prov["licence"].startswith("MIT")
    assert sorted(prov["files"]) == sorted(_released_files())  # 24 files: 8 dimensions x 3 stages
    for rel, entry in prov["files"].items():
        assert entry["sha256"] == hashlib.sha256(POOLS.joinpath(rel).read_bytes()).hexdigest(), rel
        assert entry["path"] == f"prompt/{rel}"
    assert "Copyright (c) 2025 Yukyung Lee" in POOLS.joinpath("LICENSE").read_text()


def test_question_counts_per_file_are_the_released_ones() -> None:
    for name, dims in FILE_COUNTS.items():
        folder = PAPER_POOLS[name].folder
        for dim, counts in dims.items():
            got = tuple(_count(POOLS.joinpath(f"{folder}/{dim}_{stage}.yaml")) for stage in STAGES)
            assert got == counts, (name, dim)
    shared = published_dir("checkeval_official")
    for name, dims in FILE_COUNTS.items():
        totals = [sum(_count(shared / PAPER_POOLS[name].folder / f"{d}_{s}.yaml") for d in dims) for s in STAGES]
        assert totals == [sum(c[i] for c in dims.values()) for i in range(3)]
    assert [sum(c[i] for c in FILE_COUNTS["summeval-paper"].values()) for i in range(3)] == [15, 50, 87]
    assert [sum(c[i] for c in FILE_COUNTS["topical-chat-paper"].values()) for i in range(3)] == [18, 49, 76]


def test_checklists_keep_every_question_with_its_stage() -> None:
    assert {"summeval-paper", "topical-chat-paper"} <= set(shipped_checklists())
    for name, dims in POOL_COUNTS.items():
        cl = load_checklist(name)
        counts = stage_counts(cl)
        for dim, (seed, div, elab) in dims.items():
            c = counts[dim]
            assert (c["seed"], c["diversification"], c["elaboration"]) == (seed, div, elab), (name, dim)
            assert c["filtered out"] == 0 and c["final"] == seed + div + elab  # pre-filter: all kept
            files = FILE_COUNTS[name][dim]
            assert (files[1] - seed, files[2] - seed) == (div, elab)  # each grown file repeats the seeds
        for dim in cl.dimensions:
            for sub in dim.sub_dimensions:
                seeds = {q.id for q in sub.questions if q.origin == "seed"}
                assert all(q.seed in seeds for q in sub.questions if q.origin != "seed")
    totals = {n: sum(c["final"] for c in stage_counts(load_checklist(n)).values()) for n in POOL_COUNTS}
    assert totals == {"summeval-paper": 122, "topical-chat-paper": 107}  # the paper's final lists: 111 / 105


def test_a_seed_repeated_with_other_punctuation_is_not_a_new_question() -> None:
    eng = load_checklist("topical-chat-paper").dimension("engagingness")
    texts = [q.text for _, q in eng.questions()]
    assert "Is the response friendly, polite and empathetic?" in texts
    assert "Is the response friendly, polite, and empathetic?" not in texts
    assert split_questions("Is it A?  Is it\n B? ") == ["Is it A?", "Is it B?"]
    summ = load_checklist("summeval-paper").dimension("coherence")
    assert summ.definition.startswith("the collective quality of all sentences.")


def test_paper_preset_settings_grouping_and_definition_placement(tmp_path: Path) -> None:
    tc = assay.load_dataset("topical-chat").select(limit=1)
    judge = ScriptedJudge(lambda r: "\n".join(f"Q{i}: Yes" for i in range(1, r.messages[-1].content.count("\nQ"))))
    res = assay.evaluate(tc, method="checkeval", judge=judge, dimensions=["groundedness"], run_dir=tmp_path / "r",
                         options={"preset": "paper"})
    reqs = judge.requests
    assert len(reqs) == 2  # one prompt per sub-dimension (Relevance 15 questions, Consistency 11), no packing
    assert {(r.temperature, r.seed, r.max_tokens) for r in reqs} == {(1.0, 42, 200)}
    sizes = sorted(r.messages[-1].content.count("\nQ") - 2 for r in reqs)  # minus the answer-format lines
    assert sizes == [11, 15]
    p = reqs[0].messages[-1].content
    assert p.index("# Dimension\nGroundedness - Given the fact") < p.index("# Instructions") < p.index("<<<")
    settings = res.manifest["method_settings"]
    assert (settings["preset"], settings["temperature"], settings["seed"], settings["max_tokens"],
            settings["grouping"], settings["definition"]) == ("paper", 1.0, 42, 200, "sub_dimension", "before")
    assert res.manifest["artifacts"]["checklist"]["name"] == "topical-chat-paper"
    assert res.judgments[0].trace["asked"] == 26


def test_paper_preset_refuses_conflicts_and_datasets_without_a_pool(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="preset 'paper' sets temperature=1.0"):
        CheckEvalOptions(preset="paper", temperature=0)
    assert CheckEvalOptions(preset="paper", temperature="1", checklist="summeval").checklist == "summeval"
    assert CheckEvalOptions().grouping == "packed" and CheckEvalOptions().definition == "after"
    with pytest.raises(ConfigError, match="released question pools"):
        assay.evaluate(assay.load_dataset("qags-xsum").select(limit=1), method="checkeval",
                       judge=ScriptedJudge(["Q1: yes"]), run_dir=tmp_path / "q", options={"preset": "paper"})


def test_augmentation_asks_for_the_pools_questions_per_seed() -> None:
    pools = [stage_counts(load_checklist(n)) for n in PAPER_POOLS]
    seeds = sum(c["seed"] for p in pools for c in p.values())
    for stage in ("diversification", "elaboration"):
        per_seed = sum(c[stage] for p in pools for c in p.values()) / seeds  # 66/33 and 130/33
        assert PAPER_PER_SEED[stage] == round(per_seed), stage
    info = assay.load_dataset("topical-chat").info
    dim = load_checklist("topical-chat").dimension("coherence")
    assert "Write 2 new questions per seed" in diversification_prompt(info, dim)
    assert "into 4 narrower sub-questions" in elaboration_prompt(info, dim, "Continuity")
    assert "Write 5 new questions per seed" in diversification_prompt(info, dim, 5)
    assert BuildSettings().diversification_per_seed == 2 and BuildSettings().elaboration_per_seed == 4


def test_build_passes_the_count_setting_into_its_prompts() -> None:
    judge = ScriptedJudge(lambda r: "nothing usable")
    settings = BuildSettings(reasks=0, filter=False, diversification_per_seed=3, elaboration_per_seed=6)
    cl = asyncio.run(build_checklist(load_checklist("topical-chat"), assay.load_dataset("topical-chat").info,
                                     ManagedJudge(judge), settings, ["coherence"], name="x"))
    prompts = [r.messages[-1].content for r in judge.requests]
    assert sum("Write 3 new questions per seed" in p for p in prompts) == 1
    assert sum("into 6 narrower sub-questions" in p for p in prompts) == 3  # one per sub-dimension
    assert cl.build is not None and cl.build.settings["elaboration_per_seed"] == 6
