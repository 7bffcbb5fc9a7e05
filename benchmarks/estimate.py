"""``--estimate`` against the run it estimates: calls and tokens per method stage, estimate / actual.

Usage: OMP_WAIT_POLICY=PASSIVE python benchmarks/estimate.py [--docs 1] [--limit 4] [--dimension coherence
       --dimension consistency] [--method direct --method geval ...] [--threads 2]

For each method, the estimate runs first (the GGUF's vocabulary only, no call), then the real run on the same
slice with the embedded judge (SmolLM2-135M); the table gives estimate / actual per stage for calls, prompt
tokens and completion tokens (the target is within 10% on calls and prompt tokens). The real run's own answers
decide its later stages (how many facts SEAL verifies, whether G-Eval's steps parse), so the gap on estimated
rows is the stand-ins' error; exact rows should match to the token. When the real judge re-asked (a small
model's malformed JSON), a last row gives the estimate at that re-ask rate, as a user would state it
(``estimate_run(..., reask_rate=r)``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time

import assay
from assay.datasets import load_dataset
from assay.judges.llamacpp import LlamaCppJudge
from assay.methods import make_method
from assay.run.estimate import estimate_run
from assay.run.session import RunPlan
from assay.types import Usage

METHODS = ["direct", "geval", "checkeval", "seal"]


def ratio(est: int, actual: int) -> str:
    return f"{est / actual:6.3f}" if actual else ("  =   " if est == 0 else "   inf")


def compare(method: str, kw: dict, judge: LlamaCppJudge) -> list[tuple]:
    """One method's rows: (stage, exact, est calls, calls, est prompt, prompt, est completion, completion)."""
    est = assay.evaluate(judge="llamacpp:smollm2", method=method, estimate=True, **kw)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="assay-estimate-bench-") as run_dir:
        real = assay.evaluate(judge=judge, method=method, run_dir=run_dir, **kw)
    seconds = time.perf_counter() - started
    rows = []
    for stage in dict.fromkeys([s.stage for s in est.stages] + list(real.usage)):
        e = next((s for s in est.stages if s.stage == stage), None)
        u = real.usage.get(stage, Usage())
        rows.append((stage, "exact" if e and e.exact else f"{e.exact_calls}/{e.calls}" if e else "-",
                     e.calls if e else 0, u.calls, e.prompt_tokens if e else 0, u.prompt_tokens,
                     e.completion_tokens if e else 0, u.completion_tokens))
    total = tuple(sum(r[i] for r in rows) for i in range(2, 8))
    rows.append(("TOTAL", "", *total))
    extra = total[1] - total[0]
    if extra > 0 and total[0]:  # the real judge re-asked: what the estimate gives at that rate, stated
        rate = extra / total[0]
        data = load_dataset(kw["data"]).select(docs=kw["docs"], limit=kw["limit"])
        plan = RunPlan(make_method(method), data, data.dimensions(kw["dimensions"]))
        at_rate = asyncio.run(estimate_run(plan, "llamacpp:smollm2", reask_rate=rate)).total()
        rows.append((f"@rate {rate:.2f}", "", at_rate.calls, total[1], at_rate.prompt_tokens, total[3],
                     at_rate.completion_tokens, total[5]))
    print(f"\n{method}: real run {seconds:.0f} s, load average {os.getloadavg()[0]:.1f}; tokenizer {est.tokenizer}")
    print(f"  {'stage':12s} {'exact':>6s} {'calls e/a':>11s} {'ratio':>6s} {'prompt e/a':>15s} {'ratio':>6s} "
          f"{'completion e/a':>15s} {'ratio':>6s}")
    for stage, exact, ec, ac, ep, ap, eo, ao in rows:
        print(f"  {stage:12s} {exact:>6s} {ec:5d}/{ac:<5d} {ratio(ec, ac)} {ep:7d}/{ap:<7d} {ratio(ep, ap)} "
              f"{eo:7d}/{ao:<7d} {ratio(eo, ao)}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1)
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--dimension", action="append", default=None)
    parser.add_argument("--method", action="append", default=None)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    dims = args.dimension or ["coherence", "consistency"]
    kw = {"data": "summeval", "docs": args.docs, "limit": args.limit, "dimensions": dims}
    print(f"SummEval {args.docs} doc(s) x {args.limit} summaries x {len(dims)} dimensions ({', '.join(dims)}), "
          f"judge llamacpp:smollm2 ({args.threads} threads), OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, "
          f"load average {os.getloadavg()[0]:.1f}")
    judge = LlamaCppJudge("smollm2", n_threads=args.threads)
    summary = []
    for method in args.method or METHODS:
        rows = compare(method, kw, judge)
        summary.append((method, next(r for r in rows if r[0] == "TOTAL")))
    print("\nestimate / actual, all stages:")
    for method, (_, _, ec, ac, ep, ap, eo, ao) in summary:
        print(f"  {method:10s} calls {ratio(ec, ac)}  prompt tokens {ratio(ep, ap)}  completion tokens {ratio(eo, ao)}")


if __name__ == "__main__":
    main()
