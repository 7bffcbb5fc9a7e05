"""Bad input is refused with one line naming file, record and field, before any judge call; server errors never
show a key; an unreachable endpoint is named with the reason."""

from __future__ import annotations

import json
import socket
import uuid
from dataclasses import replace

import pytest

import assay
from assay.datasets import load_dataset
from assay.errors import ConfigError, FatalJudgeError, InputError
from assay.judges.base import Request
from assay.judges.openai import OpenAIJudge, redact, secrets_of
from assay.judges.scripted import ScriptedJudge
from assay.meta import meta_evaluate
from assay.testing import Behaviour, FakeOpenAIServer
from assay.types import Dimension, Sample

SPEC = """\
name: tickets
file: data.jsonl
level: {level}
fields: {{id: uid, doc_id: ticket, system_id: model, source: ticket_text, output: summary}}
human: {human}
dimensions:
  - {{name: coherence, definition: "Reads as one whole.", scale: {{low: 1, high: 5}}}}
"""


def write_spec(tmp_path, records, *, level="dataset", human="{coherence: coh}"):
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(level=level, human=human))
    return spec


def record(i, *, system="A", coh=3.0, **summary):
    return {"uid": f"u{i}", "ticket": f"t{i // 2}", "model": system, "ticket_text": f"ticket {i // 2}",
            "summary": summary.get("summary", f"summary {i}"), "coh": coh}


def counting_judge() -> ScriptedJudge:
    return ScriptedJudge(lambda req: "3")


# -- selection, run directory, dimensions (API and CLI) --------------------------------------------

@pytest.mark.parametrize(("option", "value"), [("limit", -1), ("limit", 0), ("docs", 0), ("docs", -3)])
def test_selection_below_one_is_refused_before_any_call(tmp_path, topical_chat, option, value):
    judge = counting_judge()
    with pytest.raises(ConfigError, match=rf"^{option} \(--{option}\) must be at least 1, got {value}$"):
        assay.evaluate(topical_chat, judge=judge, run_dir=tmp_path / "run", **{option: value})
    assert judge.requests == [] and not (tmp_path / "run").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--limit", "-1"], "error: limit (--limit) must be at least 1, got -1"),
    (["--docs", "0"], "error: docs (--docs) must be at least 1, got 0"),
    (["--dimension", "naturalness", "--dimension", "naturalness"],
     "error: dimension 'naturalness' is listed twice (--dimension naturalness given more than once)"),
])
def test_cli_run_refuses_bad_options_in_one_line_without_calling(tmp_path, cli, args, message):
    with FakeOpenAIServer() as server:
        code, _, err = cli("run", "--dataset", "topical-chat", "--run-dir", str(tmp_path / "run"), "-q",
                           "--judge", f"openai:fake-model@{server.url}", *args)
    assert (code, err) == (1, message + "\n")
    assert server.requests == [] and not (tmp_path / "run").exists()


def test_run_dir_that_is_a_file_is_refused_before_the_judge_loads(tmp_path, topical_chat, cli):
    path = tmp_path / "results.csv"
    path.write_text("keep me")
    judge = counting_judge()
    with pytest.raises(ConfigError, match="is a file, not a directory"):
        assay.evaluate(topical_chat, judge=judge, run_dir=path, limit=1)
    code, _, err = cli("run", "--dataset", "topical-chat", "--limit", "1", "--run-dir", str(path), "-q",
                       "--judge", "llamacpp:/no/such/model.gguf")  # the judge would fail to load: it is never tried
    assert code == 1 and err.count("\n") == 1 and f"{path}: the run directory (--run-dir) is a file" in err
    assert judge.requests == [] and path.read_text() == "keep me"


def test_dimension_listed_twice_is_refused_before_any_call(tmp_path, topical_chat):
    judge = counting_judge()
    with pytest.raises(ConfigError, match="dimension 'coherence' is listed twice"):
        assay.evaluate(topical_chat, judge=judge, run_dir=tmp_path / "run", limit=2,
                       dimensions=["naturalness", "coherence", "coherence"])
    assert judge.requests == [] and not (tmp_path / "run").exists()


# -- empty datasets ---------------------------------------------------------------------------------

def test_empty_dataset_file_is_refused_naming_it(tmp_path):
    spec = write_spec(tmp_path, [])
    with pytest.raises(InputError, match=r"data.jsonl: no samples to judge$"):
        load_dataset(str(spec))


def test_empty_selection_and_empty_python_samples_are_refused(tmp_path, topical_chat):
    judge = counting_judge()
    with pytest.raises(InputError, match="no samples to judge after selection"):
        assay.evaluate(replace(topical_chat, samples=[]), judge=judge, run_dir=tmp_path / "run")
    dims = [Dimension(name="q", definition="quality")]
    with pytest.raises(InputError, match="^samples: no samples to judge$"):
        assay.evaluate([], judge=judge, dimensions=dims, run_dir=tmp_path / "run")
    assert judge.requests == [] and not (tmp_path / "run").exists()


# -- human ratings and outputs in dataset files ----------------------------------------------------

def test_human_rating_off_its_scale_names_file_record_and_field(tmp_path):
    spec = write_spec(tmp_path, [record(0), record(1, coh=7)])
    with pytest.raises(InputError) as err:
        load_dataset(str(spec))
    assert str(err.value) == (f"{tmp_path / 'data.jsonl'}, record line 2, field 'coh': "
                              "human rating 7 for 'coherence' is off its scale 1-5")


def test_human_rating_off_its_scale_from_python_samples(tmp_path):
    dims = [Dimension(name="q", definition="quality")]
    samples = [Sample(id="a", doc_id="d", output="x", human={"q": 2}),
               Sample(id="b", doc_id="d", output="y", human={"q": 0})]
    judge = counting_judge()
    with pytest.raises(InputError, match=r"^samples, record b, field 'q': human rating 0 for 'q' is off its scale"):
        assay.evaluate(samples, judge=judge, dimensions=dims, run_dir=tmp_path / "run")
    assert judge.requests == []


def test_human_entry_for_an_undefined_dimension_names_the_spec_field(tmp_path):
    spec = write_spec(tmp_path, [record(0)], human="{coherence: coh, fluency: flu}")
    with pytest.raises(InputError) as err:
        load_dataset(str(spec))
    assert str(err.value) == (f"{spec}, field 'human.fluency': a human rating for 'fluency', which is not a "
                              "dimension defined under 'dimensions' (coherence)")


def test_human_field_that_no_record_has_is_refused(tmp_path):
    spec = write_spec(tmp_path, [record(0), record(1)], human="{coherence: coh_mean}")
    with pytest.raises(InputError) as err:
        load_dataset(str(spec))
    assert str(err.value) == (f"{tmp_path / 'data.jsonl'}, field 'coh_mean': no record has this field, mapped to "
                              "the human ratings of 'coherence'")


@pytest.mark.parametrize(("value", "kind"), [(3, "a number (3)"), (["a", "b"], "a list"), (None, "null"),
                                             ({"text": "x"}, "an object")])
def test_non_text_output_is_refused_not_turned_into_text(tmp_path, value, kind):
    spec = write_spec(tmp_path, [record(0), record(1), record(2, summary=value)])
    with pytest.raises(InputError) as err:
        load_dataset(str(spec))
    assert str(err.value) == f"{tmp_path / 'data.jsonl'}, record line 3, field 'summary': expected text, got {kind}"


def test_non_text_output_in_a_benchmark_layout(tmp_path):
    rows = [{"doc_id": "d1", "system_id": "M1", "source": "s", "reference": "r", "system_output": 42,
             "scores": {"coherence": 3}}]
    path = tmp_path / "summeval.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(InputError, match=r"record 0, field 'system_output': expected text, got a number \(42\)"):
        load_dataset(f"summeval:{path}")


# -- the spec's level is the run's correlation level -----------------------------------------------

def test_spec_level_decides_the_correlation_level_of_its_runs(tmp_path):
    records = [record(i, system="AB"[i % 2], coh=1 + (i * 7) % 5) for i in range(8)]
    spec = write_spec(tmp_path, records, level="sample")
    scores = iter([1, 2, 3, 4, 5, 1, 2, 4])
    result = assay.evaluate(str(spec), judge=ScriptedJudge(lambda req: str(next(scores))),
                            run_dir=tmp_path / "run")
    assert result.manifest["dataset_level"] == "sample"
    res = meta_evaluate(str(tmp_path / "run"))
    assert res["level"] == "sample" and res["level_reason"] == "the convention for tickets"
    assert meta_evaluate(str(tmp_path / "run"), level="dataset")["level"] == "dataset"  # asked for: still honoured


# -- server error text and unreachable endpoints ---------------------------------------------------

SECRET = f"sk-assay-{uuid.uuid4().hex}"


def test_redact_removes_the_key_url_credentials_and_token_lookalikes():
    other = "sk-" + "Z" * 30
    text = f"bad key {SECRET} (Authorization: Bearer abc.def-ghi_jkl) other {other} pw hunter2hunter2 ok"
    secrets = secrets_of(SECRET, "http://user:hunter2hunter2@host:8000/v1?token=querytoken123")
    assert secrets == [SECRET, "hunter2hunter2", "querytoken123"]  # "user" is too short to be a secret
    out = redact(text, secrets)
    assert out == "bad key [redacted] (Authorization: Bearer [redacted]) other [redacted] pw [redacted] ok"
    assert redact("no secrets in 3 words", []) == "no secrets in 3 words"


def test_key_in_a_429_body_is_printed_and_stored_nowhere(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    run_dir = tmp_path / "run"
    body = f"rate limit for key {SECRET}; header Authorization: Bearer {SECRET}"
    with FakeOpenAIServer(default=Behaviour(kind="error", status=429, message=body)) as server:
        _, out, err = cli("run", "--dataset", "qags-xsum", "--limit", "2", "--run-dir", str(run_dir), "-q",
                          "--retries", "1", "--judge", f"openai:fake-model@{server.url}",
                          "--judge-opt", "logprobs=false")
    assert server.auth and set(server.auth) == {f"Bearer {SECRET}"}  # the key was in play
    printed = " ".join((out + err).split())  # the failure list (stderr) wraps at the console's width
    assert "rate limited (HTTP 429)" in printed and "rate limit for key [redacted]; header Authorization: " \
        "Bearer [redacted]" in printed
    token = SECRET.removeprefix("sk-assay-")[:12]
    assert token not in out + err
    assert [p for p in run_dir.rglob("*") if p.is_file() and token.encode() in p.read_bytes()] == []


async def test_key_in_a_fatal_error_body_is_redacted_from_the_raised_error():
    with FakeOpenAIServer(default=Behaviour(kind="error", status=400, message=f"bad request with {SECRET}")) as srv:
        judge = OpenAIJudge("fake-model", srv.url, api_key=SECRET, logprobs=False)
        try:
            with pytest.raises(FatalJudgeError) as err:
                await judge.generate(Request.chat("hi"))
        finally:
            await judge.aclose()
    assert "request rejected (HTTP 400)" in str(err.value) and "[redacted]" in str(err.value)
    assert SECRET not in str(err.value) and err.value.__cause__ is None and err.value.__suppress_context__


def test_refused_connection_names_the_url_without_credentials(cli):
    code, _, err = cli("judges", "openai:m@http://someone:pa55word-123@127.0.0.1:9/v1")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("error: cannot reach http://127.0.0.1:9/v1: connection refused")
    assert "pa55word" not in err and "someone" not in err


def test_unanswered_request_names_the_url_and_the_timeout(cli):
    with socket.socket() as listener:  # accepts connections (backlog) but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        code, _, err = cli("judges", f"openai:m@{url}", "--judge-opt", "timeout=0.3")
    assert code == 1 and err == f"error: request to {url} timed out waiting for the answer\n"


def test_unknown_host_names_the_url_and_dns():
    from assay.judges.openai import connection_reason

    err = OSError("All connection attempts failed")
    err.__cause__ = socket.gaierror(-2, "Name or service not known")
    assert connection_reason(err) == "host name not found (DNS: Name or service not known)"


def test_server_error_names_the_endpoint(cli):
    with FakeOpenAIServer(default=Behaviour(kind="error", status=503)) as server:
        code, _, err = cli("judges", f"openai:fake-model@{server.url}")
    assert (code, err) == (1, f"error: server error HTTP 503 from {server.url}\n")
