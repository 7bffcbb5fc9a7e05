"""The API key is written nowhere: not in the run directory, its exports and reports, nor in any output or log."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

import assay
from assay.judges.openai import OpenAIJudge, public_url
from assay.testing import FakeOpenAIServer

# A key no other test, dataset or library could produce by chance.
SECRET = f"sk-assay-{uuid.uuid4().hex}"


def leaks(root: Path, *texts: str) -> list[str]:
    """Where any 12 consecutive characters of the secret's random part occur (a masked key still leaks
    that much): files under ``root``, read as bytes, and the given texts."""
    token = SECRET.removeprefix("sk-assay-")
    pieces = {token[i:i + 12] for i in range(len(token) - 11)}
    found = [str(p) for p in sorted(root.rglob("*")) if p.is_file()
             and any(piece.encode() in p.read_bytes() for piece in pieces)]
    found += [f"text #{i}" for i, t in enumerate(texts) if any(piece in t for piece in pieces)]
    return found


def assay_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([sys.executable, "-m", "assay.cli", *args], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def test_api_key_is_written_nowhere_by_the_cli(tmp_path):
    """A run, its resume, exports, report, meta-evaluation and a judge check: the key reaches the server only."""
    env = os.environ | {"OPENAI_API_KEY": SECRET, "OPENAI_LOG": "debug"}
    env.pop("OPENAI_BASE_URL", None)
    run_dir = tmp_path / "run"
    with FakeOpenAIServer() as server:
        spec = f"openai:fake-model@{server.url}"
        run = ["run", "--method", "direct", "--dataset", "qags-xsum", "--limit", "3", "--judge", spec,
               "--run-dir", str(run_dir)]
        outputs = [assay_cli(*run, env=env), assay_cli(*run, env=env),
                   assay_cli("judges", spec, env=env)]
    outputs += [assay_cli("export", str(run_dir), "--format", fmt, env=env) for fmt in ("jsonl", "csv", "parquet")]
    outputs += [assay_cli("report", str(run_dir), "-o", str(run_dir / "report.html"), env=env),
                assay_cli("meta", str(run_dir), "--json", str(run_dir / "meta.json"), env=env)]
    # the key was in play: the client sent it with every call
    assert server.auth and set(server.auth) == {f"Bearer {SECRET}"}
    assert len(server.requests) >= 4  # capability probe, 3 units, the judge check
    made = {p.name for p in run_dir.iterdir()}
    assert {"run.sqlite", "judgments.jsonl", "judgments.csv", "judgments.parquet", "report.html",
            "meta.json"} <= made
    texts = [t for r in outputs for t in (r.stdout, r.stderr)]
    assert "resuming" in outputs[1].stderr  # the second run resumed the first
    assert leaks(tmp_path, *texts) == []


def test_api_key_is_written_nowhere_by_the_python_api(tmp_path, monkeypatch, caplog, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer() as server:
        result = assay.evaluate("qags-xsum", judge=f"openai:fake-model@{server.url}", limit=2,
                                run_dir=tmp_path / "run")
    result.to_pandas().to_csv(tmp_path / "frame.csv")
    assert set(server.auth) == {f"Bearer {SECRET}"} and len(result.judgments) == 2
    # the identity recorded instead: backend, model, endpoint
    assert result.manifest["judge"] == {"backend": "openai", "model": "fake-model", "base_url": server.url,
                                        "model_sha256": None, "settings": {}}
    captured = capsys.readouterr()
    assert leaks(tmp_path, caplog.text, captured.out, captured.err, repr(result.manifest)) == []


def test_credentials_in_the_endpoint_url_are_not_recorded(tmp_path):
    url = f"http://user:{SECRET}@127.0.0.1:9/v1/?key={SECRET}"
    judge = OpenAIJudge("m", url, logprobs=False)
    assert judge.identity.base_url == "http://127.0.0.1:9/v1"
    assert public_url("http://[::1]:8000/v1/") == "http://[::1]:8000/v1"
    assert SECRET not in judge.identity.model_dump_json()
