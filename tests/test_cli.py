"""The assay command in-process: datasets, judges, run (embedded judge), export, replay and clear errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from assay.cli.main import app
from assay.run.store import RunStore

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_datasets_list_and_show():
    res = invoke("datasets")
    assert res.exit_code == 0 and "summeval" in res.output and "topical-chat" in res.output
    res = invoke("datasets", "topical-chat")
    assert "360 samples, 60 source documents, 6 systems" in res.output
    assert "groundedness" in res.output and "0-1" in res.output


def test_run_with_embedded_judge_then_export_and_replay(tmp_path):
    run_dir = tmp_path / "run"
    res = invoke("run", "--method", "direct", "--dataset", "qags-xsum", "--limit", "3", "--run-dir", str(run_dir),
                 "--quiet")
    assert res.exit_code == 0, res.output
    assert "consistency" in res.output and "calls 3" in res.output
    res = invoke("export", str(run_dir), "--format", "csv")
    assert res.exit_code == 0, res.output
    exported = pd.read_csv(run_dir / "judgments.csv")
    with RunStore(run_dir, readonly=True) as store:
        stored = {(j.sample_id, j.dimension): (j.status, j.score) for j in store.judgments()}
    assert len(exported) == 3 and {"sample_id", "dimension", "score", "status", "error"} <= set(exported.columns)
    assert {(r.sample_id, r.dimension): (r.status, None if pd.isna(r.score) else r.score)
            for r in exported.itertuples()} == stored  # every stored judgment, as stored
    # the same command resumes: nothing new to do, no call made
    res = invoke("run", "--method", "direct", "--dataset", "qags-xsum", "--limit", "3", "--run-dir", str(run_dir),
                 "--quiet")
    assert res.exit_code == 0, res.output
    assert "calls 0 (+0 from cache)" in res.output
    # replay re-answers every recorded call without the model
    replay_dir = tmp_path / "replayed"
    res = invoke("run", "--method", "direct", "--dataset", "qags-xsum", "--limit", "3", "--run-dir",
                 str(replay_dir), "--judge", f"replay:{run_dir}", "--quiet")
    assert res.exit_code == 0, res.output
    with RunStore(run_dir, readonly=True) as a, RunStore(replay_dir, readonly=True) as b:
        assert [(j.sample_id, j.score) for j in a.judgments()] == [(j.sample_id, j.score) for j in b.judgments()]


def test_replay_of_an_unrecorded_call_is_an_error(tmp_path):
    run_dir = tmp_path / "run"
    assert invoke("run", "--dataset", "qags-xsum", "--limit", "1", "--run-dir", str(run_dir), "-q").exit_code == 0

    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "assay.cli", "run", "--dataset", "qags-xsum", "--limit", "2",
                          "--run-dir", str(tmp_path / "r2"), "--judge", f"replay:{run_dir}", "-q"],
                         capture_output=True, text=True)
    assert res.returncode == 1
    assert "replay: the recorded run never made this call" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize(("args", "message", "code"), [
    (["run", "--dataset", "nope"], "unknown dataset 'nope'", 1),
    (["run", "--method", "gevel"], "unknown method 'gevel'", 1),
    (["run", "--judge", "gpt4"], "must look like BACKEND:MODEL", 1),
    (["run", "--judge", "llamacpp:/no/such.gguf"], "not found", 1),
    (["run", "--dimension", "fluency", "--dataset", "topical-chat"], "no dimension 'fluency'", 1),
    (["run", "--method", "direct", "--bogus", "1"], "has no option --bogus", 2),  # a usage error
])
def test_bad_input_gives_one_clear_line(args, message, code, tmp_path):
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "assay.cli", *args, "--run-dir", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert res.returncode == code, res.stderr  # docs/judges.md, "Exit codes": 1 an error before judging, 2 usage
    assert message in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "x").exists()  # refused before the run directory is made


def test_judges_check_embedded():
    res = invoke("judges", "llamacpp:smollm2")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["supports_logprobs"] is True and data["logprobs"] is True
    assert data["identity"]["backend"] == "llamacpp"
