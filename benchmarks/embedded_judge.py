"""The embedded judge: prompt throughput and seconds per 1-token answer, with and without all-position logits,
and with a shared prefix reused versus evaluated from scratch.

Usage: python benchmarks/embedded_judge.py [--repeats 5] [--threads 2]

llama-cpp-python's own completion API needs ``logits_all=True`` to return log-probabilities, which
makes llama.cpp compute the logits of every prompt position. assay's embedded judge reads the
logits of the last position only; this script measures what that saves, on a ~480-token prompt.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    asyncio.run(main_async(args.repeats, args.threads))


if __name__ == "__main__":
    main()
