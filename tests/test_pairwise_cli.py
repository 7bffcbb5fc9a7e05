"""``--method pairwise`` from the command line against a loopback judge that prefers the longer output: run,
meta (terminal and JSON), compare with a pointwise run, estimate, probe."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from assay.cli.main import app
from assay.testing import Behaviour, FakeOpenAIServer, prompt_of

runner = CliRunner()


def _block(prompt: str, name: str) -> str:
    return re.search(rf"<<<{name}>>>\n(.*?)\n<<<END {name}>>>", prompt, re.S).group(1)


def longer(body: dict) -> str:
    prompt = prompt_of(body)
    if "<<<SUMMARY A>>>" in prompt:
        a, b = _block(prompt, "SUMMARY A"), _block(prompt, "SUMMARY B")
        return "The longer one covers more.\n" + ("[[A]]" if len(a) >= len(b) else "[[B]]")
    if "<<<SUMMARY>>>" in prompt:  # the pointwise run: the longer, the higher
        return str(min(5, 1 + len(_block(prompt, "SUMMARY")) // 120))
    return "3"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_pairwise_from_the_command_line(tmp_path):
    with FakeOpenAIServer(default=Behaviour(text=longer), logprobs=False) as srv:
        judge = f"openai:fake-model@{srv.url}"
        common = ["--dataset", "summeval", "--docs", "3", "--dimension", "relevance", "--judge", judge,
                  "--judge-opt", "logprobs=false", "--answer-format", "free", "-q"]  # the verdicts as this judge writes
        est = invoke("run", "--method", "pairwise", "--pairs", "random:4", *common, "--estimate")
        assert est.exit_code == 0, est.output
        assert "24" in est.output  # 3 inputs x 4 pairs x 2 orders
        res = invoke("run", "--method", "pairwise", "--pairs", "random:4", *common, "--run-dir",
                     str(tmp_path / "pair"))
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == 24
        point = invoke("run", "--method", "direct", *common, "--run-dir", str(tmp_path / "point"))
        assert point.exit_code == 0, point.output
    out = tmp_path / "meta.json"
    meta = invoke("meta", str(tmp_path / "pair"), "--json", str(out), "--pair-bootstrap", "100")
    assert meta.exit_code == 0, meta.output
    assert "pairwise: relevance" in meta.output and "position bias" in meta.output
    rep = json.loads(out.read_text())["pairwise"]["relevance"]
    assert rep["consistency"] == 1.0  # the longer output wins in both orders
    assert set(rep) >= {"consistency", "position_bias", "tie_rate", "systems", "human_agreement"}
    system = next(iter(rep["systems"].values()))
    assert set(system) >= {"win_rate", "low", "high", "bt", "bt_low", "bt_high", "lc_win_rate"}
    assert set(rep["human_agreement"]) >= {"accuracy", "kappa", "n_pairs"}
    cmp_json = tmp_path / "cmp.json"
    cmp = invoke("compare", str(tmp_path / "point"), str(tmp_path / "pair"), "--json", str(cmp_json))
    assert cmp.exit_code == 0, cmp.output
    assert "which protocol agrees with people more" in cmp.output
    rows = json.loads(cmp_json.read_text())["protocols"]
    assert rows[0]["dimension"] == "relevance" and rows[0]["closer"] in ("pairwise", "pointwise", "neither")
    assert rows[0]["pairwise"]["n_pairs"] == rows[0]["pointwise"]["n_pairs"] > 0
