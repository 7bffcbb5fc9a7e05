"""Tables at 80 columns: every number and every name printed whole (wrapped, in a legend, or in parts), none cut."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import assay
from assay.cli.fit import fit
from assay.judges.scripted import ScriptedJudge

LONG_JUDGE = "llama-3.1-8b-instruct-q4_k_m-{salt}"


def _answer(salt: str):
    def answer(request):
        h = int(hashlib.sha256((salt + request.messages[-1].content).encode()).hexdigest(), 16)
        return "I cannot say" if h % 13 == 0 else str(1 + h % 5)
    return answer


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    """Three runs of ``direct`` on SummEval's expert slice, by scripted judges with long names."""
    base = tmp_path_factory.mktemp("wide")
    dirs = []
    for salt in "abc":
        d = base / f"summeval-experts-direct-llama-{salt}"
        assay.evaluate("summeval-experts", method="direct", docs=4, run_dir=d,
                       judge=ScriptedJudge(_answer(salt), name=LONG_JUDGE.format(salt=salt)))
        dirs.append(d)
    return dirs


def _assay(*args: str, columns: int = 80) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    res = subprocess.run([sys.executable, "-m", "assay.cli", *args], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _fits(text: str, columns: int = 80) -> None:
    assert "…" not in text
    for line in text.splitlines():  # legend lines are soft-wrapped (the terminal folds them, nothing is cut)
        assert len(line) <= columns or line.startswith("#"), line


def _numbers(rows: list[dict], keys: list[str]) -> set[str]:
    return {f"{r[k]:.3f}" for r in rows for k in keys if isinstance(r.get(k), float) and r[k] == r[k]}


def test_compare_at_80_columns_prints_every_name_and_number_whole(runs, tmp_path):
    out = _assay("compare", *map(str, runs), "--json", str(tmp_path / "cmp.json"))
    data = json.loads((tmp_path / "cmp.json").read_text())
    _fits(out)
    for run in data["runs"]:
        assert run["judge"] in out and run["label"] in out and run["method"] in out
        assert _numbers(run["rows"], ["spearman"]) <= set(re.findall(r"-?\d\.\d{3}", out))
    stability = _numbers([r for r in data["stability"] if r["dimension"] == "average"], ["mean", "std", "min", "max"])
    assert stability and stability <= set(re.findall(r"-?\d\.\d{3}", out))
    agreement = _numbers(data["agreement"], ["alpha_interval", "icc2_1", "icc2_k"])
    assert agreement and agreement <= set(re.findall(r"-?\d\.\d{3}", out))


def test_meta_with_intervals_at_80_columns_prints_every_number_whole(runs, tmp_path):
    out = _assay("meta", str(runs[0]), "--bootstrap", "50", "--json", str(tmp_path / "m.json"))
    data = json.loads((tmp_path / "m.json").read_text())
    _fits(out)
    printed = set(re.findall(r"-?\d\.\d{3}", out))
    for row in data["rows"]:
        assert row["dimension"] in out
        for m in ("pearson", "spearman", "kendall"):
            assert f"{row[m]:.3f}" in printed
            assert {f"{v:.3f}" for v in row[f"{m}_ci"]} <= printed


def test_the_run_summary_at_80_columns(runs, tmp_path):
    out = _assay("run", "--dataset", "summeval-experts", "--docs", "4", "-q", "--judge", f"replay:{runs[1]}",
                 "--run-dir", str(tmp_path / "again"))
    _fits(out)
    from assay.report.summary import run_summary

    summary = run_summary(tmp_path / "again")
    for row in summary["rows"]:
        assert row[0] in out
        assert all(f"{v:.3f}" in out for v in row[1:] if isinstance(v, float))


def test_fit_keeps_every_cell_and_repeats_the_key():
    table = {"title": "t", "columns": ["run", "judge", *[f"measure {i}" for i in range(12)]], "keys": 2,
             "rows": [[f"run-{r}", f"judge-with-a-long-name-{r}", *[f"{r}.{i:03d}" for i in range(12)]]
                      for r in range(3)]}
    parts = fit(table, 60)
    assert len(parts) > 1
    for part in parts:
        assert sum(part["widths"]) + 3 * len(part["widths"]) + 1 <= 60
        assert part["columns"][0] == "#"  # the long names went to the legend, its number repeated in each part
    legend = parts[-1]["legend"]
    assert legend == [f"#{r + 1}: run run-{r}, judge judge-with-a-long-name-{r}" for r in range(3)]
    cells = {c for part in parts for row in part["rows"] for c in row[1:]}
    assert cells == {f"{r}.{i:03d}" for r in range(3) for i in range(12)}
    [whole] = fit(table, 400)  # room enough: the table as it is
    assert whole["columns"] == table["columns"] and whole["rows"] == table["rows"] and "legend" not in whole


def test_the_progress_line_at_80_columns_keeps_the_counts_and_times_whole():
    import io

    from rich.console import Console

    from assay.cli.main import _progress

    bar = _progress(False)
    bar.add_task("direct", total=192, completed=100,
                 stats="calls 192 (cached 0) tok 113504/212 unscored 10 failed 0")
    bar.add_task("starting", total=None, stats="retrying until 14:52:03 (3 s for refused connections): cannot reach "
                                               "http://127.0.0.1:9/v1: connection refused")
    sink = io.StringIO()
    Console(file=sink, width=80).print(bar.make_tasks_table(bar.tasks))
    lines = sink.getvalue().splitlines()
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines)
    assert "100/192" in lines[0] and "calls 192" in lines[0] and "direct" in lines[0]
    assert "retrying until 14:52:03" in lines[1]  # the news comes first, whatever is cut after it


def test_the_stage_line_before_judging_has_the_whole_width_for_its_status():
    import io

    from rich.console import Console

    from assay.cli.main import _stage_progress

    stages = _stage_progress(False)
    stages.add_task("G-Eval: the judge writes the evaluation steps for engagingness", total=None)
    sink = io.StringIO()
    Console(file=sink, width=80).print(stages.make_tasks_table(stages.tasks))
    [line] = sink.getvalue().splitlines()
    assert len(line) <= 80 and "G-Eval: the judge writes the evaluation steps for engagingness" in line
