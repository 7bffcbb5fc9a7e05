"""The embedded judge's threads and OpenMP wait policy: from the free cores, set before OpenMP loads, env wins."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from assay.judges.cpu import busy_cores, free_threads, wait_env


def test_busy_cores_counts_the_tasks_running_now_not_the_lagging_average():
    """Two CPU-bound jobs started a second ago show in the running count; a machine idle now is idle, whatever
    its 1-minute average still says (the judge's own run a moment ago included)."""
    assert busy_cores(["0.05 0.10 0.20 3/400 999"]) == 2.0  # 3 running, this reader included
    assert busy_cores(["5.50 3.00 1.00 1/400 999"] * 3) == 0.0
    assert busy_cores(["0.9 0.1 0.1 3/400 9", "0.9 0.1 0.1 1/400 9"]) == 1.0  # one core busy half the time


@pytest.mark.parametrize(("cores", "busy", "threads"),
                         [(2, 0.05, 2), (2, 0.6, 1), (2, 2.0, 1), (2, 14.4, 1), (16, 3.2, 13), (1, 0.0, 1)])
def test_free_threads(cores, busy, threads):
    assert free_threads(cores, busy) == threads


def test_wait_env_never_overrides_the_users_variables():
    assert wait_env("auto", {}) == ({"GOMP_SPINCOUNT": "1000"}, "wait_policy=auto (GOMP_SPINCOUNT=1000)")
    assert wait_env("passive", {})[0] == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert wait_env("env", {})[0] == {}
    changes, how = wait_env("auto", {"OMP_WAIT_POLICY": "ACTIVE"})
    assert changes == {} and how == "as set in the environment (OMP_WAIT_POLICY=ACTIVE)"
    changes, how = wait_env("passive", {"GOMP_SPINCOUNT": "5"})
    assert changes == {} and "wait_policy=passive not applied" in how
    with pytest.raises(ValueError, match="expected one of auto, passive, active, env"):
        wait_env("spin", {})


PROBE = """
import json, os, sys
from assay.judges.llamacpp import LlamaCppJudge
judge = LlamaCppJudge("smollm2", **json.loads(sys.argv[1]))
maps = open("/proc/self/maps").read()
env = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
print(json.dumps({"runtime": judge.runtime(), "env": env,
                  "llm_threads": [judge._llm.context_params.n_threads, judge._llm.context_params.n_threads_batch],
                  "gomp": "libgomp" in maps}))
"""


def _fresh_process(code: str, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    """Run code in a new interpreter (OpenMP not loaded yet), without the OpenMP variables of this one."""
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")}
    done = subprocess.run([sys.executable, "-c", code, *args], env=base | (env or {}), capture_output=True,
                          text=True, check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _judge_in_fresh_process(options: dict[str, object], env: dict[str, str]) -> dict[str, object]:
    return _fresh_process(PROBE, json.dumps(options), env=env)


def test_the_default_judge_sets_its_wait_policy_before_openmp_loads_and_records_it():
    got = _judge_in_fresh_process({}, {})
    assert got["gomp"], "this llama.cpp build has no OpenMP: the test proves nothing here"
    assert got["env"]["GOMP_SPINCOUNT"] == "1000"
    runtime = got["runtime"]
    assert runtime["wait_policy"] == "wait_policy=auto (GOMP_SPINCOUNT=1000)" and "wait_policy_note" not in runtime
    assert runtime["threads_from"].startswith("free cores:")
    assert got["llm_threads"] == [runtime["n_threads"]] * 2  # prompts too, not all cores


def test_options_override_and_the_users_variable_is_kept():
    got = _judge_in_fresh_process({"n_threads": 1, "wait_policy": "passive"}, {"OMP_WAIT_POLICY": "ACTIVE"})
    assert got["env"] == {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": None}
    assert got["llm_threads"] == [1, 1]
    assert got["runtime"]["threads_from"] == "the judge option n_threads"
    assert "not applied: the environment's variables win" in got["runtime"]["wait_policy"]


def test_a_policy_that_comes_after_openmp_loaded_says_so():
    record = _fresh_process("import json, llama_cpp\nfrom assay.judges.cpu import apply_wait_policy\n"
                            "print(json.dumps(apply_wait_policy('passive')))")
    assert record["wait_policy_note"] == ("not applied: OpenMP was already loaded in this process, "
                                          "with OMP_WAIT_POLICY=unset")


def test_an_unknown_wait_policy_is_a_config_error_before_the_model_loads():
    from assay.errors import ConfigError
    from assay.judges.llamacpp import LlamaCppJudge

    with pytest.raises(ConfigError, match="llamacpp judge: wait_policy='spin': expected one of auto, passive"):
        LlamaCppJudge("/nonexistent.gguf", wait_policy="spin")
