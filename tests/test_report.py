"""The report's tables (``assay.report``) from a small run store made with a scripted judge: the values, the
coverage, and the failed and unreadable units shown, each checked against a computation from the ratings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from scipy import stats

import assay
from assay.errors import TransientJudgeError
from assay.judges.base import Request
from assay.judges.middleware import RetryPolicy
from assay.judges.scripted import ScriptedJudge
from assay.meta import meta_evaluate
from assay.report.summary import run_summary
from assay.report.tables import correlation_table, fmt

# the judge's rating per sample (in file order) and dimension; None: an unreadable answer, "fail": no answer at all
RATINGS = {"coherence": [1, 2, 3, 2, 3, 1, 2, None], "naturalness": [3, 3, 2, 1, 2, 3, "fail", 1]}
UNREADABLE = "2 or 3"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, assay.Dataset]:
    dataset = assay.load_dataset("topical-chat").select(limit=8)
    by_output = {s.output.strip(): i for i, s in enumerate(dataset.samples)}

    def answer(request: Request) -> str:
        prompt = request.messages[-1].content
        response = prompt.split("<<<RESPONSE>>>\n", 1)[1].split("\n<<<END RESPONSE>>>", 1)[0]
        dim = "coherence" if "for coherence" in prompt else "naturalness"
        rating = RATINGS[dim][by_output[response.strip()]]
        if rating == "fail":
            raise TransientJudgeError("503 Service Unavailable")
        return UNREADABLE if rating is None else str(rating)

    run_dir = tmp_path_factory.mktemp("report") / "run"
    result = assay.evaluate(dataset, method="direct", judge=ScriptedJudge(answer), run_dir=run_dir,
                            dimensions=["coherence", "naturalness"], retry=RetryPolicy(max_attempts=1))
    assert result.failed == 1 and result.units["parse_failed"] == 1  # the run is what the test means it to be
    return run_dir, dataset


def _expected(dataset: assay.Dataset, dim: str) -> tuple[list[float], list[float]]:
    """The scored units' ratings and the humans' ratings of the same samples."""
    pairs = [(float(r), s.human[dim]) for r, s in zip(RATINGS[dim], dataset.samples, strict=True)
             if isinstance(r, int)]
    return [p for p, _ in pairs], [h for _, h in pairs]


def test_run_summary_values_and_coverage(run: tuple[Path, assay.Dataset]) -> None:
    run_dir, dataset = run
    summary = run_summary(run_dir)
    assert summary["columns"] == ["dimension", "judged", "coverage", "mean score", "pearson", "spearman"]
    rows = {r[0]: r for r in summary["rows"]}
    assert list(rows) == ["coherence", "naturalness", "average"]
    for dim in ("coherence", "naturalness"):
        scores, human = _expected(dataset, dim)
        _, judged, coverage, mean, pearson, spearman = rows[dim]
        assert judged == 8  # failed and unreadable units are counted as asked
        assert coverage == pytest.approx(7 / 8)
        assert mean == pytest.approx(sum(scores) / len(scores))
        assert pearson == pytest.approx(stats.pearsonr(scores, human).statistic)
        assert spearman == pytest.approx(stats.spearmanr(scores, human).statistic)
    average = rows["average"]
    assert average[1] == 16 and average[2] == pytest.approx(14 / 16) and average[3] is None
    assert average[4] == pytest.approx((rows["coherence"][4] + rows["naturalness"][4]) / 2)
    assert "dataset-level" in summary["level_note"]


def test_correlation_table_shows_coverage_and_the_unscored_units(run: tuple[Path, assay.Dataset]) -> None:
    run_dir, dataset = run
    table = correlation_table(meta_evaluate(run_dir))
    assert table["columns"][:3] == ["dimension", "scored", "coverage"]
    rows = {r[0]: r for r in table["rows"]}
    for dim in ("coherence", "naturalness"):
        scores, human = _expected(dataset, dim)
        assert rows[dim][1:3] == ["7/8", "87.5%"]
        assert rows[dim][3] == fmt(stats.pearsonr(scores, human).statistic)
        assert rows[dim][-1] == "7"  # the units entering the correlation
    assert rows["average"][1:3] == ["14/16", "87.5%"]
    notes = "\n".join(table["notes"])
    assert "unscored naturalness: 1x" in notes and "503 Service Unavailable" in notes  # the failed unit
    assert "unscored coherence: 1x" in notes  # the unreadable answer
    assert table["title"] == "direct / scripted:scripted on topical-chat"


# -- the summary computed by a helper process (issue 28) ------------------------------------------------------------


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN, a tuple to a list (a table after its JSON trip against the one computed here)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return (a == b and type(a) in (type(b), float, int)) or (isinstance(a, bool) and a == b)


def test_a_line_a_library_prints_before_the_helpers_answer_is_not_read_as_it(run, monkeypatch) -> None:
    import subprocess
    import sys

    from assay.report import ahead as ahead_module

    run_dir, _ = run
    from assay.meta.table import jsonable

    table = json.dumps(jsonable({"summary": run_summary(run_dir)}))
    proc = subprocess.Popen([sys.executable, "-c", f"import sys; print('a library speaks'); print({table!r})"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ahead = ahead_module.SummaryAhead(proc)
    assert _same(ahead.summary(run_dir), run_summary(run_dir)) and ahead.fell_back == ""


def test_the_helper_process_gives_the_table_computed_here(run: tuple[Path, assay.Dataset]) -> None:
    from assay.report.ahead import SummaryAhead

    run_dir, _ = run
    ahead = SummaryAhead.start()
    got = ahead.summary(run_dir)
    assert ahead.fell_back == ""
    assert _same(got, run_summary(run_dir))
    assert [r[0] for r in got["rows"]] == ["coherence", "naturalness", "average"]


def test_the_helper_has_imported_everything_the_table_needs_before_it_is_asked(run) -> None:
    """What the table imports when computed is left for the answer, after the run's last unit: none of it may be."""
    import subprocess
    import sys

    run_dir, _ = run
    code = ("import sys\nfrom assay.report.ahead import preload\npreload()\nbefore = set(sys.modules)\n"
            "from assay.report.summary import run_summary\n"
            f"run_summary({str(run_dir)!r})\nimport json\nprint(json.dumps(sorted(set(sys.modules) - before)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    new = json.loads(done.stdout.strip().splitlines()[-1])
    assert [m for m in new if m.startswith(("assay", "scipy", "pandas", "asyncio", "sqlite3"))] == []


@pytest.mark.parametrize(("script", "why"), [("print('not a table')", "unreadable"),
                                             ("import sys; sys.exit(3)", "no table"),
                                             ("print('{\"error\": \"boom\"}')", "the helper failed (boom)"),
                                             ("import time; time.sleep(30)", "within 0.5 s")])
def test_a_helper_that_cannot_answer_leaves_the_table_to_the_run(run, monkeypatch, script, why) -> None:
    import subprocess
    import sys

    from assay.report import ahead as ahead_module

    monkeypatch.setattr(ahead_module, "ANSWER_TIMEOUT_S", 0.5)
    run_dir, _ = run
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    ahead = ahead_module.SummaryAhead(proc)
    got = ahead.summary(run_dir)
    assert why in ahead.fell_back
    assert _same(got, run_summary(run_dir))
    assert proc.poll() is not None  # never left running


def test_a_helper_that_fails_says_why_and_the_run_raises_the_error_itself(tmp_path) -> None:
    from assay.report.ahead import SummaryAhead

    ahead = SummaryAhead.start()
    with pytest.raises(Exception) as here:
        run_summary(tmp_path / "missing")
    with pytest.raises(type(here.value)):
        ahead.summary(tmp_path / "missing")
    assert ahead.fell_back.startswith(f"the helper failed ({type(here.value).__name__}")


def test_a_helper_never_asked_is_ended_by_its_run_and_is_out_of_the_terminals_reach() -> None:
    """The run ends its helper; a Ctrl-C at the terminal goes to the run, not to the helper, which runs in a
    session of its own."""
    from assay.report.ahead import SummaryAhead

    ahead = SummaryAhead.start()
    proc = ahead._proc
    assert proc is not None and proc.poll() is None
    assert os.getsid(proc.pid) == proc.pid != os.getsid(0)
    ahead.close()
    assert proc.returncode is not None


def test_a_helper_whose_run_was_killed_ends_with_its_pipe(tmp_path) -> None:
    """A run killed outright (SIGKILL) cannot end its helper: the helper's standard input closes, and it exits."""
    import subprocess
    import sys
    import time

    parent = subprocess.Popen([sys.executable, "-c", (
        "from assay.report.ahead import SummaryAhead; import sys, time; a = SummaryAhead.start(); "
        "print(a._proc.pid, flush=True); time.sleep(60)")], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    helper = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 30
    while _running(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _running(helper):
        os.kill(helper, 9)
        raise AssertionError("the helper outlived its killed run by 30 s")


def _running(pid: int) -> bool:
    """Whether a process runs (an exited one that nobody has reaped yet, a zombie, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_folder_named_assay_in_the_working_directory_does_not_stop_the_helper(run, tmp_path, monkeypatch):
    from assay.report.ahead import SummaryAhead

    (tmp_path / "assay" / "report").mkdir(parents=True)
    (tmp_path / "assay" / "__init__.py").write_text("raise ImportError('not the assay package')\n")
    monkeypatch.chdir(tmp_path)
    ahead = SummaryAhead.start()
    got = ahead.summary(run[0])
    assert ahead.fell_back == ""
    assert _same(got, run_summary(run[0]))


def test_assay_run_prints_the_same_table_with_and_without_the_helper(tmp_path, monkeypatch) -> None:
    """A run of at least ``AHEAD_MIN_UNITS`` units starts the helper as soon as its plan is known, before any
    request (issue 28: its imports then overlap the judge's start, not only the judging); the table it prints is
    the one a run computing it itself prints."""
    import hashlib

    from typer.testing import CliRunner

    from assay.cli import main
    from assay.report import ahead as ahead_module
    from assay.testing import Behaviour, FakeOpenAIServer

    started: list[ahead_module.SummaryAhead] = []
    requests_before: list[int] = []
    real_start = ahead_module.SummaryAhead.start

    def spy() -> ahead_module.SummaryAhead:
        requests_before.append(len(server.requests))
        started.append(real_start())
        return started[-1]

    monkeypatch.setattr(ahead_module.SummaryAhead, "start", staticmethod(spy))

    def rating(body: dict) -> Behaviour:  # 1-3, differing across prompts, so that the correlations exist
        prompt = body["messages"][-1]["content"]
        return Behaviour(text=str(1 + int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 3))

    outputs = {}
    with FakeOpenAIServer(route=rating) as server:
        for name, bound in (("helper", 1), ("here", 10**9)):
            monkeypatch.setattr(main, "AHEAD_MIN_UNITS", bound)
            res = CliRunner().invoke(main.app, ["run", "--method", "direct", "--dataset", "topical-chat", "--limit",
                                                "10", "--judge", f"openai:fake@{server.url}", "--quiet",
                                                "--run-dir", str(tmp_path / name)], catch_exceptions=False)
            assert res.exit_code == 0, res.output
            outputs[name] = res.output.split("calls ")[0]
            assert len(started) == 1  # started by the first run only
    assert requests_before == [0]  # before the judge was asked anything (its capability probe included)
    assert started[0].fell_back == "" and "computed in this process" not in outputs["helper"]
    assert outputs["helper"] == outputs["here"]
    assert "coherence" in outputs["here"] and "pearson" in outputs["here"]


@pytest.mark.parametrize(("limit", "bound", "expected"), [
    (None, 1, ["helper", "plan"]),  # may be large: started before the plan, kept
    ("10", 5, ["helper", "plan"]),  # a limit that leaves it large: the same
    ("3", 5, ["plan", "helper"]),  # a limit below the bound: started at the plan, which finds 3 x 2 units
    ("2", 5, ["plan"]),  # 2 x 2 units: none
    (None, 10**9, ["helper", "plan", "helper closed"]),  # found small at the plan: stopped there
])
def test_the_helper_starts_with_the_command_where_the_run_may_be_large(tmp_path, monkeypatch, limit, bound, expected):
    """Started as the command starts, the helper imports its libraries while the run's process imports its own
    (issue 28); a run that the plan finds small stops it there, and one whose limit hid its size starts it there."""
    from typer.testing import CliRunner

    from assay.cli import main
    from assay.report import ahead as ahead_module
    from assay.run import session
    from assay.testing import FakeOpenAIServer

    events: list[str] = []
    real_start, real_close, real_resolve = (ahead_module.SummaryAhead.start, ahead_module.SummaryAhead.close,
                                            session.RunPlan.resolve)

    def start() -> ahead_module.SummaryAhead:
        events.append("helper")
        return real_start()

    def close(self: ahead_module.SummaryAhead) -> None:
        if self._proc is not None:
            events.append("helper closed")
        real_close(self)

    def resolve(*args: object, **kwargs: object) -> object:
        events.append("plan")
        return real_resolve(*args, **kwargs)

    monkeypatch.setattr(ahead_module.SummaryAhead, "start", staticmethod(start))
    monkeypatch.setattr(ahead_module.SummaryAhead, "close", close)
    monkeypatch.setattr(session.RunPlan, "resolve", staticmethod(resolve))
    monkeypatch.setattr(main, "AHEAD_MIN_UNITS", bound)
    with FakeOpenAIServer() as server:
        res = CliRunner().invoke(main.app, ["run", "--method", "direct", "--dataset", "topical-chat", "--judge",
                                            f"openai:fake@{server.url}", "--quiet", "--dimension", "coherence",
                                            "--dimension", "naturalness", "--run-dir", str(tmp_path / "r"),
                                            *(["--limit", limit] if limit else ["--docs", "2"])],
                                 catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert events == expected


def test_a_command_that_fails_after_the_helper_started_ends_it(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from assay.cli import main
    from assay.report import ahead as ahead_module

    started: list[ahead_module.SummaryAhead] = []
    real_start = ahead_module.SummaryAhead.start
    monkeypatch.setattr(ahead_module.SummaryAhead, "start", staticmethod(lambda: started.append(real_start())
                                                                          or started[-1]))
    res = CliRunner().invoke(main.app, ["run", "--method", "direct", "--dataset", "topical-chat", "--no-such-option",
                                        "1", "--run-dir", str(tmp_path / "r")])
    assert res.exit_code != 0 and "no option --no-such-option" in str(res.exception)
    (helper,) = started
    assert helper._proc is None  # closed: killed and waited for


def test_a_runs_tables_list_its_dimensions_as_asked_not_as_answered(run: tuple[Path, assay.Dataset]) -> None:
    """The judge's first answer may be any dimension's; the tables follow the manifest's order."""
    from assay.meta.inputs import read_run

    table = read_run(run[0])
    assert table.order == ["coherence", "naturalness"]
    table.frame = table.frame.iloc[::-1]  # naturalness seen first
    assert table.dimensions() == ["coherence", "naturalness"]
    table.order = []
    assert table.dimensions() == ["naturalness", "coherence"]
