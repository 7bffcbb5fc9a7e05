"""Pairwise against pointwise on small slices: the pipeline end to end, and what a comparison costs.

Usage: OMP_WAIT_POLICY=PASSIVE python benchmarks/pairwise.py [--judge llamacpp:smollm2] [--docs 2]
       [--pairs random:3] [--estimate-only]

For SummEval (coherence) and Topical-Chat (engagingness), on the first ``--docs`` inputs: a ``direct`` run (one
call per output) and a ``pairwise`` run (two calls per pair, one per order) with the same judge, then the
pairwise figures (consistency, position bias, agreement with people; ``assay.meta.pairwise``). The table gives
calls and tokens per judged item (per output for direct, per pair for pairwise) and what a whole input costs
under each ``--pairs`` design (estimates: ``all`` grows with the square of the systems, ``baseline`` linearly).
With the embedded judge (SmolLM2-135M) the figures prove the pipeline and the bill, not judging quality.
``--estimate-only`` runs no model: the table's cost columns come from ``--estimate`` alone.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import assay
from assay.meta.pairwise_run import run_report

SLICES = [("summeval", "coherence", "M11"), ("topical-chat", "engagingness", None)]


def per_item(usage: dict, items: int) -> tuple[float, float, float]:
    calls = sum(u.calls for u in usage.values())
    prompt = sum(u.prompt_tokens for u in usage.values())
    completion = sum(u.completion_tokens for u in usage.values())
    return calls / items, prompt / items, completion / items


def estimate(data: str, dim: str, method: str, docs: int, judge: str, options: dict) -> tuple[int, int, int, int]:
    est = assay.evaluate(data, method=method, judge=judge, dimensions=[dim], docs=docs, options=options,
                         estimate=True)
    t = est.total()
    return est.units, t.calls, t.prompt_tokens, t.completion_tokens


def bill(data: str, dim: str, docs: int, judge: str, baseline: str | None) -> None:
    designs = [("direct", "direct", {})] + [(f"pairwise {p}", "pairwise", {"pairs": p})
                                           for p in ["all", f"baseline:{baseline}" if baseline else None, "random:3"]
                                           if p]
    print(f"  --estimate on {docs} input(s), {data} / {dim}:")
    print(f"    {'design':<26}{'items':>7}{'calls':>8}{'prompt tok':>12}{'completion tok':>16}")
    for label, method, options in designs:
        units, calls, prompt, completion = estimate(data, dim, method, docs, judge, options)
        print(f"    {label:<26}{units:>7}{calls:>8}{prompt:>12}{completion:>16}")


def run(data: str, dim: str, docs: int, judge: str, pairs: str) -> None:
    with tempfile.TemporaryDirectory(prefix="assay-pairwise-bench-") as tmp:
        started = time.perf_counter()
        point = assay.evaluate(data, method="direct", judge=judge, dimensions=[dim], docs=docs,
                               run_dir=f"{tmp}/direct")
        t_point = time.perf_counter() - started
        started = time.perf_counter()
        pair = assay.evaluate(data, method="pairwise", judge=judge, dimensions=[dim], docs=docs,
                              options={"pairs": pairs}, run_dir=f"{tmp}/pairwise")
        t_pair = time.perf_counter() - started
        rep = run_report(f"{tmp}/pairwise", n_boot=200)[dim]
        scores = {j.sample_id: j.score for j in point.judgments}
        both = run_report(f"{tmp}/pairwise", n_boot=0, pointwise={dim: scores})[dim]
    n_out, n_pair = len(point.judgments), len(pair.judgments)
    pc, pp, pcomp = per_item(point.usage, n_out)
    qc, qp, qcomp = per_item(pair.usage, n_pair)
    print(f"  run with {judge}: {n_out} outputs (direct), {n_pair} pairs ({pairs}), {docs} input(s)")
    print(f"    direct   per output: {pc:.2f} calls, {pp:.0f} prompt + {pcomp:.0f} completion tokens; "
          f"{t_point:.1f} s in all; {point.units.get('parse_failed', 0)} unreadable")
    print(f"    pairwise per pair:   {qc:.2f} calls, {qp:.0f} prompt + {qcomp:.0f} completion tokens; "
          f"{t_pair:.1f} s in all; {pair.units.get('parse_failed', 0)} unreadable")
    print(f"    consistency {fmt(rep['consistency'])}, position bias {fmt(rep['position_bias'])}, first-position "
          f"win rate {fmt(rep['first_position_win_rate'])}, tie rate {fmt(rep['tie_rate'])}")
    h, p = both.get("human_agreement_shared"), both.get("pointwise_agreement")
    if h and p:
        print(f"    agreement with people on {h['n_pairs']} pairs: pairwise accuracy {fmt(h['accuracy'])} "
              f"kappa {fmt(h['kappa'])}, direct accuracy {fmt(p['accuracy'])} kappa {fmt(p['kappa'])}")


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", default="llamacpp:smollm2")
    ap.add_argument("--docs", type=int, default=2)
    ap.add_argument("--pairs", default="random:3")
    ap.add_argument("--estimate-only", action="store_true")
    args = ap.parse_args()
    with open("/proc/loadavg") as fh:
        print(f"load: {fh.read().strip()}")
    for data, dim, baseline in SLICES:
        print(f"{data} / {dim}")
        bill(data, dim, args.docs, args.judge, baseline)
        if not args.estimate_only:
            run(data, dim, args.docs, args.judge, args.pairs)


if __name__ == "__main__":
    main()
