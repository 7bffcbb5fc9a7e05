"""CPU threads for the embedded judge: how many (the cores actually free) and how they wait (OpenMP's policy).

llama.cpp's CPU backend runs its threads as an OpenMP team. Under OpenMP's default policy a thread that
reaches a barrier first spins for a long while; on a machine whose other processes keep the cores busy the
spinning threads take the time slices the working ones need, and a 256-token generation slows down 16-19x
(issue 16). ``OMP_WAIT_POLICY=PASSIVE`` makes them sleep at once, which cures the load but wakes every thread
through the kernel at each of the hundreds of barriers per token: 2x slower on an idle machine. The default
here spins briefly, then sleeps, and uses only the cores not taken by other work. OpenMP reads these variables
once, when its library loads, so they are set before llama.cpp is imported, and a variable the user set
is never changed.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

#: The wait policies a ``llamacpp:`` judge accepts (``--judge-opt wait_policy=...``).
WAIT_POLICIES = ("auto", "passive", "active", "env")
#: OpenMP's variables per policy. ``auto`` spins for a short while, then sleeps (libgomp counts spin iterations;
#: its default is 300,000, and 30 billion under ACTIVE).
POLICY_ENV: dict[str, dict[str, str]] = {
    "auto": {"GOMP_SPINCOUNT": "1000"},
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "active": {"OMP_WAIT_POLICY": "ACTIVE"},
    "env": {},
}
#: Variables that decide how OpenMP threads wait: any of them set by the user means the user chose.
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and ``taskset`` narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def busy_cores(samples: Sequence[str]) -> float:
    """Cores other work holds: the mean number of other tasks running, over reads of ``/proc/loadavg``.

    Its running count (``3/400``: three runnable now, this reader included), not its 1-minute load average: the
    average lags a minute behind a job that started or stopped, and counts this process's own recent work, so a
    judge built right after a run on an idle machine took its own past load for other work and ran one thread.
    """
    counts = [int(sample.split()[3].split("/")[0]) - 1 for sample in samples]
    return max(0.0, sum(counts) / len(counts))


def read_busy_cores(samples: int = 10, interval_s: float = 0.01) -> float:
    """:func:`busy_cores` of this machine over ``samples`` reads ``interval_s`` apart (the 1-minute load average
    where ``/proc`` is absent)."""
    try:
        reads = []
        for i in range(samples):
            if i:
                time.sleep(interval_s)
            reads.append(Path("/proc/loadavg").read_text())
        return busy_cores(reads)
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]


def free_threads(cores: int, busy: float) -> int:
    """Threads worth running: the usable cores less those other work holds (:func:`busy_cores`), at least one.

    More threads than free cores makes every barrier (hundreds per token) wait for a thread that is not
    running; one thread needs no barrier at all.
    """
    return max(1, min(cores, math.floor(cores - busy + 0.5)))


def wait_env(policy: str, environ: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """The OpenMP variables to set for a wait policy, and how the policy was decided (for the runtime record).

    A wait variable already in the environment is the user's choice: nothing is set then, whatever the policy.

    Raises:
        ValueError: An unknown policy.
    """
    if policy not in POLICY_ENV:
        raise ValueError(f"wait_policy={policy!r}: expected one of {', '.join(WAIT_POLICIES)}")
    user = {k: environ[k] for k in WAIT_VARIABLES if k in environ}
    if user:
        how = "as set in the environment (" + ", ".join(f"{k}={v}" for k, v in user.items()) + ")"
        if policy in ("passive", "active"):
            how += f"; wait_policy={policy} not applied: the environment's variables win"
        return {}, how
    if policy == "env":
        return {}, "OpenMP's default (wait_policy=env, nothing set in the environment)"
    changes = dict(POLICY_ENV[policy])
    return changes, f"wait_policy={policy} (" + ", ".join(f"{k}={v}" for k, v in changes.items()) + ")"


def openmp_loaded() -> bool:
    """Whether an OpenMP runtime is already mapped into this process (it has read its variables then)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "llama_cpp" in sys.modules  # no /proc: assume it loaded with llama.cpp
    return any(name in maps for name in ("libgomp", "libomp", "libiomp"))


def apply_wait_policy(policy: str) -> dict[str, str]:
    """Set the policy's variables in this process before llama.cpp loads OpenMP; say what took effect.

    Returns:
        The runtime record: ``wait_policy`` (how it was decided) and, where the variables came too late
        (OpenMP already loaded, e.g. by an earlier judge in this process), a ``wait_policy_note`` saying so.
    """
    changes, how = wait_env(policy, os.environ)
    record = {"wait_policy": how}
    if changes and openmp_loaded():
        effective = {k: os.environ.get(k, "unset") for k in changes}
        record["wait_policy_note"] = ("not applied: OpenMP was already loaded in this process, with "
                                      + ", ".join(f"{k}={v}" for k, v in effective.items()))
        return record
    os.environ.update(changes)
    return record
