"""GER-Eval on the shared Topical-Chat subset: generation cost, application cost, parse failures, re-asks, correlation.

One command::

    PYTHONPATH=src python benchmarks/gereval.py [--docs 20] [--judge llamacpp:smollm2] [--shots 2]

Steps (each resumable: the run directories and the rubric file are kept under --out):

1. a judge writes a rubric for Topical-Chat under --condition (paper settings: temperature 0.7,
   nucleus sampling, 512 tokens, three re-asks);
2. the human rubric (the dataset's default dimensions) is applied zero-shot and with --shots
   demonstrations, and the generated rubric zero-shot, to the first --docs dialogue contexts;
3. it prints, per application: units, calls, tokens, parse-failure rate, re-ask rate, and the
   turn-level (pooled) Pearson and Spearman correlation with the human ratings - per dimension
   for the human rubric, against the human 'overall' rating for generated criteria - and the
   zero- vs few-shot consistency of the human rubric (agreement, correlation, alpha).
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
from assay.methods.gereval.transfer import load_runs, transfer_tables

import assay
from assay import meta
from assay.judges import ManagedJudge, load_judge
from assay.methods.gereval.generate import GenerationSettings, generate_rubric
from assay.methods.gereval.rubric import load_rubric, save_rubric
from assay.run.store import RunStore


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=int, default=20, help="first N dialogue contexts (the shared subset: 20)")
    p.add_argument("--judge", default="llamacpp:smollm2")
    p.add_argument("--threads", type=int, default=2, help="n_threads of the embedded judge")
    p.add_argument("--condition", default="contexts", choices=["task", "contexts", "contrastive"])
    p.add_argument("--shots", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=256, help="scoring length bound (paper: 256)")
    p.add_argument("--max-criteria", type=int, default=15, help="answers with more criteria are invalid")
    p.add_argument("--gen-max-tokens", type=int, default=512, help="length bound of the criteria answer (paper: 512)")
    p.add_argument("--gen-max-chars", type=int, default=600, help="cut shown contexts (embedded judge: 4k context)")
    p.add_argument("--out", type=Path, default=Path("runs/bench-gereval"))
    return p.parse_args()


def _judge_opts(spec: str, threads: int) -> dict[str, Any]:
    return {"n_threads": threads} if spec.startswith("llamacpp:") else {}


def generate(args: argparse.Namespace, path: Path) -> tuple[Any, float]:
    """Write (or reuse) the generated rubric; returns it and the seconds spent."""
    if path.exists():
        return load_rubric(path), 0.0
    ds = assay.load_dataset("topical-chat")
    settings = GenerationSettings(condition=args.condition, max_chars=args.gen_max_chars,
                                  max_criteria=args.max_criteria, max_tokens=args.gen_max_tokens)

    async def run() -> Any:
        judge = ManagedJudge(load_judge(args.judge, **_judge_opts(args.judge, args.threads)))
        try:
            return await generate_rubric(ds, judge, settings, note=lambda m: print("note:", m))
        finally:
            await judge.aclose()

    start = time.perf_counter()
    rubric = asyncio.run(run())
    save_rubric(rubric, path)
    return rubric, time.perf_counter() - start


def apply(args: argparse.Namespace, name: str, options: dict[str, Any], dims: list[str] | None) -> tuple[Path, float]:
    start = time.perf_counter()
    result = assay.evaluate("topical-chat", method="gereval", judge=args.judge, docs=args.docs, dimensions=dims,
                            options=options | {"max_tokens": args.max_tokens}, run_dir=args.out / name,
                            judge_options=_judge_opts(args.judge, args.threads))
    return result.run_dir, time.perf_counter() - start


def _corr(x: list[float | None], y: list[float | None]) -> tuple[float | None, float | None, int]:
    """Pooled (turn-level) Pearson and Spearman by :func:`assay.meta.dataset_level`; None where undefined."""
    frame = pd.DataFrame({"score": x, "human": y}, dtype=float)
    r, rho = (meta.dataset_level(frame, m) for m in ("pearson", "spearman"))
    return (None if math.isnan(r["value"]) else r["value"], None if math.isnan(rho["value"]) else rho["value"],
            r["n_items"])


def figures(run_dir: Path, versus_overall: bool) -> dict[str, Any]:
    """Cost, failure and re-ask rates, and correlation with human ratings of one application run."""
    with RunStore(run_dir, readonly=True) as store:
        judgments = store.judgments()
        human = {s["id"]: s["human"] for s in store.samples()}
    calls = sum(u.calls for j in judgments for u in j.usage.values())
    prompt = sum(u.prompt_tokens for j in judgments for u in j.usage.values())
    completion = sum(u.completion_tokens for j in judgments for u in j.usage.values())
    reasked = sum(j.trace.get("reasks", 0) > 0 for j in judgments)
    per_dim = {}
    for dim in dict.fromkeys(j.dimension for j in judgments):
        js = [j for j in judgments if j.dimension == dim]
        target = "overall" if versus_overall else dim
        x = [j.score for j in js]
        y = [human[j.sample_id].get(target) for j in js]
        r, rho, n = _corr(x, y)
        per_dim[dim] = {"vs": target, "pearson": r, "spearman": rho, "n_scored": n, "units": len(js)}
    return {"units": len(judgments), "calls": calls, "prompt_tokens": prompt, "completion_tokens": completion,
            "parse_failure": sum(j.score is None for j in judgments) / max(1, len(judgments)),
            "reask_rate": reasked / max(1, len(judgments)),
            "reasks_per_unit": sum(j.trace.get("reasks", 0) for j in judgments) / max(1, len(judgments)),
            "dimensions": per_dim}


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def main() -> None:
    args = _args()
    args.out.mkdir(parents=True, exist_ok=True)
    rubric_path = args.out / f"rubric-{args.condition}.json"
    rubric, gen_s = generate(args, rubric_path)
    gen_usage = rubric.provenance.usage
    print(f"generation ({args.condition}): {len(rubric.criteria)} criteria, "
          f"{len(rubric.provenance.responses)} answers, "
          f"{len(rubric.provenance.discarded)} discarded, calls {sum(u['calls'] for u in gen_usage.values())}, "
          f"tokens {sum(u['prompt_tokens'] for u in gen_usage.values())}/"
          f"{sum(u['completion_tokens'] for u in gen_usage.values())}, {gen_s:.0f} s")
    human_dims = list(assay.load_dataset("topical-chat").info.default_dimensions)
    plan = [("human-0shot", {"rubric": "human:topical-chat"}, human_dims, False),
            (f"human-{args.shots}shot", {"rubric": "human:topical-chat", "shots": args.shots}, human_dims, False)]
    if rubric.criteria:
        plan.append(("generated-0shot", {"rubric": str(rubric_path)}, None, True))
    rows = {}
    for name, options, dims, vs_overall in plan:
        run_dir, secs = apply(args, name, options, dims)
        rows[name] = figures(run_dir, vs_overall) | {"seconds": secs}
    print(f"\nTopical-Chat, first {args.docs} contexts, judge {args.judge}, scoring max_tokens {args.max_tokens}")
    print("| application | units | calls | tokens (prompt/completion) | parse failures | units re-asked "
          "| re-asks/unit | dimension: pearson / spearman (n scored) | time |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, f in rows.items():
        dims = "; ".join(f"{d} vs {v['vs']}: {_fmt(v['pearson'])} / {_fmt(v['spearman'])} ({v['n_scored']})"
                         for d, v in f["dimensions"].items())
        print(f"| {name} | {f['units']} | {f['calls']} | {f['prompt_tokens']}/{f['completion_tokens']} | "
              f"{100 * f['parse_failure']:.0f}% | {100 * f['reask_rate']:.0f}% | {f['reasks_per_unit']:.2f} | {dims} | "
              f"{f['seconds']:.0f} s |")
    consistency = transfer_tables(load_runs([args.out / "human-0shot", args.out / f"human-{args.shots}shot"]))
    print("\nzero- vs few-shot (human rubric):")
    for row, rel in zip(consistency["pairwise"], consistency["reliability"], strict=True):
        print(f"  {row['criterion']}: n {row['n']}, agreement {_fmt(row['agreement'])}, pearson {_fmt(row['pearson'])},"
              f" alpha {_fmt(rel['alpha'])}")
    (args.out / "figures.json").write_text(json.dumps({"rows": rows, "consistency": consistency}, indent=2))


if __name__ == "__main__":
    main()
