"""The viewer on a large run: build time, file size and load time in headless Chromium for N judgments.

A synthetic dataset (short dialogues, 4 dimensions, human ratings) is judged with the direct method by a scripted
judge (a share of answers off-format, so failures show), then ``assay view -o`` writes the page and Playwright opens
it with the system chromium: time to the rendered overview, to the sample table, to a filter, to a deep link.

Usage: python benchmarks/view_load.py [--samples 5000] [--keep DIR]   (5000 samples x 4 dimensions = 20,000)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
import time
import urllib.parse
from pathlib import Path

import assay
from assay.judges.scripted import ScriptedJudge
from assay.view import build_view_data, render_page

DIMS = ["coherence", "fluency", "relevance", "engagingness"]
SPEC = """\
name: synthetic-dialogues
file: data.jsonl
level: dataset
fields: {id: id, doc_id: doc, system_id: sys, source: src, output: out}
human: {coherence: coherence, fluency: fluency, relevance: relevance, engagingness: engagingness}
dimensions:
"""


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def write_dataset(base: Path, n: int) -> Path:
    with (base / "data.jsonl").open("w") as f:
        for i in range(n):
            doc = i // 5
            rec = {"id": f"s{i}", "doc": f"d{doc}", "sys": f"system-{i % 5}",
                   "src": f"A: what do you think about topic {doc}?\nB: " + "I read about it yesterday. " * 8,
                   "out": f"Reply {i}: " + "that sounds interesting, tell me more about it. " * 3}
            rec.update({d: 1 + _h(f"{d}{i}") % 5 for d in DIMS})
            f.write(json.dumps(rec) + "\n")
    spec = base / "spec.yaml"
    spec.write_text(SPEC + "".join(f"  - {{name: {d}, definition: \"{d}.\", scale: {{low: 1, high: 5}}}}\n"
                                   for d in DIMS))
    return spec


def answer(req) -> str:
    h = _h(req.messages[-1].content)
    return "I cannot say." if h % 20 == 0 else str(1 + h % 5)


def measure(html: Path, first_id: str) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        t0 = time.perf_counter()
        page.goto(html.as_uri())
        page.wait_for_selector("#scatter .main-svg", timeout=120_000)
        out["overview_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        page.goto(html.as_uri() + "#tab=samples")
        page.wait_for_selector("#sample-table tbody tr")
        out["table_s"] = time.perf_counter() - t0
        out["rows_in_dom"] = page.locator("#sample-table tbody tr").count()
        t0 = time.perf_counter()
        page.select_option("#sort", "6:desc")
        page.select_option("#f-status", "unscored")
        out["filter_sort_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        page.goto(html.as_uri() + "#sample=" + urllib.parse.quote(first_id))
        page.wait_for_selector(".judgment")
        out["deep_link_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()  # a cold load straight onto a deep link
        fresh = browser.new_page()
        fresh.goto(html.as_uri() + "#sample=" + urllib.parse.quote(first_id))
        fresh.wait_for_selector(".judgment", timeout=120_000)
        out["cold_deep_link_s"] = time.perf_counter() - t0
        out["page_errors"] = len(errors)
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--keep", type=Path, help="keep the run and page here")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="assay-view-"))
    base.mkdir(parents=True, exist_ok=True)
    spec = write_dataset(base, args.samples)
    t0 = time.perf_counter()
    res = assay.evaluate(str(spec), method="direct", judge=ScriptedJudge(answer), run_dir=base / "run")
    print(f"judged {len(res.judgments)} units in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    html = base / "view.html"
    html.write_text(render_page(build_view_data([base / "run"], dataset=str(spec))), encoding="utf-8")
    build = time.perf_counter() - t0
    print(f"built {html} in {build:.1f} s: {html.stat().st_size / 1e6:.1f} MB")
    print(json.dumps({k: round(v, 2) for k, v in measure(html, "s0").items()}))
    if not args.keep:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
