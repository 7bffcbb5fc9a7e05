"""G-Eval with the embedded judge on the shared benchmark subsets, and what unit ordering saves.

One command::

    PYTHONPATH=src python benchmarks/geval.py                # the full shared subsets
    PYTHONPATH=src python benchmarks/geval.py --tc-docs 5 --se-docs 2 --sampling-tc-docs 2

Runs G-Eval with SmolLM2-135M (``llamacpp:smollm2``) in ``logprobs`` and ``sampling`` (n=20)
mode on Topical-Chat (first 20 dialogue contexts: turn-level Pearson and Spearman, pooled) and
SummEval (first 10 articles: sample-level Spearman and Kendall, per article then averaged),
and prints per dimension and mode the correlations with the human ratings (computed with
:mod:`assay.meta.correlation`), calls, prompt and completion tokens, and judge time. The
evaluation steps are generated once per dataset (in the first mode's run) and reused by the
other mode through a steps file, so both modes judge with the same steps.

Then, on a small SummEval slice, it scores the same units in three orders with one embedded
judge and prints the prompt tokens the llama.cpp KV cache reused and evaluated: a shuffled
order, the executor's default sample-major order, and G-Eval's dimension-major order.

Run directories are kept under ``--work`` (default ``benchmarks/runs/geval``); re-running the
command resumes them instead of calling the judge again (the timing columns then show the
cached run, except the judge-time column, which sums the stored per-call latencies).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

import assay
from assay.judges import ManagedJudge
from assay.meta.correlation import dataset_level, sample_level
from assay.methods.base import RunContext
from assay.methods.geval.method import GEval
from assay.methods.geval.steps import steps_document
from assay.run.executor import order_units
from assay.run.store import RunStore

TC_DIMS = ["naturalness", "coherence", "engagingness", "groundedness"]
SE_DIMS = ["coherence", "consistency", "fluency", "relevance"]


def turn_level(frame: pd.DataFrame) -> dict[str, float]:
    """Pooled Pearson and Spearman over all scored outputs (Topical-Chat's level in G-Eval's Table 2)."""
    return {m: dataset_level(frame, m)["value"] for m in ("pearson", "spearman")}


def per_article(frame: pd.DataFrame) -> dict[str, Any]:
    """Spearman and Kendall per source article, averaged over articles (G-Eval's Table 1).

    Articles where the judge's scores (or the humans') are all equal have no correlation and
    are left out of the average; how many counted is reported.
    """
    rho, tau = sample_level(frame, "spearman"), sample_level(frame, "kendall")
    return {"spearman": rho["value"], "kendall": tau["value"], "docs": rho["n_units"],
            "of_docs": rho["n_units"] + rho["skipped"]}


def run_mode(dataset: str, docs: int, dims: list[str], mode: str, work: Path, steps: Path | None,
             args: argparse.Namespace) -> tuple[list[dict[str, Any]], float, Any]:
    """One G-Eval run (resumable), its rows, wall time and result."""
    options: dict[str, Any] = {"mode": mode, "n": args.n}
    if steps is not None:
        options["steps"] = str(steps)
    start = time.perf_counter()
    result = assay.evaluate(dataset, method="geval", judge="llamacpp:smollm2",
                            judge_options={"n_threads": args.threads}, dimensions=dims, docs=docs,
                            run_dir=work / f"{dataset}-{mode}-{docs}docs", options=options)
    wall = time.perf_counter() - start
    with RunStore(result.run_dir, readonly=True) as store:
        rows = store.rows()
    return rows, wall, result


def export_steps(run_dir: Path, dataset: str, path: Path) -> Path | None:
    """Collect the steps a run generated into one steps file for the other mode's run."""
    with RunStore(run_dir, readonly=True) as store:
        arts = store.artifacts()
    entries = {}
    for name, art in sorted(arts.items()):
        if name.startswith(f"geval/steps/{dataset}/"):
            entries.update(yaml.safe_load(art["content"])["dimensions"])
    if not entries:
        return None
    path.write_text(steps_document(dataset, entries), encoding="utf-8")
    return path


def dimension_table(dataset: str, mode: str, rows: list[dict[str, Any]], dims: list[str],
                    latency: dict[str, float]) -> list[str]:
    """Markdown rows: correlations, usage and judge time per dimension."""
    lines = []
    for dim in dims:
        sub = [r for r in rows if r["dimension"] == dim]
        scored = sum(r["score"] is not None for r in sub)
        frame = pd.DataFrame(sub, columns=["doc_id", "score", "human"]).astype({"score": float, "human": float})
        if dataset == "topical-chat":
            c = turn_level(frame)
            corr = f"r {c['pearson']:.3f} / ρ {c['spearman']:.3f}"
        else:
            c = per_article(frame)
            corr = f"ρ {c['spearman']:.3f} / τ {c['kendall']:.3f} ({c['docs']}/{c['of_docs']} docs)"
        calls = sum(r["calls"] for r in sub)
        cached = sum(r["cached_calls"] for r in sub)
        ptok = sum(r["prompt_tokens"] for r in sub)
        ctok = sum(r["completion_tokens"] for r in sub)
        lines.append(f"| {dataset} | {mode} | {dim} | {scored}/{len(sub)} | {corr} | {calls}"
                     f"{f' (+{cached} cached)' if cached else ''} | {ptok} | {ctok} | {latency.get(dim, 0.0):.0f} |")
    return lines


def correlation_runs(args: argparse.Namespace, work: Path) -> None:
    print("| dataset | mode | dimension | scored | correlation with humans | calls | prompt tok | completion tok "
          "| judge s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    walls = []
    for dataset, dims, docs_by_mode in (
            ("topical-chat", TC_DIMS, {"logprobs": args.tc_docs, "sampling": args.sampling_tc_docs}),
            ("summeval", SE_DIMS, {"logprobs": args.se_docs, "sampling": args.sampling_se_docs})):
        steps: Path | None = None
        for mode in args.modes:
            docs = docs_by_mode[mode]
            if not docs:
                continue
            rows, wall, result = run_mode(dataset, docs, dims, mode, work, steps, args)
            if steps is None:
                steps = export_steps(result.run_dir, dataset, work / f"{dataset}-steps.yaml")
            latency: dict[str, float] = {}
            for j in result.judgments:
                latency[j.dimension] = latency.get(j.dimension, 0.0) + j.total_usage().latency_s
            for line in dimension_table(dataset, mode, rows, dims, latency):
                print(line, flush=True)
            step_usage = result.usage.get("steps")
            walls.append(f"{dataset} {mode} ({docs} docs, {len(rows)} judgments): wall {wall:.0f} s"
                         f"{' (resumed: cached)' if result.resumed else ''}; steps generated here: "
                         f"{step_usage.calls if step_usage else 0} calls, "
                         f"{step_usage.latency_s if step_usage else 0:.0f} s")
    print()
    for w in walls:
        print(w)


async def order_demo(args: argparse.Namespace, work: Path) -> None:
    """Score the same units in three orders with one embedded judge; print the KV-cache reuse."""
    from assay.judges.base import Request
    from assay.judges.llamacpp import LlamaCppJudge

    ds = assay.load_dataset("summeval").select(docs=args.prefix_docs, limit=args.prefix_limit)
    dims = ds.dimensions(SE_DIMS)
    steps = work / "summeval-steps.yaml"
    options: dict[str, Any] = {"mode": "logprobs"}
    if steps.exists():
        options["steps"] = str(steps)
    bare = LlamaCppJudge("smollm2", n_threads=args.threads)
    judge = ManagedJudge(bare)  # no call cache: every unit is computed
    method = GEval(options)
    ctx = RunContext(dataset=ds, dimensions=dims, judge=judge)
    await method.prepare(ctx)
    orders = {"dimension-major (G-Eval's)": order_units(ds.samples, dims, set(), by="dimension"),
              "sample-major (executor default)": order_units(ds.samples, dims, set(), by="sample")}
    shuffled = list(orders["sample-major (executor default)"])
    random.Random(0).shuffle(shuffled)
    orders = {"shuffled": shuffled, **orders}
    scores: dict[str, dict[tuple[str, str], float | None]] = {}
    print(f"\nUnit order on SummEval, first {args.prefix_docs} article(s), {len(ds.samples)} summaries x "
          f"{len(dims)} dimensions = {len(shuffled)} units, logprobs mode, no call cache\n")
    print("| order | prompt tokens evaluated | prompt tokens reused | reused share | wall s |")
    print("| --- | --- | --- | --- | --- |")
    for name, units in orders.items():
        await bare.generate(Request.chat("Hello", max_tokens=1))  # leave the KV cache on an unrelated prompt
        before = dict(bare.stats)
        start = time.perf_counter()
        scores[name] = {}
        for sample, dim in units:
            j = await method.score(sample, dim, ctx)
            scores[name][(sample.id, dim.name)] = j.score
        wall = time.perf_counter() - start
        ev = bare.stats["prompt_tokens_evaluated"] - before["prompt_tokens_evaluated"]
        re_ = bare.stats["prompt_tokens_reused"] - before["prompt_tokens_reused"]
        print(f"| {name} | {ev} | {re_} | {re_ / (ev + re_):.1%} | {wall:.0f} |", flush=True)
    base = scores["shuffled"]
    diffs = [abs((s[k] or 0) - (base[k] or 0)) for s in scores.values() for k in base]
    print(f"\nlargest score difference between orders: {max(diffs):.2e}")
    await judge.aclose()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tc-docs", type=int, default=20, help="Topical-Chat contexts for logprobs mode")
    p.add_argument("--se-docs", type=int, default=10, help="SummEval articles for logprobs mode")
    p.add_argument("--sampling-tc-docs", type=int, default=None, help="Topical-Chat contexts for sampling mode")
    p.add_argument("--sampling-se-docs", type=int, default=None, help="SummEval articles for sampling mode")
    p.add_argument("--modes", default="logprobs,sampling")
    p.add_argument("--n", type=int, default=20, help="samples per judgment in sampling mode")
    p.add_argument("--prefix-docs", type=int, default=1, help="SummEval articles for the unit-order demo (0: skip)")
    p.add_argument("--prefix-limit", type=int, default=None, help="at most this many summaries in the demo")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", type=Path, default=Path("benchmarks/runs/geval"))
    args = p.parse_args()
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    args.sampling_tc_docs = args.tc_docs if args.sampling_tc_docs is None else args.sampling_tc_docs
    args.sampling_se_docs = args.se_docs if args.sampling_se_docs is None else args.sampling_se_docs
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"# G-Eval benchmark, judge llamacpp:smollm2, {args.threads} threads; python {sys.version.split()[0]}\n")
    correlation_runs(args, args.work)
    if args.prefix_docs:
        asyncio.run(order_demo(args, args.work))


if __name__ == "__main__":
    main()
