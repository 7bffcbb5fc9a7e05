"""Call-cache throughput: how many cached calls per second the middleware answers from the run store.

Usage: python benchmarks/cache.py [--calls 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

from assay.judges.base import Request
from assay.judges.middleware import ManagedJudge
from assay.judges.scripted import ScriptedJudge
from assay.run.store import RunStore


async def run(calls: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(tmp)
        judge = ManagedJudge(ScriptedJudge(lambda r: "4 because the summary is coherent."), cache=store)
        prompt = "You will be given one summary written for a news article. " * 30  # ~2 KB prompt
        reqs = [Request.chat(f"{prompt} #{i}", max_tokens=5) for i in range(calls)]
        t0 = time.perf_counter()
        for r in reqs:
            await judge.generate(r)
        fill = time.perf_counter() - t0
        t0 = time.perf_counter()
        for r in reqs:
            assert (await judge.generate(r)).from_cache
        hit = time.perf_counter() - t0
        store.close()
    return calls / fill, calls / hit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=5000)
    args = ap.parse_args()
    miss_rate, hit_rate = asyncio.run(run(args.calls))
    print(f"calls={args.calls} (2 KB prompts)")
    print(f"uncached calls/s (scripted judge + cache write)  {miss_rate:,.0f}")
    print(f"cached calls/s                                   {hit_rate:,.0f}")


if __name__ == "__main__":
    main()
