"""HTTP overhead of the openai judge + middleware: 1,000 calls against a local server answering after 100 ms.

Usage: python benchmarks/http_overhead.py [--calls 1000] [--delay 0.1] [--concurrency 32]

The server runs in a separate process so that the CPU time measured here is the client's own
(SDK, middleware, pydantic). Ideal wall time = calls x delay / concurrency.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time

from assay.judges.base import Request
from assay.judges.middleware import ManagedJudge
from assay.judges.openai import OpenAIJudge


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def run(url: str, calls: int, concurrency: int) -> tuple[float, float]:
    judge = ManagedJudge(OpenAIJudge("fake-model", url, logprobs=False), concurrency=concurrency)
    await judge.generate(Request.chat("warm-up", max_tokens=1))  # connection pool and imports
    reqs = [Request.chat(f"call {i}", max_tokens=1) for i in range(calls)]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(judge.generate(r) for r in reqs))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    await judge.aclose()
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--delay", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "assay.testing", str(args.delay), str(port)],
                              stdout=subprocess.PIPE, text=True)
    server.stdout.readline()
    try:
        wall, cpu = asyncio.run(run(f"http://127.0.0.1:{port}/v1", args.calls, args.concurrency))
    finally:
        server.terminate()
    ideal = args.calls * args.delay / args.concurrency
    print(f"calls={args.calls} delay={args.delay}s concurrency={args.concurrency}")
    print(f"wall time        {wall:.2f} s (ideal {ideal:.2f} s, overhead {100 * (wall / ideal - 1):+.1f}%)")
    print(f"client CPU/call  {1000 * cpu / args.calls:.3f} ms")


if __name__ == "__main__":
    main()
