"""A whole ``assay run`` against a loopback server with fixed latency, beside a raw aiohttp loop making its calls.

Usage: python benchmarks/run_overhead.py [--limit 200] [--full] [--delay 0.1] [--concurrency 32 256]
                                         [--methods direct geval checkeval seal] [--profile METHOD]

Each row starts ``assay run`` as a user does (a process: ``python -m assay.cli run --dataset summeval ...
--judge openai:...@URL --quiet``) against a scripted OpenAI-compatible server that answers every request after
``--delay`` seconds with a well-formed answer for the method's prompt (``assay.testing.formatted_answer``), so
every method takes its full path. The server runs in this process (threads); the run and the raw loop are child
processes, so their CPU time (user + system, from ``wait4``) is their own. Then a raw aiohttp loop (a child
process too) sends exactly the requests the run sent (the recorded bodies, in order) at the same concurrency.

Columns: ``wall`` is the run's process from start to exit (imports, preparation, judging, summary table);
``first`` is the time from process start to the first request the server received (the log-probability probe
or the first judge call); ``raw`` the raw loop's wall for the same calls (connections opened inside it, its
imports not counted); ``x raw`` = wall / raw; ``CPU ms/unit`` the run process's CPU per unit, and ``raw CPU``
the raw loop's per unit (the judge's own share: HTTP and JSON); ``ideal`` = calls x delay / concurrency.

The default is a slice of SummEval (``--limit`` samples of its 1,600, 4 dimensions each) so that the whole
table takes a minute or two on a busy machine; ``--full`` runs all 6,400 direct units (for the docs).
``--profile METHOD`` runs that method once more under cProfile (``python -m cProfile``) at the highest
concurrency and prints the top of the profile. The load average is printed beside every row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from assay.testing import Behaviour, FakeOpenAIServer, formatted_answer

#: Options per method: G-Eval reads log-probabilities (its default mode on a judge that gives them).
METHOD_ARGS = {"direct": [], "geval": [], "checkeval": [], "seal": []}


class _Req:
    """What :func:`formatted_answer` reads of a request: its messages, with ``content``."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.messages = [type("M", (), {"content": m.get("content", "")})() for m in body.get("messages", [])]


def answer(body: dict[str, Any]) -> str:
    return formatted_answer(_Req(body))


class Recorder:
    """The server's route hook: notes when each run's first request arrived (runs differ by model name)."""

    def __init__(self) -> None:
        self.first: dict[str, float] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> None:
        model = body.get("model", "")
        if model not in self.first:
            with self.lock:
                self.first.setdefault(model, time.time())
        return None


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Start a process; its wall time, CPU seconds (user + system), exit code and stdout."""
    start = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.time() - start, usage.ru_utime + usage.ru_stime, proc.returncode, out


async def raw_loop(url: str, bodies_path: str, concurrency: int) -> None:
    """The baseline (a child process): the same request bodies through one aiohttp session."""
    import aiohttp

    bodies = [json.loads(line) for line in Path(bodies_path).read_text().splitlines()]
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))
    sem = asyncio.Semaphore(concurrency)

    async def call(body: dict[str, Any]) -> object:
        async with sem, session.post(f"{url}/chat/completions", json=body,
                                     headers={"authorization": "Bearer not-needed"}) as resp:
            return await resp.json()

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(call(b) for b in bodies))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    await session.close()
    print(json.dumps({"wall": wall, "cpu": cpu}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=200, help="SummEval samples (x4 dimensions = units)")
    ap.add_argument("--full", action="store_true", help="all 1,600 samples (6,400 direct units)")
    ap.add_argument("--delay", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 256])
    ap.add_argument("--methods", nargs="+", choices=list(METHOD_ARGS), default=list(METHOD_ARGS))
    ap.add_argument("--profile", choices=list(METHOD_ARGS), help="cProfile one more run of this method")
    ap.add_argument("--raw", nargs=3, metavar=("URL", "BODIES", "CONCURRENCY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.raw:
        asyncio.run(raw_loop(args.raw[0], args.raw[1], int(args.raw[2])))
        return
    recorder = Recorder()
    server = FakeOpenAIServer(default=Behaviour(delay_s=args.delay, text=answer), route=recorder)
    env = dict(os.environ)
    limit = [] if args.full else ["--limit", str(args.limit)]
    with server, tempfile.TemporaryDirectory(prefix="assay-run-overhead-") as tmp:
        print(f"summeval {'all samples' if args.full else f'first {args.limit} samples'}, delay {args.delay}s, "
              f"load average before: {os.getloadavg()[0]:.2f}")
        print(f"{'method':>9} {'conc':>4} {'units':>5} {'calls':>5} {'wall s':>6} {'first s':>7} {'raw s':>5} "
              f"{'ideal s':>7} {'x raw':>5} {'CPU ms/unit':>11} {'raw CPU':>7} {'exit':>4} {'load':>5}", flush=True)
        n = 0
        runs = [(m, c) for c in args.concurrency for m in args.methods]
        if args.profile:
            runs.append((args.profile, -max(args.concurrency)))
        for method, conc in runs:
            n += 1
            model = f"bench-{n}"
            del server.requests[:]
            prof = f"{tmp}/{model}.prof"
            argv = [sys.executable, *(["-m", "cProfile", "-o", prof, "-m"] if conc < 0 else ["-m"]),
                    "assay.cli", "run", "--method", method, "--dataset", "summeval", *limit,
                    "--judge", f"openai:{model}@{server.url}", "--concurrency", str(abs(conc)),
                    "--run-dir", f"{tmp}/{model}", "--quiet", *METHOD_ARGS[method]]
            start = time.time()
            wall, cpu, code, out = run_child(argv, env)
            if conc < 0:
                print(f"\ncProfile of `assay run --method {method} --concurrency {-conc}` ({wall:.1f} s wall, "
                      f"load {os.getloadavg()[0]:.2f}):")
                stats = pstats.Stats(prof)
                stats.sort_stats("cumulative").print_stats(r"assay|importlib._bootstrap\b", 40)
                stats.sort_stats("tottime").print_stats(25)
                continue
            if code not in (0, 3):
                print(out)
                raise SystemExit(f"{method}: assay run exited with {code}")
            bodies = Path(tmp) / f"{model}.jsonl"
            bodies.write_text("".join(json.dumps(b) + "\n" for b in server.requests))
            calls = len(server.requests)
            units = _units(f"{tmp}/{model}")
            raw_wall, _, raw_code, raw_out = run_child(
                [sys.executable, __file__, "--raw", server.url, str(bodies), str(abs(conc))], env)
            if raw_code:
                raise SystemExit(f"raw loop failed: {raw_out}")
            raw = json.loads(raw_out.splitlines()[-1])
            first = recorder.first.get(model, float("nan")) - start
            print(f"{method:>9} {conc:>4} {units:>5} {calls:>5} {wall:6.2f} {first:7.2f} {raw['wall']:5.2f} "
                  f"{calls * args.delay / conc:7.2f} {wall / raw['wall']:5.2f} {1000 * cpu / units:11.3f} "
                  f"{1000 * raw['cpu'] / units:7.3f} {code:>4} {os.getloadavg()[0]:5.2f}", flush=True)


def _units(run_dir: str) -> int:
    from assay.run.store import RunStore

    with RunStore(run_dir, readonly=True) as store:
        return store.count_judgments()


if __name__ == "__main__":
    main()
