"""SEAL benchmark: correlations with human ratings, the three ablations, cost by stage, wall time.

Shared subsets (defaults = the full benchmark):
  Topical-Chat: first 20 dialogue contexts (120 responses x 4 dims), turn-level pooled Pearson / Spearman;
  SummEval: first 10 articles (160 summaries x 4 dims), Spearman / Kendall per article, then averaged;
  QAGS-XSum: first 60 summaries, pooled Pearson / Spearman / Kendall.

Ablations: w/o SD (``no_units``), w/o SV (``no_subdims``) as real runs; w/o weighting as an offline
re-aggregation of the full run's stored decisions with uniform weights (same decisions, zero calls), or
as a real ``uniform_weights`` run with ``--real-uniform``. An ablation that is identical by construction
(w/o SD where every unit is already the whole output; w/o weighting where a dimension has one
sub-dimension) is not run, and the table says so.

    python benchmarks/seal.py                       # the full benchmark (hours with the embedded judge)
    python benchmarks/seal.py --tc-docs 2 --se-docs 1 --qags 12 --reasks 1   # a smaller slice
    python benchmarks/seal.py --decisions logprobs ...   # one question per call (assay's small-judge mode)

Runs are stored under ``--work`` and resumed, so an interrupted benchmark continues where it stopped.
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

import assay
from assay import meta
from assay.methods.seal.aggregate import rescore
from assay.run.store import DB_NAME, RunStore
from assay.types import Judgment

SETS = ("topical-chat", "summeval", "qags-xsum")


def correlations(name: str, rows: list[tuple[str, float | None, float]]) -> dict[str, Any]:
    """Correlations at the set's conventional level over the scored rows (doc_id, score, human), by
    :mod:`assay.meta`: SummEval sample level, the others pooled (dataset level)."""
    scored = [(d, s, h) for d, s, h in rows if s is not None]
    out: dict[str, Any] = {"n": len(rows), "scored": len(scored)}
    frame = pd.DataFrame(scored, columns=["doc_id", "score", "human"]).astype({"score": float, "human": float})
    if name == "summeval":
        rho, tau = meta.sample_level(frame, "spearman"), meta.sample_level(frame, "kendall")
        out.update(rho=rho["value"], tau=tau["value"], docs=f"{rho['n_units']}/{rho['n_units'] + rho['skipped']}")
        return out
    out.update(r=meta.dataset_level(frame, "pearson")["value"], rho=meta.dataset_level(frame, "spearman")["value"])
    if name == "qags-xsum":
        out["tau"] = meta.dataset_level(frame, "kendall")["value"]
    return out


def seed_cache(src: Path, dst: Path) -> None:
    """Copy the full run's call cache into an ablation's run, so identical requests (stage-1 facts) are
    answered from it instead of being made again: same judge, same request, same greedy answer."""
    if not (src / DB_NAME).exists():
        return
    RunStore(dst).close()  # create the schema
    db = sqlite3.connect(dst / DB_NAME)
    db.execute("ATTACH DATABASE ? AS src", (str(src / DB_NAME),))
    db.execute("INSERT OR IGNORE INTO calls SELECT * FROM src.calls")
    db.commit()
    db.close()


def run_variant(data: assay.datasets.Dataset, work: Path, variant: str, options: dict[str, Any],
                judge: str, threads: int) -> tuple[list[Judgment], float]:
    run_dir = work / data.name / variant
    if variant != "SEAL":
        seed_cache(work / data.name / "SEAL", run_dir)
    start = time.perf_counter()
    res = assay.evaluate(data, method="seal", judge=judge, judge_options={"n_threads": threads},
                         run_dir=run_dir, options=options)
    return res.judgments, time.perf_counter() - start


def cost_rows(judgments: list[Judgment]) -> dict[str, dict[str, float]]:
    """Per dimension: mean calls and tokens per (sample, dimension) by stage, paid and attributable."""
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    count: dict[str, int] = defaultdict(int)
    for j in judgments:
        count[j.dimension] += 1
        a = acc[j.dimension]
        for stage, u in j.usage.items():
            a[f"{stage}_calls"] += u.calls + u.cached_calls
            a[f"{stage}_tokens"] += u.prompt_tokens + u.completion_tokens
            a[f"{stage}_s"] += u.latency_s
        # table 9 counts stage 1 in full for every dimension that uses it, shared or not
        for st in j.trace.get("stage1", {}).values():
            a["stage1_attrib_tokens"] += st["usage"]["prompt_tokens"] + st["usage"]["completion_tokens"]
        a["holistic"] += j.trace.get("granularity") == "holistic"
        a["reasked"] += sum(len(c["attempts"]) > 1 for c in j.trace.get("calls", []))
        a["w_fallback"] += j.trace.get("weights", {}).get("source") == "uniform (fallback)"
        a["w_renorm"] += bool(j.trace.get("weights", {}).get("renormalised"))
    return {d: {k: v / count[d] for k, v in a.items()} for d, a in acc.items()}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "n/a" if math.isnan(v) else f"{v:.3f}"
    return str(v)


def humans(data: assay.datasets.Dataset) -> dict[tuple[str, str], tuple[str, float]]:
    return {(s.id, d): (s.doc_id, v) for s in data.samples for d, v in s.human.items()}


def table(name: str, variant: str, judgments: list[Judgment], hum: dict, *, uniform: bool = False) -> list[str]:
    by_dim: dict[str, list[tuple[str, float | None, float]]] = defaultdict(list)
    for j in judgments:
        score = rescore(j.trace, uniform=True) if uniform else j.score
        doc, human = hum[(j.sample_id, j.dimension)]
        by_dim[j.dimension].append((doc, score, human))
    lines = []
    for dim, rows in sorted(by_dim.items()):
        c = correlations(name, rows)
        keys = ["r", "rho", "tau", "docs"]
        lines.append(f"| {name} | {variant} | {dim} | {c['scored']}/{c['n']} | "
                     + " | ".join(_fmt(c.get(k, "")) for k in keys) + " |")
    return lines


def _single_subdim_everywhere(judgments: list[Judgment]) -> bool:
    return all(len(j.trace.get("subdimensions", [])) <= 1 for j in judgments)


def _single_unit_everywhere(judgments: list[Judgment]) -> bool:
    return all(j.trace.get("granularity") == "single" for j in judgments)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--tc-docs", type=int, default=20)
    ap.add_argument("--se-docs", type=int, default=10)
    ap.add_argument("--qags", type=int, default=60, help="first N QAGS-XSum summaries")
    ap.add_argument("--ablations", default="no_units,no_subdims,uniform_weights")
    ap.add_argument("--real-uniform", action="store_true", help="run w/o weighting for real instead of offline")
    ap.add_argument("--reasks", "--max-reasks", dest="reasks", type=int, default=2)
    ap.add_argument("--decisions", choices=["batched", "logprobs"], default="batched",
                    help="batched: the paper's JSON answers; logprobs: one question per call (small judges)")
    ap.add_argument("--judge", default="llamacpp:smollm2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default="/tmp/assay-seal-bench")
    args = ap.parse_args()
    work = Path(args.work) / args.decisions
    ablations = [a for a in args.ablations.split(",") if a]
    base = {"reasks": args.reasks, "decisions": args.decisions}
    corr = ["| set | variant | dimension | scored | r | rho | tau | docs |", "|---|---|---|---|---|---|---|---|"]
    cost = ["| set | variant | dimension | decompose calls | decompose tok | verify calls | verify tok | weights calls"
            " | weights tok | stage-1 tok (attributable) | holistic | re-asked calls | w fallback | w renorm |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    walls = []
    for name in [s for s in args.sets.split(",") if s]:
        data = assay.load_dataset(name)
        data = (data.select(docs=args.tc_docs) if name == "topical-chat" else
                data.select(docs=args.se_docs) if name == "summeval" else data.select(limit=args.qags))
        hum = humans(data)
        variants = {"SEAL": base}
        for a in ablations:
            if a != "uniform_weights" or args.real_uniform:
                variants[{"no_units": "w/o SD", "no_subdims": "w/o SV", "uniform_weights": "w/o weighting"}[a]] = \
                    base | {a: True}
        full: list[Judgment] = []
        for variant, opts in variants.items():
            if variant == "w/o SD" and full and _single_unit_everywhere(full):
                corr.append(f"| {name} | w/o SD | all | identical to SEAL: every unit is already the whole output |"
                            " | | | |")
                continue
            tag = "SEAL" if variant == "SEAL" else variant.replace("/", "_").replace(" ", "")
            judgments, wall = run_variant(data, work, tag, opts, args.judge, args.threads)
            full = full or judgments
            walls.append(f"| {name} | {variant} | {len(data.samples)} samples | {wall:.0f} s |")
            corr += table(name, variant, judgments, hum)
            for dim, c in sorted(cost_rows(judgments).items()):
                cols = ["decompose_calls", "decompose_tokens", "verify_calls", "verify_tokens", "weights_calls",
                        "weights_tokens", "stage1_attrib_tokens", "holistic", "reasked", "w_fallback", "w_renorm"]
                cost.append(f"| {name} | {variant} | {dim} | " + " | ".join(f"{c.get(k, 0.0):.2f}" for k in cols)
                            + " |")
        if "uniform_weights" in ablations and not args.real_uniform:
            if _single_subdim_everywhere(full):
                corr.append(f"| {name} | w/o weighting | all | identical to SEAL: one sub-dimension per dimension |"
                            " | | | |")
            else:
                corr += table(name, "w/o weighting (offline)", full, hum, uniform=True)
        print(f"[{name} done]\n" + "\n".join(corr[2:]), flush=True)
    print("\n## Correlations\n\n" + "\n".join(corr))
    print("\n## Cost per (sample, dimension), by stage (calls include cache hits; tokens are of real calls)\n\n"
          + "\n".join(cost))
    print("\n## Wall time (includes resumed work: 0 s for a finished run)\n\n| set | variant | size | wall |\n"
          "|---|---|---|---|\n" + "\n".join(walls))


if __name__ == "__main__":
    main()
