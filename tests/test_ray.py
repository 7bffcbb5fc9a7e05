"""The ray executor: the same run on a local Ray cluster (2 CPUs) as here, a killed actor, a killed driver."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import assay
from assay.datasets import load_dataset
from assay.errors import ConfigError
from assay.judges.scripted import ScriptedJudge
from assay.run.executor import order_units
from assay.run.ray_executor import check_fits, resolve_workers, split_concurrency, unit_groups
from assay.run.ray_settings import INSTALL_HINT, RaySettings, parse_executor, ray_settings_for
from assay.run.store import RunStore
from assay.testing import Behaviour, FakeOpenAIServer


def hashed_score(request) -> str:
    """A deterministic judge: a score from 1 to 5 drawn from the prompt's hash (different across prompts)."""
    return str(1 + int(hashlib.sha256(request.messages[-1].content.encode()).hexdigest(), 16) % 5)


def slow_hashed_score(request) -> str:
    time.sleep(0.02)
    return hashed_score(request)


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster with 2 CPUs for this module (started once: about 3 s); yields the ray module."""
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the actors cannot import this module
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


# -- pure parts ---------------------------------------------------------------------------------------------------


def test_executor_specs():
    assert parse_executor("local").kind == "local"
    assert parse_executor("ray").address is None
    assert parse_executor("ray:auto").address == "auto"
    assert parse_executor("ray:ray://head:10001").address == "ray://head:10001"
    assert parse_executor("ray:ray://head:10001").label() == "ray:ray://head:10001"
    for bad in ("dask", "ray:", "local:x", ""):
        with pytest.raises(ConfigError, match="local, ray, ray:auto"):
            parse_executor(bad)


def test_ray_options_need_the_ray_executor():
    assert ray_settings_for(parse_executor("local"), None, None, None) is None
    assert ray_settings_for(parse_executor("ray:auto"), 3, None, 0.5) == RaySettings("auto", 3, 1.0, 0.5)
    with pytest.raises(ConfigError, match="--workers, --worker-gpus set the ray executor's workers"):
        ray_settings_for(parse_executor("local"), 2, None, 1)


def test_groups_keep_each_document_together():
    ds = load_dataset("summeval").select(docs=3)
    units = order_units(ds.samples, ds.dimensions(["coherence", "fluency"]), set())
    groups = unit_groups(units)
    assert [u for g in groups for u in g] == units  # nothing lost, order kept
    assert len(groups) == 3
    assert all(len({s.doc_id for s, _ in g}) == 1 for g in groups)
    assert len({g[0][0].doc_id for g in groups}) == 3


def test_shared_bound_is_divided_embedded_bound_is_per_instance():
    assert split_concurrency(8, 3, per_instance=False) == [3, 3, 2]
    assert sum(split_concurrency(5, 2, per_instance=False)) == 5
    assert split_concurrency(1, 4, per_instance=True) == [1, 1, 1, 1]
    with pytest.raises(ConfigError, match="--concurrency 2 is below --workers 3"):
        split_concurrency(2, 3, per_instance=False)


def test_default_workers_fit_the_cluster_and_the_shared_bound():
    cluster = {"CPU": 16.0, "GPU": 2.0}
    assert resolve_workers(RaySettings(), cluster, 8, per_instance=False) == 8
    assert resolve_workers(RaySettings(), cluster, 8, per_instance=True) == 16
    assert resolve_workers(RaySettings(cpus=2, gpus=1), cluster, 1, per_instance=True) == 2
    assert resolve_workers(RaySettings(workers=3), cluster, 1, per_instance=False) == 3
    with pytest.raises(ConfigError, match="--worker-gpus 1: the Ray cluster has 0 GPU"):
        check_fits({"CPU": 2.0}, RaySettings(gpus=1))
    with pytest.raises(ConfigError, match="--workers must be at least 1"):
        RaySettings(workers=0)


def test_without_ray_the_flag_says_how_to_install_it(monkeypatch, tmp_path, cli):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if the extra were not installed
    never = ScriptedJudge([])  # any call would fail the test: it has no answers
    with pytest.raises(ConfigError) as err:
        assay.evaluate("summeval", judge=never, limit=1, executor="ray", run_dir=tmp_path / "r")
    assert str(err.value) == INSTALL_HINT and 'pip install -e ".[ray]"' in INSTALL_HINT
    assert not never.requests and not (tmp_path / "r").exists()
    code, _, stderr = cli("run", "--dataset", "summeval", "--limit", "1", "--executor", "ray",
                          "--run-dir", str(tmp_path / "c"))
    assert code == 1 and "[ray]" in stderr


# -- on a local cluster -------------------------------------------------------------------------------------------


def _run(tmp_path: Path, name: str, judge, **kwargs):
    return assay.evaluate("summeval", method="direct", judge=judge, docs=3, dimensions=["coherence", "fluency"],
                          run_dir=tmp_path / name, answer_format="free", **kwargs)  # the script writes free text


def test_same_scores_as_the_local_executor(cluster, tmp_path):
    local = _run(tmp_path, "local", ScriptedJudge(hashed_score))
    remote = _run(tmp_path, "ray", ScriptedJudge(hashed_score), executor="ray", workers=2)
    assert remote.complete and len(remote.judgments) == 96
    assert remote.scores() == local.scores()
    assert len(set(remote.scores().values())) == 5  # the judge really varies: equality is not by chance
    assert remote.usage == local.usage  # the run ledger, streamed back from the actors
    per_unit = [j.total_usage() for j in remote.judgments]  # each judgment's attributed() tally came back with it
    assert sum(u.calls for u in per_unit) == remote.usage["score"].calls
    assert sum(u.prompt_tokens for u in per_unit) == remote.usage["score"].prompt_tokens
    with RunStore(remote.run_dir, readonly=True) as r, RunStore(local.run_dir, readonly=True) as loc:
        assert sorted(q.model_dump_json() for q in r.calls.requests()) == sorted(
            q.model_dump_json() for q in loc.calls.requests())  # every call recorded by the driver, for the cache
    assert remote.manifest["units"]["scored"] == 96 and not remote.notes


def test_a_resumed_ray_run_pays_nothing_again(cluster, tmp_path):
    first = _run(tmp_path, "run", ScriptedJudge(hashed_score), executor="ray", workers=2)
    with RunStore(first.run_dir) as store:  # forget half of the judgments, keep the call cache
        store._db.execute("DELETE FROM judgments WHERE dimension='fluency'")
    again = _run(tmp_path, "run", ScriptedJudge(hashed_score), executor="ray", workers=2)
    assert again.resumed and again.complete and again.scores() == first.scores()
    assert again.usage["score"].calls == 0 and again.usage["score"].cached_calls == 48  # read by the actors


def test_a_killed_actor_is_replaced_and_its_units_requeued(cluster, tmp_path):
    killed: list[str] = []

    def kill_worker_0(progress, judge):
        if progress.done >= 6 and not killed:
            name = next(n for n in cluster.util.list_named_actors() if n.startswith("assay-worker-0-"))
            cluster.kill(cluster.get_actor(name))
            killed.append(name)

    local = _run(tmp_path, "local", ScriptedJudge(hashed_score))
    remote = _run(tmp_path, "ray", ScriptedJudge(slow_hashed_score), executor="ray", workers=2,
                  on_update=kill_worker_0)
    assert killed
    units = [(j.sample_id, j.dimension) for j in remote.judgments]
    assert remote.complete and len(units) == len(set(units)) == 96
    assert remote.scores() == local.scores()
    notes = [n for n in remote.notes if n["kind"] == "executor"]
    assert notes and "ray worker 0 died" in notes[0]["message"] and "re-queued" in notes[0]["message"]


def test_actors_share_the_concurrency_bound_an_endpoint_sees(cluster, tmp_path):
    lock, in_flight, peak = threading.Lock(), [0], [0]

    def answer(body) -> str:  # runs in the server's handler threads: count the calls in flight at once
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.3)  # long enough that both actors are busy at once, whenever each started
        with lock:
            in_flight[0] -= 1
        return "3"

    with FakeOpenAIServer(default=Behaviour(text=answer)) as server:
        result = assay.evaluate("summeval", judge=f"openai:fake-model@{server.url}", docs=4,
                                dimensions=["coherence"], run_dir=tmp_path / "run", concurrency=3, executor="ray",
                                workers=2)
    assert result.complete and len(result.judgments) == 64
    assert 2 <= peak[0] <= 3  # 2 + 1 slots; each actor with the whole bound would reach 6 (32 units each)


def test_units_over_a_servers_context_are_named_and_traced_on_ray_too(cluster, tmp_path):
    """Issue 23: the context check wraps the method the actors receive (it pickles); a remote count sends them."""
    with FakeOpenAIServer(props={"default_generation_settings": {"n_ctx": 64}}) as server:
        result = assay.evaluate("summeval", judge=f"openai:fake-model@{server.url}", docs=1, limit=4,
                                dimensions=["coherence"], run_dir=tmp_path / "run", executor="ray", workers=2,
                                answer_format="free")
    assert result.complete and len(result.judgments) == 4
    assert all(j.trace["over_context"]["n_ctx"] == 64 and not j.trace["over_context"]["refused_without_call"]
               for j in result.judgments)
    assert any(n["kind"] == "context" and n["message"].startswith("4 unit(s)") for n in result.notes)


def broken_judge(request) -> str:
    raise ValueError("boom: a bug in the judge")


def test_an_unexpected_error_in_an_actor_stops_the_run_as_locally(cluster, tmp_path):
    with pytest.raises(ValueError, match="boom"):
        _run(tmp_path, "local", ScriptedJudge(broken_judge))
    with pytest.raises(ValueError, match="boom"):  # not a hang waiting for the unit's judgment
        _run(tmp_path, "ray", ScriptedJudge(broken_judge), executor="ray", workers=2)


@pytest.mark.slow  # three model loads (driver, 2 actors) on 2 shared cores: about a minute
def test_embedded_judge_on_ray_matches_local(cluster, smollm2, tmp_path):
    kwargs = {"method": "direct", "limit": 2, "dimensions": ["naturalness"]}
    local = assay.evaluate("topical-chat", judge=smollm2, run_dir=tmp_path / "local", **kwargs)
    remote = assay.evaluate("topical-chat", judge="llamacpp:smollm2", judge_options={"n_threads": 1},
                            run_dir=tmp_path / "ray", executor="ray", workers=2, **kwargs)
    assert remote.complete and len(remote.judgments) == 2
    assert remote.scores() == local.scores()  # greedy decoding: the same answers in the actors' own models
    assert all(j.trace["answer"] for j in remote.judgments)  # the actors' models did answer
    assert {j.sample_id: j.trace for j in remote.judgments} == {j.sample_id: j.trace for j in local.judgments}


# -- a killed driver ----------------------------------------------------------------------------------------------

LIMIT = 64
CONCURRENCY = 8


def run_cmd(url: str, run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "assay.cli", "run", "--method", "direct", "--dataset", "summeval",
            "--limit", str(LIMIT), "--dimension", "coherence", "--dimension", "fluency",
            "--judge", f"openai:fake-model@{url}", "--concurrency", str(CONCURRENCY), "--run-dir", str(run_dir),
            "--quiet", "--executor", "ray", "--workers", "2"]


def judgments_so_far(run_dir: Path) -> int:
    db = run_dir / "run.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return con.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sigkilled_driver_resumes_without_duplicates_or_paying_twice(tmp_path):
    pytest.importorskip("ray")
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "RAY_ADDRESS"))}
    with FakeOpenAIServer(default=Behaviour(delay_s=0.3, text="4")) as server:
        proc = subprocess.Popen(run_cmd(server.url, run_dir), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.time() + 120
        while judgments_so_far(run_dir) < 15 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
        killed_at = len(server.requests)
        time.sleep(3.0)  # Ray ends the killed driver's actors in about 1.5 s: whatever they still ask shows here
        with contextlib.suppress(ProcessLookupError):  # Ray's agents outlive a SIGKILLed driver: end them
            os.killpg(proc.pid, signal.SIGKILL)
        after_kill = len(server.requests) - killed_at
        with RunStore(run_dir, readonly=True) as store:
            done_first = len(store.judgments())
            completed = {json.loads(r[0])["messages"][-1]["content"]
                         for r in store._db.execute("SELECT request FROM calls")}
        assert 15 <= done_first < 2 * LIMIT, "the kill must land in the middle of the run"
        first_requests = len(server.requests)
        asked_first = [b["messages"][-1]["content"] for b in server.requests]

        second = subprocess.run(run_cmd(server.url, run_dir), env=env, capture_output=True, text=True, timeout=180)
        assert second.returncode == 0, second.stderr[-3000:]
        resumed = [b["messages"][-1]["content"] for b in server.requests[first_requests:]]

    with RunStore(run_dir, readonly=True) as store:
        units = [(j.sample_id, j.dimension) for j in store.judgments()]
    assert len(units) == 2 * LIMIT and len(set(units)) == 2 * LIMIT
    assert not completed & set(resumed), "the resumed run paid again for a completed call"
    assert len(resumed) == len(set(resumed))
    # issue 23: the actors stop starting calls once the driver is gone, and keep the answers that arrive after
    paid_twice = set(asked_first) & set(resumed)
    print(f"killed driver: {after_kill} calls started after the kill, {len(paid_twice)} paid twice, "
          f"{len(asked_first)} asked before, {len(resumed)} by the re-run")
    assert after_kill <= CONCURRENCY, f"{after_kill} calls started after the driver was killed"
    assert len(paid_twice) <= CONCURRENCY, f"{len(paid_twice)} calls paid twice (at most {CONCURRENCY} in flight)"
    assert "resuming" in second.stderr


def test_batch_with_the_ray_executor_is_refused_before_anything_runs(tmp_path):
    judge = ScriptedJudge(["3"])
    with pytest.raises(ConfigError, match="--batch and --executor ray"):
        assay.evaluate(load_dataset("summeval"), method="direct", judge=judge, dimensions=["coherence"], limit=1,
                       run_dir=tmp_path / "run", executor="ray", batch=True)
    assert judge.requests == [] and not (tmp_path / "run").exists()


def test_an_actor_sees_its_dead_driver_and_its_late_answer_is_taken_in_next_run(tmp_path):
    from assay.judges.base import Choice, JudgeIdentity, Request, Response
    from assay.judges.middleware import call_key
    from assay.run.late_calls import LATE_CALLS, take_late_calls
    from assay.run.ray_executor import DriverLife, DriverWatch, _start_time

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    life = DriverLife("node-a", child.pid, _start_time(child.pid), "01000000", str(tmp_path))
    watch, elsewhere = DriverWatch(life, "node-a"), DriverWatch(life, "node-b")
    assert not watch.gone()
    child.kill()
    child.wait()
    assert watch.gone()
    assert DriverWatch(DriverLife("node-a", os.getpid(), "0", "j", str(tmp_path)), "node-a").gone()  # a reused pid
    identity = JudgeIdentity(backend="openai", model="m")
    request, response = Request.chat("Rate it."), Response(choices=[Choice(text="4")])
    key = call_key(identity, request)
    assert not elsewhere.keep_late("w1", [(key, request, response)])  # no run directory on another node
    assert watch.keep_late("w1", [(key, request, response)])
    with (tmp_path / LATE_CALLS / "w1.jsonl").open("a") as fh:
        fh.write('{"key": "cut sho')  # the actor killed mid-line
    with RunStore(tmp_path) as store:
        assert take_late_calls(store, identity) == 1
        assert store.calls.get_call(key).choices[0].text == "4"
        assert take_late_calls(store, identity) == 0
    assert not list((tmp_path / LATE_CALLS).iterdir())


def test_answers_the_dead_driver_never_confirmed_reach_the_side_file_once(tmp_path):
    """The CI failure of stop 30: answers sent but never committed by a SIGKILLed driver (in Ray's stream, in its
    uncommitted turn) were paid again. An actor keeps what the driver has not confirmed and writes it when it finds
    the driver gone; the next run takes in only what the cache lacks."""
    from assay.judges.base import Choice, JudgeIdentity, Request, Response
    from assay.judges.middleware import call_key
    from assay.run.late_calls import take_late_calls
    from assay.run.ray_executor import DriverLife, DriverWatch, RelayCache, _emit, _Received, _sink, _start_time

    identity = JudgeIdentity(backend="openai", model="m")
    calls = [(call_key(identity, r), r, Response(choices=[Choice(text=str(i))]))
             for i, r in enumerate(Request.chat(f"Rate {i}.") for i in range(6))]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    relay = RelayCache(DriverWatch(DriverLife("node-a", child.pid, _start_time(child.pid), "j", str(tmp_path)),
                                   "node-a"), "w1")
    sent: list[tuple] = []
    token = _sink.set(sent.append)
    try:
        for key, request, response in calls[:4]:
            relay.put_call(key, identity, request, response)
        assert [e[1] for e in sent] == [1, 2, 3, 4]  # numbered per actor
        with RunStore(tmp_path) as store:  # the driver stored the first three; it confirmed two
            for _, _, key, request, response in sent[:3]:
                store.calls.put_call(key, identity, request, response)
        relay.confirm(2)
        assert list(relay.unconfirmed) == [3, 4]
        child.kill()
        child.wait()
        key, request, response = calls[4]
        relay.put_call(key, identity, request, response)  # an answer after the death: not sent, kept
        assert len(sent) == 4 and not relay.unconfirmed
        _emit(("note", "x", "y"))
    finally:
        _sink.reset(token)
    with RunStore(tmp_path) as store:
        assert take_late_calls(store, identity) == 2  # 4 (never stored) and 5 (late); 3 was in the cache already
        assert {store.calls.get_call(k).choices[0].text for k, _, _ in calls[:5]} == {"0", "1", "2", "3", "4"}

    got = _Received(actor=None)  # an actor's two groups stream side by side: numbers arrive out of order
    for number in (1, 3, 4, 2, 6):
        got.add(number)
        if number == 4:
            assert got.upto == 1  # 2 has not arrived: 3 and 4 are not confirmed yet
    assert got.upto == 4 and got.early == {6}


def test_an_actor_on_another_node_keeps_a_late_answer_only_in_this_runs_shared_directory(tmp_path):
    """Issue 23: a late answer on another node is kept where the run directory is shared and provably this run's
    (its lock file names the dead driver); an absent directory or another run's is left alone."""
    from assay.judges.base import Choice, JudgeIdentity, Request, Response
    from assay.judges.middleware import call_key
    from assay.run.late_calls import LATE_CALLS, take_late_calls
    from assay.run.ray_executor import DriverLife, DriverWatch

    shared = tmp_path / "shared-run"
    with RunStore(shared):  # the driver held the lock: its text names it (a SIGKILL leaves it so)
        lock = (shared / "run.lock").read_text()
    (shared / "run.lock").write_text(lock)
    identity = JudgeIdentity(backend="openai", model="m")
    request, response = Request.chat("Rate it."), Response(choices=[Choice(text="4")])
    key = call_key(identity, request)

    def watch(run_dir, lock_text=lock):
        return DriverWatch(DriverLife("node-a", 1, None, "01000000", str(run_dir), lock_text), "node-b")

    assert not watch(shared).local
    assert watch(shared).keep_late("w2", [(key, request, response)])  # shared and this run's: kept
    with RunStore(shared) as store:
        assert take_late_calls(store, identity) == 1
        assert store.calls.get_call(key).choices[0].text == "4"
    absent = tmp_path / "not-mounted"
    assert not watch(absent).keep_late("w2", [(key, request, response)])
    assert not absent.exists()  # no unrelated local folder made
    other = tmp_path / "other-run"
    other.mkdir()
    (other / "run.lock").write_text(lock.replace('"pid": ', '"pid": 9'))  # another run's driver holds it
    assert not watch(other).keep_late("w2", [(key, request, response)])
    assert not (other / LATE_CALLS).exists()
    (other / "run.lock").write_text("")  # a released lock proves nothing
    assert not watch(other, None).keep_late("w2", [(key, request, response)])
    assert not watch(other, "").keep_late("w2", [(key, request, response)])
    assert not (other / LATE_CALLS).exists()
