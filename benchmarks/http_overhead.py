"""HTTP client overhead at high concurrency: a raw aiohttp loop, the raw openai SDK (httpx), assay's judge.

Usage: python benchmarks/http_overhead.py [--calls 2000] [--delay 0.1] [--concurrency 32 128 256]
                                         [--modes aiohttp sdk-httpx judge assay] [--profile]

``judge`` is the openai judge's hot path alone (its own aiohttp session); ``assay`` is that judge behind
its middleware (single flight, retries, accounting), as a run uses it: the row the targets are about.

The server (``python -m assay.testing``) runs in a separate process, so the CPU time measured here is the
client's own. Each mode runs in a fresh event loop and first opens its connections with one warm-up call per
slot; the ideal wall time is calls x delay / concurrency. A single sequential call is timed first: it shows
that the server adds no Nagle delay (about delay + 1 ms, not delay + 44 ms). ``--profile`` prints a cProfile
of assay's mode at the highest concurrency. The machine's load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

from assay.judges.base import Request
from assay.judges.middleware import ManagedJudge
from assay.judges.openai import OpenAIJudge

Call = Callable[[int], Awaitable[object]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def body(i: int) -> dict[str, object]:
    return {"model": "fake-model", "messages": [{"role": "user", "content": f"call {i}"}], "max_tokens": 1}


async def raw_aiohttp(url: str, concurrency: int) -> tuple[Call, Callable[[], Awaitable[None]]]:
    """The baseline: one aiohttp session, a connector of ``concurrency`` connections, JSON in and out."""
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))

    async def call(i: int) -> object:
        async with session.post(f"{url}/chat/completions", json=body(i),
                                headers={"authorization": "Bearer not-needed"}) as resp:
            return await resp.json()

    return call, session.close


async def sdk_httpx(url: str, concurrency: int) -> tuple[Call, Callable[[], Awaitable[None]]]:
    """The official SDK as a user writes it: its default httpx client, typed ``chat.completions.create``."""
    import openai

    client = openai.AsyncOpenAI(api_key="not-needed", base_url=url, max_retries=0)

    async def call(i: int) -> object:
        return await client.chat.completions.create(**body(i))  # type: ignore[call-overload]

    return call, client.close


async def bare_judge(url: str, concurrency: int) -> tuple[Call, Callable[[], Awaitable[None]]]:
    """assay's openai judge without its middleware: the hot path's own cost (request, session, parsing)."""
    judge = OpenAIJudge("fake-model", url, logprobs=False)
    judge.plan_concurrency(concurrency)

    async def call(i: int) -> object:
        return await judge.generate(Request.chat(f"call {i}", max_tokens=1))

    return call, judge.aclose


async def assay_judge(url: str, concurrency: int) -> tuple[Call, Callable[[], Awaitable[None]]]:
    """assay's openai judge behind its middleware (single flight, retries, accounting), as a run uses it."""
    judge = ManagedJudge(OpenAIJudge("fake-model", url, logprobs=False), concurrency=concurrency)

    async def call(i: int) -> object:
        return await judge.generate(Request.chat(f"call {i}", max_tokens=1))

    return call, judge.aclose


MODES = {"aiohttp": raw_aiohttp, "sdk-httpx": sdk_httpx, "judge": bare_judge, "assay": assay_judge}


async def measure(mode: str, url: str, calls: int, concurrency: int,
                  profile: cProfile.Profile | None = None) -> tuple[float, float]:
    """Wall and client CPU seconds for ``calls`` calls with at most ``concurrency`` in flight."""
    call, close = await MODES[mode](url, concurrency)
    sem = asyncio.Semaphore(concurrency)

    async def bounded(i: int) -> object:
        async with sem:
            return await call(i)

    await asyncio.gather(*(bounded(-1 - i) for i in range(concurrency)))  # open the connections
    if profile is not None:
        profile.enable()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(bounded(i) for i in range(calls)))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if profile is not None:
        profile.disable()
    await close()
    return wall, cpu


async def single_call_ms(url: str, repeats: int = 5) -> float:
    """Median latency of one call at a time through assay's judge (the server's delay plus transport)."""
    call, close = await assay_judge(url, 1)
    await call(-1)
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        await call(10_000_000 + i)
        times.append(time.perf_counter() - start)
    await close()
    return 1000 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--delay", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 128, 256])
    ap.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    ap.add_argument("--profile", action="store_true", help="cProfile assay's mode at the highest concurrency")
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "assay.testing", str(args.delay), str(port)],
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    server.stdout.readline()
    url = f"http://127.0.0.1:{port}/v1"
    print(f"calls={args.calls} delay={args.delay}s load average before: {os.getloadavg()[0]:.2f}")
    try:
        print(f"single call through assay's judge: {asyncio.run(single_call_ms(url)):.1f} ms "
              f"(server delay {1000 * args.delay:.0f} ms)")
        print(f"{'concurrency':>11} {'mode':>10} {'wall s':>7} {'ideal s':>7} {'x aiohttp':>9} {'CPU ms/call':>11} "
              f"{'load':>5}")
        for conc in args.concurrency:
            base = None
            for mode in args.modes:
                wall, cpu = asyncio.run(measure(mode, url, args.calls, conc))
                base = wall if mode == "aiohttp" else base
                ratio = f"{wall / base:.2f}" if base else "-"
                print(f"{conc:>11} {mode:>10} {wall:7.2f} {args.calls * args.delay / conc:7.2f} {ratio:>9} "
                      f"{1000 * cpu / args.calls:11.3f} {os.getloadavg()[0]:5.2f}", flush=True)
        if args.profile:
            prof = cProfile.Profile()
            asyncio.run(measure("assay", url, args.calls, max(args.concurrency), prof))
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
