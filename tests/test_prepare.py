"""``assay.prepare``: one place builds a method's artifact (judge, call cache, build, file), and the CLI's build
commands go through it. Scripted judges: the point is the wiring around the model, not the model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import assay
import assay.judges
from assay.common.hashing import content_hash
from assay.errors import ConfigError
from assay.judges.base import Request
from assay.judges.scripted import ScriptedJudge
from assay.methods.checkeval.checklist import checklist_hash
from assay.methods.checkeval.shipped import load_checklist
from assay.methods.gereval.rubric import load_rubric
from assay.methods.geval.steps import load_steps_document

CRITERIA = {"criteria": [
    {"name": "Engagement", "description": "Whether the response keeps the other speaker interested.", "scale": "1-5"},
    {"name": "Tone", "description": "Whether the response sounds friendly and polite.", "scale": ["poor", "fair",
                                                                                                    "good"]},
]}
INSTRUCTION = {"instruction": "Read the conversation and the response, then decide how well it does this."}
NEW = "Does the response pick up the last thing the other speaker said?"


class ClosingJudge(ScriptedJudge):
    """A scripted judge that records whether it was closed."""

    closed = False

    async def aclose(self) -> None:
        self.closed = True


def _steps(request: Request) -> str:
    if "groundedness" in request.messages[-1].content.lower().split("rate a")[-1][:80]:
        return "I would rather not."  # no numbered or bulleted steps
    return "1. Read the conversation.\n2. Rate the response."


def _rubric_answer(request: Request) -> str:
    return json.dumps(INSTRUCTION if "scoring instruction" in request.messages[0].content else CRITERIA)


def _checklist_answer(request: Request) -> str:
    prompt = request.messages[-1].content
    if "widen the coverage" in prompt:
        return f"1-1-1. {NEW}"
    if "Break each seed question" in prompt:
        return "1-1. (seed)\n1-1-1. Does the response refer to something said in the history?"
    if "Remove the questions that fail" in prompt:
        pool = json.loads(re.search(r"6\) Sub-dimensions and questions\n(\{.*?\n\})", prompt, re.DOTALL).group(1))
        return json.dumps({"keep": pool, "removed": []})
    raise AssertionError(prompt[:80])


def test_exported_lazily_from_assay() -> None:
    import subprocess
    import sys

    import assay.run.prepare

    assert assay.prepare is assay.run.prepare.prepare and assay.prepare_async is assay.run.prepare.prepare_async
    assert assay.PrepareResult is assay.run.prepare.PrepareResult and {"prepare", "prepare_async"} <= set(dir(assay))
    assert all(hasattr(assay, name) for name in assay.__all__)
    code = "import sys, assay; print('assay.run.prepare' in sys.modules)"  # the build steps load on first use only
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_steps_written_hashed_and_a_rerun_is_free_with_the_cache(tmp_path: Path) -> None:
    judge = ScriptedJudge(lambda r: "1. Read the conversation.\n2. Rate the response.")
    kwargs: dict[str, Any] = dict(dataset="topical-chat", judge=judge, dimensions=["coherence", "naturalness"],
                                  options={"max_tokens": 64}, cache_dir=tmp_path / "cache")
    first = assay.prepare("geval-steps", out=tmp_path / "steps.yaml", **kwargs)
    text = (tmp_path / "steps.yaml").read_text(encoding="utf-8")
    dataset, entries = load_steps_document(text, "steps.yaml")
    assert first.path == tmp_path / "steps.yaml" and first.text == text and first.sha256 == content_hash(text)
    assert dataset == "topical-chat" and set(entries) == {"coherence", "naturalness"} == set(first.value)
    assert first.method == "geval" and first.complete and first.failures == []
    assert [r.max_tokens for r in judge.requests] == [64, 64]
    assert first.calls == 2 and first.cached_calls == 0 and first.usage["steps"].calls == 2

    again = assay.prepare("geval-steps", out=tmp_path / "again.yaml", **kwargs)
    assert len(judge.requests) == 2  # every call served from the cache: nothing paid twice
    assert again.calls == 0 and again.cached_calls == 2 and again.sha256 == first.sha256


def test_steps_missing_for_a_dimension_are_a_failure_and_no_file(tmp_path: Path) -> None:
    out = tmp_path / "steps.yaml"
    built = assay.prepare("geval-steps", dataset="topical-chat", judge=ScriptedJudge(_steps),
                          dimensions=["coherence", "groundedness"], out=out)
    assert not out.exists() and built.path is None and built.text is None and not built.complete
    assert len(built.failures) == 1 and "no usable steps for groundedness" in built.failures[0]
    assert set(built.value) == {"coherence"}  # what was written is still returned


@pytest.mark.parametrize(("artifact", "kwargs", "message"), [
    ("checklists", {}, "Did you mean 'checklist'?"),
    ("geval-steps", {"options": {"max_token": 10}}, "max_token"),
    ("geval-steps", {"dimensions": ["coherense"]}, "coherense"),
    ("checklist", {"dimensions": ["fluency"]}, "fluency"),
    ("checklist", {"options": {"seeds": "no-such-checklist"}}, "no-such-checklist"),
    ("rubric", {"dimensions": ["coherence"]}, "brings its own criteria"),
    ("rubric", {"options": {"condition": "zero-shot"}}, "condition"),
])
def test_bad_input_is_refused_before_the_judge_is_loaded(artifact: str, kwargs: dict[str, Any], message: str,
                                                         monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def refuse(*args: Any, **kw: Any) -> None:
        raise AssertionError("the judge was loaded before the input was checked")

    monkeypatch.setattr(assay.judges, "load_judge", refuse)
    with pytest.raises(ConfigError, match=re.escape(message)):
        assay.prepare(artifact, dataset="topical-chat", judge="scripted:x", out=tmp_path / "x", **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_a_judge_spec_is_loaded_and_closed_a_judge_object_stays_open(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[ClosingJudge] = []

    def load(spec: str, **options: Any) -> ClosingJudge:
        assert spec == "scripted:x" and options == {"timeout": 5}
        loaded.append(ClosingJudge(lambda r: "1. Read it.\n2. Rate it."))
        return loaded[-1]

    monkeypatch.setattr(assay.judges, "load_judge", load)
    statuses: list[str] = []
    assay.prepare("geval-steps", dataset="topical-chat", judge="scripted:x", dimensions=["coherence"],
                  judge_options={"timeout": 5}, on_status=statuses.append)
    assert loaded[0].closed and statuses[0] == "loading judge scripted:x"
    assert any(s.startswith("preparing geval-steps") for s in statuses)
    own = ClosingJudge(lambda r: "1. Read it.\n2. Rate it.")
    assay.prepare("geval-steps", dataset="topical-chat", judge=own, dimensions=["coherence"])
    assert not own.closed  # its owner may use it again


async def test_prepare_async_from_a_running_loop(tmp_path: Path) -> None:
    built = await assay.prepare_async("rubric", dataset="topical-chat", judge=ScriptedJudge(_rubric_answer),
                                      out=tmp_path / "rubric.json")
    rubric = load_rubric(tmp_path / "rubric.json")
    assert [c.name for c in rubric.criteria] == ["Engagement", "Tone"] == [c.name for c in built.value.criteria]
    assert built.sha256 == rubric.content_hash() and built.method == "gereval" and built.complete
    assert built.usage["criteria"].calls == 1 and built.usage["instruction"].calls == 2 and built.calls == 3


def test_rubric_with_an_own_task_file_and_without_criteria(tmp_path: Path) -> None:
    task = tmp_path / "task.txt"
    task.write_text("Judge how funny the reply is.\n", encoding="utf-8")
    judge = ScriptedJudge(["no json"] * 2)
    built = assay.prepare("rubric", dataset="topical-chat", judge=judge, out=tmp_path / "r.json",
                          options={"task_file": str(task), "reasks": 1})
    assert "Judge how funny the reply is." in judge.requests[0].messages[0].content
    assert built.value.criteria == () and not built.complete and "no valid criteria" in built.failures[0]
    assert load_rubric(tmp_path / "r.json").provenance.discarded  # the failure is kept on file
    assert any("no criteria" in n for n in built.notes)


def test_checklist_built_filtered_and_hashed_as_runs_record_it(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "tc.yaml"
    built = assay.prepare("checklist", dataset="topical-chat", judge=ScriptedJudge(_checklist_answer),
                          dimensions=["coherence"], options={"name": "tc-coh", "max_attempts": 1}, out=out)
    cl = load_checklist(str(out))
    assert cl.name == "tc-coh" and [d.name for d in cl.dimensions] == ["coherence"]
    assert NEW in [q.text for _, q in cl.dimension("coherence").questions()]
    assert built.sha256 == checklist_hash(cl) and built.method == "checkeval"
    assert built.failures == list(cl.build.failures) and built.usage["build-filter"].calls == 1


def test_cli_rubric_generate_keeps_its_output_and_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          cli: Any) -> None:
    monkeypatch.setattr(assay.judges, "load_judge", lambda spec, **kw: ScriptedJudge(_rubric_answer))
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "rubric.json"
    code, stdout, _ = cli("rubric", "generate", "--dataset", "topical-chat", "-o", str(out),
                          "--cache", str(tmp_path / "cache"))
    assert code == 0, stdout
    assert [c.name for c in load_rubric(out).criteria] == ["Engagement", "Tone"]
    assert "calls 3, tokens" in stdout and (tmp_path / "cache" / "run.sqlite").exists()

    monkeypatch.setattr(assay.judges, "load_judge", lambda spec, **kw: ScriptedJudge(lambda r: "no json"))
    code, _, stderr = cli("rubric", "generate", "--dataset", "topical-chat", "-o", str(out), "--reasks", "0")
    assert code == 1 and "no valid criteria" in stderr and "every criteria answer was invalid" in stderr
    assert load_rubric(out).provenance.discarded  # the failed rubric is kept on file, as before
