"""What the issue-23 safety choices cost: the embedded judge with llama.cpp's extra buffer types on versus off,
and the ``assay`` launcher's start-up (a child process) versus the CLI in-process.

Usage: PYTHONPATH=src python benchmarks/native.py [--repeats 5] [--threads 2] [--gen-tokens 64] [--startups 5]

Each extra-buffer setting runs in a fresh process, so that a setting that kills the process (the AMX buffer
type on a CPU that reports AMX without letting a process use it) is reported as the signal that killed it
instead of ending the benchmark. Per setting: the model's load time, the median seconds of a 1-token answer on a
~480-token prompt (prompt throughput), and milliseconds per generated token (greedy, ``--gen-tokens``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


async def worker(extra_buffers: bool, threads: int, repeats: int, gen_tokens: int) -> dict[str, object]:
    """One setting, in this process: load, 1-token answers, one generation."""
    from assay.datasets import load_dataset
    from assay.judges.base import Request
    from assay.judges.llamacpp import LlamaCppJudge

    start = time.perf_counter()
    judge = LlamaCppJudge("smollm2", n_threads=threads, extra_buffers=extra_buffers)
    load_s = time.perf_counter() - start
    samples = load_dataset("summeval").samples
    texts = [f"Request {i}. Rate the summary from 1 to 5.\nArticle: {' '.join(samples[i * 16].source.split()[:330])}"
             f"\nSummary: {samples[i * 16].output}\nScore:" for i in range(repeats + 1)]
    await judge.generate(Request.chat(texts[0], max_tokens=1))  # warm up
    times, prompt_tokens = [], 0
    for text in texts[1:]:
        t0 = time.perf_counter()
        resp = await judge.generate(Request.chat(text, max_tokens=1, top_logprobs=5))
        times.append(time.perf_counter() - t0)
        prompt_tokens = resp.prompt_tokens
    t0 = time.perf_counter()
    gen = await judge.generate(Request.chat("Write a long story about a lighthouse keeper.", max_tokens=gen_tokens))
    gen_s = time.perf_counter() - t0
    runtime = judge.runtime()
    await judge.aclose()
    return {"load_s": load_s, "answer_s": statistics.median(times), "prompt_tokens": prompt_tokens,
            "ms_per_token": 1000 * gen_s / max(1, gen.completion_tokens), "gen_tokens": gen.completion_tokens,
            "extra_buffers": runtime["extra_buffers"], "cpu_amx": runtime["cpu_amx"]}


def run_setting(extra_buffers: bool, args: argparse.Namespace) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--worker", json.dumps(extra_buffers), "--threads", str(args.threads),
           "--repeats", str(args.repeats), "--gen-tokens", str(args.gen_tokens)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode < 0:
        return {"crashed": signal.Signals(-done.returncode).name}
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def startup(args: argparse.Namespace) -> None:
    """``assay --help`` through the launcher (as the console script calls it) and in-process (``python -m``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    commands = {"launcher (assay)": [sys.executable, "-c", "import sys; from assay_launcher import main; "
                                     "sys.exit(main())", "--help"],
                "in-process (python -m assay.cli)": [sys.executable, "-m", "assay.cli", "--help"]}
    results: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.startups):  # interleaved, so that a change of load hits both alike
        for name, cmd in commands.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
            results[name].append(time.perf_counter() - t0)
    print(f"start-up, `--help`, median of {args.startups}:")
    for name, times in results.items():
        print(f"  {name:34s} {statistics.median(times):6.3f} s")
    launcher, inproc = (statistics.median(t) for t in results.values())
    print(f"  launcher overhead: {launcher - inproc:+.3f} s ({launcher / inproc:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--startups", type=int, default=5)
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(asyncio.run(worker(json.loads(args.worker), args.threads, args.repeats, args.gen_tokens))))
        return
    print(f"load average before: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    print(f"extra buffer types, SmolLM2-135M Q4_1, {args.threads} threads, each setting in a fresh process:")
    rows = {setting: run_setting(setting, args) for setting in (False, True)}
    for setting, row in rows.items():
        if "crashed" in row or "error" in row:
            print(f"  extra_buffers={str(setting).lower():5s}  killed by {row['crashed']}" if "crashed" in row
                  else f"  extra_buffers={str(setting).lower():5s}  failed: {row['error']}")
            continue
        print(f"  extra_buffers={str(setting).lower():5s}  load {row['load_s']:.2f} s, 1-token answer on "
              f"{row['prompt_tokens']} prompt tokens {row['answer_s']:.3f} s "
              f"({row['prompt_tokens'] / row['answer_s']:.0f} tok/s), generation {row['ms_per_token']:.1f} ms/token "
              f"({row['gen_tokens']} tokens); CPU AMX flags: {row['cpu_amx'] or 'none'}")
    off, on = rows[False], rows[True]
    if "answer_s" in off and "answer_s" in on:
        print(f"  off / on: prompt {off['answer_s'] / on['answer_s']:.2f}x the time, generation "
              f"{off['ms_per_token'] / on['ms_per_token']:.2f}x")
    startup(args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
