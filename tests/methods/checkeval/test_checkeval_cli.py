"""The CheckEval commands over HTTP: checklist build -> show -> run --method checkeval -> resume.

The judge is an OpenAI-compatible loopback server answering from a script, so the point here is the
commands around the model: what they write, print and store, and that a second run pays nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from typer.testing import CliRunner

from assay.cli.main import app
from assay.methods.checkeval.checklist import stage_counts
from assay.methods.checkeval.shipped import load_checklist
from assay.run.store import RunStore
from assay.testing import Behaviour, FakeOpenAIServer

runner = CliRunner()
NEW = "Does the response pick up the last thing the other speaker said?"


def _answer(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if "widen the coverage" in prompt:  # diversification
        return f"1-1-1. {NEW}\n1-1-2. Does the response stay on what was just said?"
    if "Break each seed question" in prompt:  # elaboration
        return "1-1. (seed)\n1-1-1. Does the response refer to something said in the history?"
    if "Remove the questions that fail" in prompt:  # filter: keep all but one, copied exactly
        pool = json.loads(re.search(r"6\) Sub-dimensions and questions\n(\{.*?\n\})", prompt, re.DOTALL).group(1))
        removed = "Does the response stay on what was just said?"
        keep = {sub: [q for q in qs if q != removed] for sub, qs in pool.items()}
        return json.dumps({"keep": keep, "removed": [{"question": removed, "criterion": "redundancy"}]})
    # evaluation: answer every question of the group 'yes', except the one grown by diversification
    asked = re.findall(r"^Q(\d+): (.+)$", prompt, re.MULTILINE)
    return "\n".join(f"Q{k}: {'no' if text.strip() == NEW else 'yes'}" for k, text in asked)


def test_build_show_run_and_resume_over_http(tmp_path):
    path = tmp_path / "tc-coherence.yaml"
    with FakeOpenAIServer(default=Behaviour(text=_answer)) as server:
        judge = f"openai:fake-model@{server.url}"
        env = {"OPENAI_API_KEY": "sk-unused", "COLUMNS": "200"}
        res = runner.invoke(app, ["checklist", "build", "--dataset", "topical-chat", "--dimension", "coherence",
                                  "--judge", judge, "-o", str(path)], env=env)
        assert res.exit_code == 0, res.output
        built = load_checklist(str(path))
        counts = stage_counts(built)["coherence"]
        assert counts["seed"] == 4 and counts["diversification"] >= 1 and counts["filtered out"] >= 1
        texts = [q.text for _, q in built.dimension("coherence").questions() if q.kept]
        assert NEW in texts and "Does the response stay on what was just said?" not in texts
        assert built.build.judge["model"] == "fake-model"

        shown = runner.invoke(app, ["checklist", "show", str(path)], env=env)
        assert shown.exit_code == 0 and "final checklist" in shown.output

        run_dir = tmp_path / "run"
        args = ["run", "--method", "checkeval", "--checklist", str(path), "--dataset", "topical-chat",
                "--dimension", "coherence", "--limit", "2", "--judge", judge, "--run-dir", str(run_dir), "-q"]
        first = runner.invoke(app, args, env=env)
        assert first.exit_code == 0, first.output
        calls = len(server.requests)
        again = runner.invoke(app, args, env=env)
        assert again.exit_code == 0 and len(server.requests) == calls  # resumed: nothing asked twice

    with RunStore(run_dir, readonly=True) as store:
        judgments = store.judgments()
    assert len(judgments) == 2
    kept = len(texts)
    for j in judgments:
        assert j.trace["asked"] == kept and j.trace["answered"] == kept
        assert j.score == (kept - 1) / kept  # every 'yes' but the diversified question's 'no'
        assert j.trace["checklist"]["sha256"]
