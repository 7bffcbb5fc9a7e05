"""CheckEval on the shared subsets with one judge: correlations with humans, calls, tokens, time.

Runs, for Topical-Chat (first N dialogue contexts) and SummEval (first M articles):

* ``seed``  - the shipped seed checklists (CheckEval 2025 tables 15-16);
* ``built`` - checklists grown from those seeds by ``build_checklist`` with the same judge
  (diversification + elaboration + remove-only LLM filter).

Each run asks with ``soft`` on, so that the binary yes-ratio and the soft mean P(yes) come from
the very same calls (the binary score is in every judgment's trace). Correlations come from
:mod:`assay.meta` (the functions behind ``assay meta``) at each set's conventional level:
Topical-Chat turn level (pooled Pearson r / Spearman rho over all responses), SummEval sample
level (Spearman rho / Kendall tau per article, then averaged over the articles where they are
defined). Runs are stored and resumable: re-running prints the same
figures without new calls.

    python benchmarks/checkeval.py                       # the full shared subsets (20 contexts, 10 articles)
    python benchmarks/checkeval.py --tc-docs 5 --se-docs 3 --configs seed
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from pathlib import Path
from typing import Any

import pandas as pd

import assay
from assay import meta
from assay.judges import ManagedJudge, load_judge
from assay.methods.checkeval.build import BuildSettings, build_checklist
from assay.methods.checkeval.checklist import dump_checklist, stage_counts
from assay.methods.checkeval.shipped import load_checklist
from assay.run.store import RunStore

SETS = {"topical-chat": "turn", "summeval": "sample"}


def _frame(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["doc_id", "score", "human"]).astype({"score": float, "human": float})


def _value(res: dict[str, Any]) -> float | None:
    return None if math.isnan(res["value"]) else res["value"]


def turn_level(rows: list[tuple[str, float, float]]) -> dict[str, Any]:
    """Pooled Pearson and Spearman over all (doc, score, human) rows (:func:`assay.meta.dataset_level`)."""
    frame = _frame(rows)
    return {"pearson": _value(meta.dataset_level(frame, "pearson")),
            "spearman": _value(meta.dataset_level(frame, "spearman")), "n": len(rows)}


def sample_level(rows: list[tuple[str, float, float]]) -> dict[str, Any]:
    """Spearman and Kendall per document, averaged over documents where they are defined
    (:func:`assay.meta.sample_level`)."""
    frame = _frame(rows)
    out: dict[str, Any] = {"docs": frame["doc_id"].nunique()}
    for name in ("spearman", "kendall"):
        res = meta.sample_level(frame, name)
        out[name] = _value(res)
        out[f"{name}_docs"] = res["n_units"]
    return out


def evaluate_rows(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per dimension: (doc, binary, soft, human) rows, coverage, usage per unit and judge seconds."""
    with RunStore(run_dir, readonly=True) as store:
        samples = {s["id"]: s for s in store.samples()}
        judgments = store.judgments()
    out: dict[str, dict[str, Any]] = {}
    for j in judgments:
        d = out.setdefault(j.dimension, {"binary": [], "soft": [], "units": 0, "scored": 0, "calls": 0,
                                         "prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0,
                                         "asked": 0, "missing": 0, "reasked": 0})
        s = samples[j.sample_id]
        human = s["human"].get(j.dimension)
        u = j.total_usage()
        d["units"] += 1
        d["calls"] += u.calls + u.cached_calls
        d["prompt_tokens"] += u.prompt_tokens
        d["completion_tokens"] += u.completion_tokens
        d["latency_s"] += u.latency_s
        d["asked"] += j.trace.get("asked", 0)
        d["missing"] += j.trace.get("missing", 0)
        d["reasked"] += len(j.trace.get("reasks", []))
        if j.score is None or human is None:
            continue
        d["scored"] += 1
        if j.trace.get("binary_score") is not None:
            d["binary"].append((s["doc_id"], j.trace["binary_score"], human))
        if j.trace.get("soft_score") is not None:
            d["soft"].append((s["doc_id"], j.trace["soft_score"], human))
    return out


async def _build(seeds: str, dataset: assay.Dataset, judge_spec: str, judge_opts: dict[str, Any], out: Path,
                 settings: BuildSettings) -> Path:
    path = out / f"built-{dataset.name}.yaml"
    if path.exists():
        return path
    store = RunStore(out / f"build-cache-{dataset.name}")
    managed = ManagedJudge(load_judge(judge_spec, **judge_opts), cache=store)
    try:
        built = await build_checklist(load_checklist(seeds), dataset.info, managed, settings,
                                      list(dataset.info.default_dimensions), name=f"{dataset.name}-built")
    finally:
        await managed.aclose()
        store.close()
    path.write_text(dump_checklist(built))
    return path


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", default="llamacpp:smollm2")
    ap.add_argument("--n-threads", type=int, default=2)
    ap.add_argument("--tc-docs", type=int, default=20)
    ap.add_argument("--se-docs", type=int, default=10)
    ap.add_argument("--configs", default="seed,built", help="comma-separated: seed, built")
    ap.add_argument("--sets", default="topical-chat,summeval")
    ap.add_argument("--group-size", type=int, default=5)
    ap.add_argument("--build-max-tokens", type=int, default=200)
    ap.add_argument("--out", type=Path, default=Path("runs/bench-checkeval"))
    args = ap.parse_args()
    judge_opts = {"n_threads": args.n_threads} if args.judge.startswith("llamacpp") else {}
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"judge": args.judge, "tc_docs": args.tc_docs, "se_docs": args.se_docs, "rows": []}
    for set_name in args.sets.split(","):
        docs = args.tc_docs if set_name == "topical-chat" else args.se_docs
        ds = assay.load_dataset(set_name).select(docs=docs)
        for config in args.configs.split(","):
            t0 = time.perf_counter()
            checklist = set_name
            build_info: dict[str, Any] = {}
            if config == "built":
                settings = BuildSettings(temperature=0.0, max_tokens=args.build_max_tokens, reasks=1)
                path = asyncio.run(_build(set_name, ds, args.judge, judge_opts, args.out, settings))
                cl = load_checklist(str(path))
                checklist = str(path)
                build_info = {"path": str(path), "counts": stage_counts(cl), "failures": cl.build.failures,
                              "calls": len(cl.build.calls), "usage": cl.build.usage}
            t1 = time.perf_counter()
            run_dir = args.out / f"{set_name}-{config}-d{docs}-g{args.group_size}"
            assay.evaluate(ds, method="checkeval", judge=args.judge, judge_options=judge_opts, run_dir=run_dir,
                           options={"checklist": checklist, "soft": True, "group_size": args.group_size})
            t2 = time.perf_counter()
            per_dim = evaluate_rows(run_dir)
            for dim, d in per_dim.items():
                level = SETS[set_name]
                corr = {kind: (turn_level if level == "turn" else sample_level)(d[kind]) for kind in ("binary", "soft")}
                row = {"set": set_name, "config": config, "dimension": dim, "level": level, "corr": corr,
                       "units": d["units"], "scored": d["scored"],
                       "calls_per_unit": d["calls"] / d["units"],
                       "prompt_tokens_per_unit": d["prompt_tokens"] / d["units"],
                       "completion_tokens_per_unit": d["completion_tokens"] / d["units"],
                       "judge_s_per_unit": d["latency_s"] / d["units"],
                       "missing_share": d["missing"] / d["asked"] if d["asked"] else None,
                       "questions_per_unit": d["asked"] / d["units"]}
                results["rows"].append(row)
            results.setdefault("wall", {})[f"{set_name}/{config}"] = {"build_s": t1 - t0, "evaluate_s": t2 - t1}
            if build_info:
                results.setdefault("builds", {})[set_name] = build_info
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    _print(results)


def _print(results: dict[str, Any]) -> None:
    print(f"judge {results['judge']}; Topical-Chat first {results['tc_docs']} contexts, "
          f"SummEval first {results['se_docs']} articles\n")
    print("| set | checklist | dimension | questions | binary r1 | binary r2 | soft r1 | soft r2 | scored | "
          "missing answers | calls/unit | prompt tok/unit | completion tok/unit | judge s/unit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results["rows"]:
        b, s = r["corr"]["binary"], r["corr"]["soft"]
        keys = ("pearson", "spearman") if r["level"] == "turn" else ("spearman", "kendall")
        print(f"| {r['set']} | {r['config']} | {r['dimension']} | {r['questions_per_unit']:.1f} | "
              f"{_fmt(b[keys[0]])} | {_fmt(b[keys[1]])} | {_fmt(s[keys[0]])} | {_fmt(s[keys[1]])} | "
              f"{r['scored']}/{r['units']} | {_fmt(r['missing_share'])} | {r['calls_per_unit']:.2f} | "
              f"{r['prompt_tokens_per_unit']:.0f} | {r['completion_tokens_per_unit']:.0f} | "
              f"{r['judge_s_per_unit']:.2f} |")
    print("\nr1/r2: Topical-Chat turn level = Pearson/Spearman pooled; SummEval sample level = Spearman/Kendall "
          "per article, averaged over articles where defined")
    for r in results["rows"]:
        if r["level"] == "sample":
            c = r["corr"]["binary"]
            print(f"  {r['set']}/{r['config']}/{r['dimension']}: binary defined on {c['spearman_docs']}/{c['docs']} "
                  f"articles, soft on {r['corr']['soft']['spearman_docs']}/{r['corr']['soft']['docs']}")
    for key, w in results.get("wall", {}).items():
        print(f"wall {key}: build {w['build_s']:.0f} s, evaluate {w['evaluate_s']:.0f} s (this invocation)")
    for name, b in results.get("builds", {}).items():
        print(f"built {name}: {b['calls']} calls, counts {json.dumps(b['counts'])}, failures {len(b['failures'])}")


if __name__ == "__main__":
    main()
