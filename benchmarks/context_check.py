"""What a run's context check costs where the context is known (issue 23), beside what judging a unit costs.

Usage: OMP_WAIT_POLICY=PASSIVE python benchmarks/context_check.py [--limit 25] [--method direct --method geval ...]
       [--judge-units 4] [--threads 1]

With the embedded judge (SmolLM2-135M, its context known: ``n_ctx``), each method's context check
(:func:`assay.run.counting.find_over_context`: a fresh instance of the method against the counting judge, every
prompt tokenized with the judge's own tokenizer and chat template) runs over ``--limit`` SummEval samples x its
dimensions; then ``--judge-units`` units of ``direct`` are judged for real, for the ratio. Where the context is
unknown the check is never entered (tests/test_context_check.py proves it), so its cost there is nil.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time

import assay
from assay.judges import load_judge
from assay.judges.tokens import judge_counter
from assay.methods import RunContext
from assay.run.counting import find_over_context
from assay.run.executor import order_units
from assay.run.session import RunPlan


async def check(method: str, limit: int, threads: int) -> tuple[int, float]:
    """Units checked and seconds the check took (the judge loaded beforehand, not timed)."""
    judge = load_judge("llamacpp:smollm2", n_threads=threads)
    try:
        plan = RunPlan.resolve("summeval", method=method, limit=limit,
                               options={"mode": "greedy"} if method == "geval" else None)
        units = order_units(plan.dataset.samples, plan.dimensions, set(), by=plan.method.unit_order)
        ctx = RunContext(dataset=plan.dataset, dimensions=plan.dimensions, judge=None,  # type: ignore[arg-type]
                         answer_format="json")
        n_ctx, _ = await judge.context_size()
        start = time.perf_counter()
        await find_over_context(plan.method, units, ctx, judge, judge_counter(judge), n_ctx or 4096, None)
        return len(units), time.perf_counter() - start
    finally:
        await judge.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=25)
    parser.add_argument("--method", action="append")
    parser.add_argument("--judge-units", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f}")
    for method in args.method or ["direct", "geval", "checkeval", "seal"]:
        n, seconds = asyncio.run(check(method, args.limit, args.threads))
        print(f"{method:10s} context check: {n} units in {seconds:.2f} s, {1000 * seconds / n:.1f} ms/unit")
    if args.judge_units:
        with tempfile.TemporaryDirectory() as run_dir:
            start = time.perf_counter()
            result = assay.evaluate("summeval", method="direct", judge="llamacpp:smollm2", limit=args.judge_units,
                                    dimensions=["coherence"], run_dir=run_dir,
                                    judge_options={"n_threads": args.threads})
            seconds = time.perf_counter() - start
        print(f"direct judged: {len(result.judgments)} units in {seconds:.2f} s (model load included), "
              f"{1000 * seconds / len(result.judgments):.0f} ms/unit")
    print(f"load: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
