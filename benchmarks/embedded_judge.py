"""The embedded judge: prompt throughput and seconds per 1-token answer, with and without all-position logits,
and with a shared prefix reused versus evaluated from scratch; generation idle and on a busy machine.

Usage: python benchmarks/embedded_judge.py [--repeats 5] [--threads 2] [--skip-logits] [--skip-load]
           [--gen-tokens 256] [--hogs 2]

llama-cpp-python's own completion API needs ``logits_all=True`` to return log-probabilities, which
makes llama.cpp compute the logits of every prompt position. assay's embedded judge reads the
logits of the last position only; this script measures what that saves, on a ~480-token prompt.

The load section compares the judge's old default (all cores, OpenMP's own wait policy) with the new one
(threads from the free cores, a short spin then sleep: ``assay.judges.cpu``), each in a fresh process (OpenMP
reads its variables when it loads), idle and beside ``--hogs`` CPU-bound processes
(``python -c "while True: pass"``): a G-Eval evaluation-steps generation (greedy, up to ``--gen-tokens``)
and 1-token answers on ~480-token prompts. Keep it short on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

from assay.datasets import load_dataset
from assay.judges.base import Request
from assay.judges.llamacpp import LlamaCppJudge


def prompts(n: int) -> list[str]:
    """n distinct ~480-token prompts (distinct from their first token, so nothing is reused)."""
    samples = load_dataset("summeval").samples
    out = []
    for i in range(n):
        art = " ".join(samples[i * 16].source.split()[:330])
        out.append(f"Request {i}. Rate the summary from 1 to 5.\nArticle: {art}\nSummary: "
                   f"{samples[i * 16].output}\nScore:")
    return out


async def time_answers(judge: LlamaCppJudge, texts: list[str]) -> tuple[float, int]:
    times, tokens = [], 0
    for t in texts:
        start = time.perf_counter()
        resp = await judge.generate(Request.chat(t, max_tokens=1, top_logprobs=5))
        times.append(time.perf_counter() - start)
        tokens = resp.prompt_tokens
    return statistics.median(times), tokens


async def main_async(repeats: int, threads: int) -> None:
    texts = prompts(repeats + 1)
    rows = []
    for logits_all in (False, True):
        judge = LlamaCppJudge("smollm2", n_threads=threads, logits_all=logits_all)
        await judge.generate(Request.chat("warm up", max_tokens=1))
        sec, ntok = await time_answers(judge, texts[1:])
        rows.append((f"logits_all={logits_all}", sec, ntok))
        await judge.aclose()
    print(f"prompt ~{rows[0][2]} tokens, median of {repeats}, {threads} threads, 1-token answer with top-5 logprobs")
    for name, sec, ntok in rows:
        print(f"  {name:18s} {sec:6.3f} s/answer   {ntok / sec:8.0f} prompt tokens/s")
    print(f"  speed-up of last-position-only logits: {rows[1][1] / rows[0][1]:.2f}x")

    judge = LlamaCppJudge("smollm2", n_threads=threads)
    shared = texts[0]
    variants = [f"{shared}\nQuestion {i}: answer yes or no." for i in range(repeats)]
    await judge.generate(Request.chat(shared, max_tokens=1))
    reuse, _ = await time_answers(judge, variants)
    scratch = []
    for v, other in zip(variants, texts[1:], strict=False):
        await judge.generate(Request.chat(other, max_tokens=1))  # evict the shared prefix
        start = time.perf_counter()
        await judge.generate(Request.chat(v, max_tokens=1))
        scratch.append(time.perf_counter() - start)
    print("shared ~480-token prefix, different final question:")
    print(f"  prefix reused      {reuse:6.3f} s/answer")
    print(f"  from scratch       {statistics.median(scratch):6.3f} s/answer")
    print(f"  judge stats: {judge.stats}")


#: The settings compared under load: judge options, and OpenMP variables removed from the worker's environment.
SETTINGS = {
    "old default": {"n_threads": os.cpu_count() or 1, "wait_policy": "env"},
    "new default": {},
}
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


async def worker(options: dict[str, object], gen_tokens: int, repeats: int) -> dict[str, object]:
    """One setting in this (fresh) process: a steps generation, then 1-token answers; seconds and the runtime."""
    from assay.datasets import load_dataset
    from assay.methods.geval.prompts import task_criteria
    from assay.methods.geval.steps import build_steps_prompt

    judge = LlamaCppJudge("smollm2", **options)
    await judge.generate(Request.chat("warm up", max_tokens=1))
    info = load_dataset("summeval").info
    dim = info.dimensions[0]
    steps = Request.chat(build_steps_prompt(dim, task_criteria(info, dim), info), max_tokens=gen_tokens)
    start = time.perf_counter()
    resp = await judge.generate(steps)
    gen_s = time.perf_counter() - start
    answer_s, _ = await time_answers(judge, prompts(repeats))
    out = {"gen_s": gen_s, "gen_tokens": resp.completion_tokens, "answer_s": answer_s, "runtime": judge.runtime()}
    await judge.aclose()
    return out


def run_worker(options: dict[str, object], args: argparse.Namespace) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in WAIT_VARIABLES}  # each setting decides for itself
    cmd = [sys.executable, __file__, "--worker", json.dumps(options), "--gen-tokens", str(args.gen_tokens),
           "--repeats", str(args.repeats)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def under_load(args: argparse.Namespace) -> None:
    """Old and new default, idle then beside CPU-bound processes, each setting in a fresh process."""
    rows = []
    for busy in (False, True):
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs if busy else 0)]
        try:
            time.sleep(1.0 if busy else 0)
            for name, options in SETTINGS.items():
                load = os.getloadavg()[0]
                rows.append((name, busy, load, run_worker(options, args)))
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
    print(f"generation (G-Eval steps, greedy, <= {args.gen_tokens} tokens) and 1-token answers (~480-token prompt, "
          f"median of {args.repeats}); busy = {args.hogs} CPU-bound processes beside it; "
          f"{os.cpu_count()} cores")
    print(f"  {'setting':12s} {'machine':8s} {'load':>5} {'gen s':>7} {'tokens':>6} {'ms/token':>8} "
          f"{'answer s':>8}  runtime")
    for name, busy, load, r in rows:
        print(f"  {name:12s} {'busy' if busy else 'idle':8s} {load:5.2f} {r['gen_s']:7.2f} {r['gen_tokens']:6d} "
              f"{1000 * r['gen_s'] / max(1, r['gen_tokens']):8.1f} {r['answer_s']:8.3f}  {r['runtime']}")
    by = {(n, b): r for n, b, _, r in rows}
    for name in SETTINGS:
        slow = by[(name, True)]["gen_s"] / by[(name, False)]["gen_s"]
        print(f"  {name}: busy / idle generation time {slow:.2f}x")
    for busy in (False, True):
        ratio = by[("new default", busy)]["gen_s"] / by[("old default", busy)]["gen_s"]
        print(f"  new / old default generation time, {'busy' if busy else 'idle'}: {ratio:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gen-tokens", type=int, default=256)
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--skip-logits", action="store_true", help="skip the logits and prefix-reuse sections")
    ap.add_argument("--skip-load", action="store_true", help="skip the idle/busy generation section")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # one setting, in a fresh process
    args = ap.parse_args()
    if args.worker is not None:
        print(json.dumps(asyncio.run(worker(json.loads(args.worker), args.gen_tokens, args.repeats))))
        return
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    if not args.skip_logits:
        asyncio.run(main_async(args.repeats, args.threads))
    if not args.skip_load:
        under_load(args)


if __name__ == "__main__":
    main()
