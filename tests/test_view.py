"""``assay view``: the viewer's data and pure helpers, and the page in headless Chromium (Playwright)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import threading
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import assay
from assay.judges.scripted import ScriptedJudge
from assay.view import build_view_data, render_page
from assay.view.derive import interval_warning, rank_disagreement, run_label
from assay.view.page import script_json

CHROMIUM = shutil.which("chromium")
MISSING = [what for what, ok in [
    ("the system chromium on the PATH (Debian/Ubuntu: apt-get install -y chromium)", CHROMIUM is not None),
    ("playwright (pip install -e '.[test]'; no browser download is needed)",
     importlib.util.find_spec("playwright") is not None)] if not ok]


def browser(fn):
    """Marked ``browser`` and skipped, saying what is missing, without chromium or playwright."""
    return pytest.mark.browser(pytest.mark.skipif(bool(MISSING), reason="needs " + " and ".join(MISSING))(fn))


DIMS = ["engagingness", "naturalness"]
EVIL = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def _geval(req) -> str:
    c = req.messages[-1].content
    return "1. Read it.\n2. Judge it.\n3. Score it." if c.endswith("Evaluation Steps:") else str(1 + _h(c) % 3)


def _checkeval(req) -> str:
    c = req.messages[-1].content
    block = c[c.index("# Questions"):c.index("# Your answers")]
    qs = re.findall(r"^Q(\d+): (.*)$", block, re.M)  # the 'lively' question is never answered: missing
    answers = [f"Q{i}: {'yes' if _h(c + i) % 3 else 'no'}" for i, q in qs if "lively" not in q]
    return "\n".join(answers) or "I cannot tell."


def _seal(req) -> str:
    return re.findall(r"Example: (.*)", req.messages[-1].content)[-1]


def _gereval(req) -> str:
    return json.dumps({"reasoning": "It follows on from the last turn.", "score": 1 + _h(req.messages[-1].content) % 3})


def _direct(req) -> str:
    c = req.messages[-1].content
    return "I cannot say" if _h(c) % 4 == 0 else str(1 + _h(c) % 3)


# G-Eval asks for log-probabilities the scripted judge lacks: a recorded fallback note to show
METHODS = {"direct": (_direct, {}), "geval": (_geval, {"mode": "logprobs"}),
           "checkeval": (_checkeval, {"checklist": "topical-chat"}),
           "seal": (_seal, {}), "gereval": (_gereval, {"rubric": "human:topical-chat"})}


def off_loop(fn, *args, **kwargs):
    """Call ``fn`` in a thread of its own: once Playwright's sync API runs, this thread has an event loop."""
    result: list = []
    worker = threading.Thread(target=lambda: result.append(fn(*args, **kwargs)))
    worker.start()
    worker.join()
    return result[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A small run of each method (scripted judges) on three Topical-Chat samples, plus a second direct run."""
    base = tmp_path_factory.mktemp("view-runs")
    ds = assay.load_dataset("topical-chat").select(limit=3)
    out = {}
    for method, (fn, opts) in METHODS.items():
        dims = ["engagingness"] if method == "seal" else DIMS
        assay.evaluate(ds, method=method, judge=ScriptedJudge(fn, name=f"{method}-s"), dimensions=dims,
                       run_dir=base / method, options=opts, answer_format="free")  # the scripts write free text
        out[method] = base / method
    assay.evaluate(ds, method="direct", judge=ScriptedJudge(lambda r: "2", name="direct-s"), dimensions=DIMS,
                   run_dir=base / "direct-again", answer_format="free")
    out["direct-again"] = base / "direct-again"
    return out


# -- pure helpers -------------------------------------------------------------------------------------

def test_rank_disagreement_is_scale_free_and_skips_missing_values():
    # CheckEval-like 0-1 scores against 1-5 ratings: the same order gives no disagreement, reversed gives the most.
    assert rank_disagreement([0.1, 0.5, 0.9], [1, 3, 5]) == [0.0, 0.0, 0.0]
    assert rank_disagreement([0.9, 0.5, 0.1], [1, 3, 5]) == [1.0, 0.0, 1.0]
    assert rank_disagreement([0.2, None, 0.4, 0.6], [5, 4, None, 1]) == [1.0, None, None, 1.0]
    assert rank_disagreement([0.3], [2]) == [None]


def test_interval_warning_flags_small_samples_and_zero_width_intervals():
    assert "n=4" in interval_warning(4, [1.0, 1.0]) and "zero-width" in interval_warning(4, [1.0, 1.0])
    assert interval_warning(200, [0.2, 0.4]) is None
    assert "zero-width" in interval_warning(200, [0.5, 0.5])


def test_runs_of_one_judge_are_labelled_apart():
    labels = {run_label(d, "direct", "openai:gpt-4o-mini") for d in ("run-a", "run-b", "run-c")}
    assert len(labels) == 3 and all("openai:gpt-4o-mini" in x and "direct" in x for x in labels)


def test_inline_json_cannot_close_its_script_tag():
    text = script_json({"output": "</script><script>alert(1)</script>", "sep": "\u2028"})
    assert "</script" not in text and "<" not in text
    assert json.loads(text) == {"output": "</script><script>alert(1)</script>", "sep": "\u2028"}


# -- the data ----------------------------------------------------------------------------------------

def test_view_data_of_every_method(runs):
    data = build_view_data([runs[m] for m in METHODS], bootstrap=50)
    assert [r["method"] for r in data["runs"]] == list(METHODS)
    assert data["datasets"] == [{"name": "topical-chat", "read_from": "topical-chat", "loaded": True, "error": None,
                                 "labels": {"src": "conversation history", "ctx": "knowledge fact", "ref": "reference",
                                            "out": "response"}}]
    assert len(data["samples"]) == 3 and all(data["texts"][s["out"]] for s in data["samples"])
    geval = data["runs"][1]
    assert geval["steps"]["engagingness"].startswith("1. Read it.")
    notes = [(n["kind"], n["message"]) for n in geval["notes"]]  # the sampling fallback, listed once
    assert sum("replaced by sampling" in m for _, m in notes) == 1 and notes[0][0] == "fallback"
    assert "engagingness" in data["runs"][4]["rubric"]["criteria"]
    row = next(r for r in data["runs"][2]["meta"]["rows"] if r["dimension"] == "engagingness")
    assert row["spearman_ci"] is not None and "n=3" in row["warning"]
    j = data["judgments"]
    assert len(j["r"]) == 2 * 3 * 4 + 3 and set(j["st"]) >= {0}
    # every traced prompt hash the checkeval run names resolves to the prompt it sent
    check = [t for t, r in zip(j["tr"], j["r"], strict=True) if r == 2]
    sha = check[0]["groups"][0]["prompt_sha256"]
    assert any(m["content"] for m in data["prompts"][sha])


def test_runs_of_one_judge_stay_apart_in_the_comparison(runs):
    data = build_view_data([runs["direct"], runs["direct-again"]], bootstrap=0)
    labels = [r["label"] for r in data["runs"]]
    assert labels[0] != labels[1] and all("scripted:direct-s" in x for x in labels)
    agreement = data["compare"]["agreement"]
    assert agreement and all(a["n_raters"] == 2 for a in agreement)


def test_a_dataset_that_does_not_load_is_said_and_ids_are_kept(runs, monkeypatch):
    import assay.datasets

    def broken(name):
        raise FileNotFoundError("gone")

    monkeypatch.setattr(assay.datasets, "load_dataset", broken)
    data = build_view_data([runs["direct"]], bootstrap=0)
    assert data["datasets"][0]["loaded"] is False and "gone" in data["datasets"][0]["error"]
    assert any("could not be loaded" in n for n in data["notes"])
    assert all("out" not in s for s in data["samples"]) and len(data["samples"]) == 3


def test_the_view_data_names_each_datasets_texts_as_its_card_does(runs):
    data = build_view_data([runs["direct"]], bootstrap=0)
    assert data["datasets"][0]["labels"] == {"src": "conversation history", "ctx": "knowledge fact",
                                             "ref": "reference", "out": "response"}
    assert {s["ds"] for s in data["samples"]} == {0}
    assert assay.load_dataset("summeval").info.reference_name == "reference summary"


def test_report_is_the_viewers_static_export(runs, tmp_path, cli):
    code, out, _ = cli("report", str(runs["direct"]), str(runs["direct-again"]), "-o", str(tmp_path / "r.html"),
                       "--bootstrap", "20")
    assert code == 0 and "static" in out and "r.html" in out
    page = (tmp_path / "r.html").read_text()
    assert "id='assay-data'" in page and "plotly.js v" in page  # data and Plotly inline
    assert not re.search(r"<(script|link)[^>]+(src|href)=", page)  # nothing fetched


def test_view_without_output_serves_on_loopback_until_stopped(runs, cli, monkeypatch):
    import assay.view.serve as serving

    fetched: list[bytes] = []
    real = serving.serve

    def serve_and_visit(page, port):
        server = real(page, port)

        def visit():
            with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/", timeout=10) as resp:
                fetched.append(resp.read())
            server.shutdown()  # as Ctrl-C would

        threading.Thread(target=visit, daemon=True).start()
        return server

    monkeypatch.setattr(serving, "serve", serve_and_visit)
    monkeypatch.setattr("webbrowser.open", lambda url: pytest.fail("--no-browser opened a browser"))
    code, out, _ = cli("view", str(runs["direct"]), "--port", "0", "--no-browser", "--bootstrap", "0")
    assert code == 0 and "serving http://127.0.0.1:" in out
    assert fetched and b"id='assay-data'" in fetched[0]


def test_a_scores_file_or_a_missing_run_is_refused_in_one_line(tmp_path, cli):
    scores = tmp_path / "scores.jsonl"
    scores.write_text("{}\n")
    code, _, err = cli("view", str(scores), "-o", str(tmp_path / "v.html"))
    assert code == 1 and "a file; the viewer reads run directories" in err and "--run-dir" not in err
    code, _, err = cli("report", str(tmp_path / "nowhere"), "-o", str(tmp_path / "v.html"))
    assert code == 1 and "not a run directory" in err and not (tmp_path / "v.html").exists()


def test_serve_answers_the_page_on_loopback(runs):
    from assay.view.serve import serve

    page = render_page(build_view_data([runs["direct"]], bootstrap=0)).encode()
    server = serve(page, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as resp:
            assert resp.read() == page
    finally:
        server.shutdown()
        server.server_close()


# -- in headless Chromium -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()


class Page:
    """A page with its console errors collected."""

    def __init__(self, chromium, url: str) -> None:
        self.page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url)


def _write(tmp_path: Path, dirs: list[Path], name: str = "view.html", **kw) -> Path:
    out = tmp_path / name
    out.write_text(render_page(build_view_data(dirs, bootstrap=50, **kw)), encoding="utf-8")
    return out


@browser
@pytest.mark.parametrize("method", list(METHODS))
def test_each_method_renders_overview_table_and_deep_linked_trace(method, runs, chromium, tmp_path):
    html = _write(tmp_path, [runs[method]])
    sample = "ctx000:Nucleus Decoding (p = 0.3)"  # spaces, parentheses and '=' in the id: URL-encoded
    p = Page(chromium, html.as_uri())
    pg = p.page
    pg.wait_for_selector("#scatter .main-svg")
    assert pg.locator(".card.run h3").first.inner_text().startswith(f"{method} · {method} · scripted:{method}-s")
    pg.screenshot(path=str(tmp_path / f"{method}-overview.png"), full_page=True)
    # the sample browser: the table holds every judgment; the dimension filter keeps one dimension's rows
    pg.goto(html.as_uri() + "#tab=samples")
    pg.wait_for_selector("#sample-table tbody tr")
    n_all = pg.locator("#sample-table tbody tr").count()
    pg.select_option("#f-dim", label="engagingness")
    assert pg.locator("#sample-table tbody tr").count() == (n_all if method == "seal" else n_all // 2)
    assert set(pg.locator("#sample-table tbody tr td:nth-child(3)").all_inner_texts()) == {"engagingness"}
    # the deep link opens the sample with its output and the method's trace
    pg.goto(html.as_uri() + "#sample=" + urllib.parse.quote(sample))
    pg.wait_for_selector(".judgment")
    panel = pg.locator("#sample-panel").inner_text()
    store = assay.load_dataset("topical-chat")
    output = next(s.output for s in store.samples if s.id == sample)
    assert pg.locator("#sample-panel pre.out").inner_text().strip() == output.strip()
    expect = {"direct": "answer", "geval": "evaluation steps", "checkeval": "Does the response",
              "seal": "units and decisions", "gereval": "It follows on from the last turn."}[method]
    assert expect in panel
    if method == "checkeval":  # each question's answer, the unanswered last one marked missing
        answers = pg.locator("table.questions td:nth-child(3)").all_inner_texts()
        assert answers and set(answers) <= {"yes", "no", "missing"} and "missing" in answers
    if method == "seal":
        assert pg.locator("table.units tbody tr").count() >= 1
        assert set(pg.locator("table.units td:nth-child(3)").all_inner_texts()) <= {"0", "1", "–"}
    if method == "geval":
        pg.wait_for_selector(".bars .main-svg")
        assert "notes on fallbacks in this run (1)" in panel  # logprobs asked, sampling used: said beside the trace
    pg.screenshot(path=str(tmp_path / f"{method}-sample.png"), full_page=True)
    assert p.errors == []


@browser
def test_filters_search_and_disagreement_sort_change_the_table(runs, chromium, tmp_path):
    html = _write(tmp_path, [runs["direct"], runs["direct-again"]])
    p = Page(chromium, html.as_uri() + "#tab=samples")
    pg = p.page
    pg.wait_for_selector("#sample-table tbody tr")
    total = pg.locator("#sample-table tbody tr").count()
    assert total == 12
    pg.select_option("#f-run", "1")
    assert set(pg.locator("#sample-table tbody td:nth-child(4)").all_inner_texts()) == {"direct-again · direct · "
                                                                                         "scripted:direct-s"}
    pg.select_option("#f-run", "")
    pg.select_option("#f-status", "unscored")
    failed = pg.locator("#sample-table tbody td:nth-child(8)").all_inner_texts()
    assert failed and set(failed) == {"parse_failed"}
    pg.select_option("#f-status", "")
    pg.fill("#search", "argmax")
    pg.wait_for_function("document.querySelectorAll('#sample-table tbody tr').length === 4")
    pg.fill("#search", "")
    pg.select_option("#f-dis", "0.5")  # only the large disagreements (percentile ranks 0.5 apart or more)
    large = [float(x) for x in pg.locator("#sample-table tbody td:nth-child(7)").all_inner_texts()]
    assert large and min(large) >= 0.5 and len(large) < total
    pg.select_option("#f-dis", "")
    pg.select_option("#sort", "6:desc")
    pg.wait_for_timeout(200)
    dis = [float(x) for x in pg.locator("#sample-table tbody td:nth-child(7)").all_inner_texts() if x != "–"]
    assert dis == sorted(dis, reverse=True) and dis
    # the scatter: hovering a point names its sample (escaped), clicking it opens the sample
    pg.goto(html.as_uri() + "#tab=overview")
    pg.wait_for_selector("#scatter .main-svg")
    hover = pg.evaluate("document.getElementById('scatter').data[0].text[0]")
    sid = pg.evaluate("document.getElementById('scatter').data[0].customdata[0]")
    assert hover.startswith(sid + "<br>score ")
    pg.evaluate("id => document.getElementById('scatter').emit('plotly_click', {points: [{customdata: id}]})", sid)
    pg.wait_for_selector(".judgment")
    assert pg.locator("#sample-panel h2 code").inner_text() == sid
    # two runs side by side on one sample
    pg.goto(html.as_uri() + "#tab=samples")
    pg.wait_for_selector("#sample-table tbody tr")
    pg.locator("#sample-table tbody tr").first.click()
    pg.wait_for_selector(".compare .side.two")
    assert pg.locator(".compare .side.two").first.locator(".judgment").count() == 2
    pg.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    assert p.errors == []


@browser
def test_a_section_added_to_the_list_gets_a_tab_and_its_data(runs, chromium, tmp_path):
    from assay.view.page import DEFAULT_SECTIONS, Section

    script = """AssayView.section("diagnostics", (root, data, app) => {
      root.appendChild(app.table(["check", "result"], data.sections.diagnostics.rows));
    });"""
    extra = Section("diagnostics", "Diagnostics", script, {"rows": [["position bias", "<b>none</b>"]]})
    html = tmp_path / "view.html"
    html.write_text(render_page(build_view_data([runs["direct"]], bootstrap=0), [*DEFAULT_SECTIONS, extra]))
    p = Page(chromium, html.as_uri() + "#tab=diagnostics")
    pg = p.page
    pg.wait_for_selector("#sec-diagnostics table")
    assert pg.locator("#tab-diagnostics").inner_text() == "Diagnostics"
    assert pg.locator("#sec-diagnostics td").all_inner_texts() == ["position bias", "<b>none</b>"]
    assert p.errors == []


@browser
def test_a_probed_run_gets_a_diagnostics_tab(runs, chromium, tmp_path):
    from assay.cli.view import _page
    from assay.probe import probe

    run = Path(shutil.copytree(runs["direct"], tmp_path / "run"))  # the shared runs stay unprobed
    off_loop(probe, run, budget=0)
    html = tmp_path / "view.html"
    html.write_text(_page([run], 0, 0, None, None, None), encoding="utf-8")
    p = Page(chromium, html.as_uri() + "#tab=diagnostics")
    pg = p.page
    pg.wait_for_selector("#sec-diagnostics table")
    cells = pg.locator("#sec-diagnostics td").all_inner_texts()
    assert "scale_use" in cells and any(c.startswith("not computed: budget 0") for c in cells)
    assert p.errors == []


@browser
def test_judged_text_with_markup_is_shown_as_text(tmp_path, chromium):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"uid": f"u{i}", "doc": f"d{i}", "src": f"ticket {i}", "out": EVIL + str(i),
                                        "coh": 1 + i % 5}) + "\n" for i in range(4)))
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: tickets\nfile: data.jsonl\nlevel: dataset\n"
                    "fields: {id: uid, doc_id: doc, source: src, output: out}\nhuman: {coherence: coh}\n"
                    "dimensions:\n  - {name: coherence, definition: \"Reads as one whole.\", "
                    "scale: {low: 1, high: 5}}\n")
    run = tmp_path / "run"
    off_loop(assay.evaluate, str(spec), method="direct", judge=ScriptedJudge(lambda r: EVIL), run_dir=run)
    html = _write(tmp_path, [run], dataset=str(spec))
    p = Page(chromium, html.as_uri() + "#sample=u1")
    pg = p.page
    pg.wait_for_selector(".judgment")
    assert pg.locator("#sample-panel pre.out").inner_text() == EVIL + "1"  # the markup, as text
    assert EVIL in pg.locator("#sample-panel").inner_text()  # the judge's answer too
    pg.goto(html.as_uri() + "#tab=samples")
    pg.wait_for_selector("#sample-table tbody tr")
    pg.goto(html.as_uri())
    pg.wait_for_selector("#scatter")
    pg.wait_for_timeout(300)
    assert pg.evaluate("window.__pwned") is None
    assert pg.locator("#sample-panel img, #sec-samples img").count() == 0
    assert p.errors == []


# -- progress before judging (issue 17: G-Eval showed a blank screen while writing its steps) ------------

def test_every_stage_before_judging_reports_its_status(tmp_path):
    seen: list[str] = []
    off_loop(assay.evaluate, assay.load_dataset("topical-chat").select(limit=1), method="geval",
                   judge=ScriptedJudge(_geval, name="status"), dimensions=DIMS, run_dir=tmp_path / "run",
                   on_status=seen.append, on_start=lambda todo, done: seen.append(f"judging {todo}"))
    assert seen[0].startswith("checking what scripted:status supports")
    assert seen[1] == "preparing geval (artifacts: steps, checklists, rubrics, ...)"
    assert {f"G-Eval: the judge writes the evaluation steps for {d}" for d in DIMS} <= set(seen)
    assert seen[-1] == "judging 2"


def test_the_run_command_shows_the_preparation_stage(tmp_path, cli, monkeypatch):
    import assay.cli.main as main

    lines: list[str] = []
    real = main._progress

    def recording(quiet):
        bar = real(quiet)
        update = bar.update
        bar.update = lambda task, **kw: (lines.extend(kw[k] for k in ("description", "stats") if k in kw),
                                         update(task, **kw))[1]  # the stage's status is in the stats column
        return bar

    monkeypatch.setattr(main, "_progress", recording)
    real_stages = main._stage_progress

    def recording_stages(quiet):  # the stages before judging have a line of their own
        bar = real_stages(quiet)
        update = bar.update
        bar.update = lambda task, **kw: (lines.extend(kw[k] for k in ("description", "stats") if k in kw),
                                         update(task, **kw))[1]
        return bar

    monkeypatch.setattr(main, "_stage_progress", recording_stages)
    first = tmp_path / "first"  # a scripted run, replayed by the command (no model needed)
    off_loop(assay.evaluate, "topical-chat", method="geval", judge=ScriptedJudge(_geval, name="status"), limit=1,
             dimensions=["engagingness"], run_dir=first)
    code, _, _ = off_loop(cli, "run", "--method", "geval", "--dataset", "topical-chat", "--limit", "1", "--dimension",
                     "engagingness", "--judge", f"replay:{first}", "--run-dir", str(tmp_path / "again"))
    assert code == 0
    assert lines[0] == f"loading judge replay:{first}"
    assert "preparing geval (artifacts: steps, checklists, rubrics, ...)" in lines
    assert "G-Eval: the judge writes the evaluation steps for engagingness" in lines


@browser
def test_an_imported_run_shows_its_trace_and_is_marked_imported(tmp_path, chromium):
    from assay.importer.write import ImportOptions, import_answers

    samples = assay.load_dataset("summeval").select(limit=2).samples
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": s.id, "a": "Q1: yes\nQ2: no"}) + "\n" for s in samples))
    off_loop(import_answers, answers, ImportOptions(method="checkeval", dataset="summeval", dimension="coherence",
                                                    answers="a", id="id"), tmp_path / "imported")
    html = _write(tmp_path, [tmp_path / "imported"])
    p = Page(chromium, html.as_uri() + "#sample=" + urllib.parse.quote(samples[1].id))
    pg = p.page
    pg.wait_for_selector(".judgment")
    assert pg.locator("#sample-panel pre.out").inner_text().strip() == samples[1].output.strip()
    answers_shown = pg.locator("table.questions td:nth-child(3)").all_inner_texts()
    assert answers_shown[:2] == ["yes", "no"] and set(answers_shown[2:]) == {"missing"}
    pg.goto(html.as_uri() + "#tab=overview")
    assert pg.locator(".card.run .badge").inner_text() == "imported"
    assert p.errors == []


@browser
def test_a_pairwise_run_gets_its_tab_and_a_pair_page(tmp_path, chromium):
    from assay.cli.view import _page
    from assay.datasets import Dataset
    from assay.judges.scripted import ScriptedJudge
    from assay.types import Dimension, Sample

    dim = Dimension(name="quality", definition="How good it is.")
    samples = [Sample(id=f"d{d}:S{k}", doc_id=f"d{d}", system_id=f"S{k}", source="Say hi.",
                      output=f"quality {k} <b>hi</b>", human={"quality": float(k)})
               for d in range(3) for k in (1, 2, 3)]
    run = tmp_path / "pair"

    def by_marker(request):
        text = request.messages[-1].content
        a = int(text.split("<<<OUTPUT A>>>\n")[1][8])
        b = int(text.split("<<<OUTPUT B>>>\n")[1][8])
        return "Reasoning first.\n" + ("[[A]]" if a > b else "[[B]]")

    off_loop(assay.evaluate, Dataset.from_samples(samples, [dim]), method="pairwise", judge=ScriptedJudge(by_marker),
             run_dir=run)
    html = tmp_path / "view.html"
    html.write_text(_page([run], 50, 0, None, None, None), encoding="utf-8")
    p = Page(chromium, html.as_uri() + "#tab=pairwise")
    pg = p.page
    pg.wait_for_selector("#sec-pairwise .card.pairwise table")
    assert pg.locator("#tab-pairwise").inner_text() == "Pairwise"
    cells = pg.locator("#sec-pairwise table.grid td").all_inner_texts()
    assert cells[:2] == ["S3", "1 [1, 1]"]  # strongest first: it wins every pair, on every resample
    pg.wait_for_selector("#sec-pairwise .pairwise-heat .main-svg")
    pg.wait_for_selector("#sec-pairwise .pairwise-bt .main-svg")
    p2 = Page(chromium, html.as_uri() + "#sample=" + "d0:S1|d0:S2")
    pg2 = p2.page
    pg2.wait_for_selector(".pairwise-trace")
    sides = pg2.locator(".pair-side pre").all_inner_texts()
    assert sides == ["quality 1 <b>hi</b>", "quality 2 <b>hi</b>"]  # side by side, markup shown as text
    trace_text = pg2.locator(".pairwise-trace").inner_text()
    assert "A shown first" in trace_text and "B shown first" in trace_text and "Reasoning first." in trace_text
    assert "B (2 vs 1)" in trace_text  # people's preference
    assert pg2.locator("#sample-panel .warn").count() == 0  # the texts are the trace's, not missing
    pg2.screenshot(path=str(tmp_path / "pair.png"), full_page=True)
    pg.screenshot(path=str(tmp_path / "pairwise.png"), full_page=True)
    assert p.errors == [] and p2.errors == []


def test_trust_tab_shows_three_intervals_and_a_forest_plot_per_dimension(tmp_path, chromium):
    pytest.importorskip("ppi_py")
    from assay.cli.view import sections
    from assay.meta.inputs import load_scores
    from assay.meta.trust import simulate_labels

    run = tmp_path / "trust-run"
    off_loop(assay.evaluate, "summeval-experts", method="direct", judge=ScriptedJudge(_direct, name="trust"), docs=6,
             dimensions=["coherence", "fluency"], run_dir=run)
    trust = {"labels": 30, "seed": 2, "alpha": 0.1}
    html = tmp_path / "trust.html"
    html.write_text(render_page(build_view_data([run], bootstrap=0), off_loop(sections, [run], trust)),
                    encoding="utf-8")
    p = Page(chromium, html.as_uri() + "#tab=trust")
    pg = p.page
    pg.wait_for_selector(".forest .main-svg")
    assert pg.locator(".forest").count() == 2  # one forest plot per dimension
    rows = pg.locator(".card.trust table tbody tr").all_inner_texts()
    assert [r.split("\t")[0] for r in rows] == ["coherence", "fluency"]
    chosen = simulate_labels(load_scores(run), 30, seed=2)
    mean = sum(chosen.ratings["coherence"].values()) / 30
    assert f"{mean:.3f} [" in rows[0] and "30 / 72" in rows[0]  # human-only: the 12 labels' mean with its interval
    assert "bootstrap-t" in rows[0]  # the interval kind auto chose for 30 labels, named
    forest = pg.locator(".forest").first
    svg_texts = "(nodes) => nodes.map((n) => n.textContent)"  # SVG text has no innerText
    ticks = forest.locator(".ytick text").evaluate_all(svg_texts)
    assert ticks[0] == "all samples" and len(ticks) > 1  # the whole run, then each system with an interval
    legend = forest.locator(".legendtext").evaluate_all(svg_texts)
    assert {"human-only", "PPI++", "judge-only", "all labels (truth)"} <= set(legend)
    assert "90% intervals" in forest.locator(".gtitle").text_content()
    pg.screenshot(path=str(tmp_path / "trust.png"), full_page=True)
    assert p.errors == []


# -- names whole, texts labelled as the card names them (issue 23) --------------------------------------

@browser
def test_sample_system_and_run_names_are_whole_and_texts_labelled_by_the_card(tmp_path, chromium):
    ds = assay.load_dataset("topical-chat").select(limit=2)
    run = tmp_path / "topical-chat-direct-llama-3.1-8b-instruct-q4_k_m-second-attempt"
    off_loop(assay.evaluate, ds, method="direct", dimensions=DIMS, run_dir=run,
             judge=ScriptedJudge(_direct, name="a-judge-with-a-rather-long-model-name"))
    html = _write(tmp_path, [run])
    p = Page(chromium, html.as_uri() + "#tab=samples")
    pg = p.page
    pg.wait_for_selector("#sample-table tbody tr")
    cut = pg.evaluate("""() => [...document.querySelectorAll('#sample-table tbody tr')].flatMap((tr) =>
        [...tr.children].slice(0, 4).filter((td) => td.scrollWidth > td.clientWidth).map((td) => td.textContent))""")
    assert cut == []  # no sample, system, dimension or run name overflows its cell
    shown = pg.locator("#sample-table tbody td:nth-child(4)").first.inner_text()
    assert shown == f"{run.name} · direct · scripted:a-judge-with-a-rather-long-model-name"
    assert set(pg.locator("#sample-table tbody td:nth-child(1)").all_inner_texts()) == {s.id for s in ds.samples}
    pg.screenshot(path=str(tmp_path / "names.png"), full_page=True)
    pg.goto(html.as_uri() + "#sample=" + urllib.parse.quote(ds.samples[0].id))
    pg.wait_for_selector(".judgment")
    headings = pg.locator("#sample-panel .textblock h4").all_inner_texts()
    assert headings == ["conversation history", "knowledge fact", "response"]
    pg.screenshot(path=str(tmp_path / "sample-labels.png"), full_page=True)
    assert p.errors == []
