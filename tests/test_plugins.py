"""Judges and methods from plugins: one module plus one entry point each, run end to end by ``assay.evaluate``."""

from __future__ import annotations

import json
import sys
import textwrap
from importlib.metadata import EntryPoint

import pytest

import assay
from assay.errors import ConfigError
from assay.judges import backend_names, load_judge
from assay.judges.openai import OpenAIJudge
from assay.methods import get_method, method_names

# The whole plugin: a judge backend that always gives one answer, and a method that asks for one number.
PLUGIN = textwrap.dedent('''
    from pydantic import BaseModel, ConfigDict

    from assay.judges.ask import ask
    from assay.judges.base import Choice, Judge, JudgeIdentity, Request, Response
    from assay.methods.base import AnswerReader, ArtifactKind, Built, Method
    from assay.answers.parsing import parse_rating


    class TinyJudge(Judge):
        paid = False

        def __init__(self, model, *, answer="3"):
            self.identity = JudgeIdentity(backend="tiny", model=model)
            self.answer = answer
            self.prompts = []

        async def generate(self, request):
            self.prompts.append(request.messages[-1].content)
            return Response(choices=[Choice(text=self.answer, finish_reason="stop")], model=self.identity.model)


    class TinyReader(AnswerReader):
        """How `assay import` reads the tiny method's answers written elsewhere."""
        method = "tiny"

        def read(self, sample, rec, *, file, record):
            (text,) = self.texts(rec, file, record)
            parsed = parse_rating(text, self.dimension.scale)
            return parsed.value, {"answer": text}, f"unparseable answer: {parsed.error}" if parsed.error else None


    class NotesOptions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        words: int = 3


    def plan_notes(dataset, dimensions, opts):
        dims = dataset.dimensions(dimensions)  # unknown names fail before any judge is loaded

        async def build(judge):
            prompt = f"Write {opts.words} words on {dims[0].name}"
            text = (await ask(judge, Request.chat(prompt, max_tokens=8), stage="notes")).response.text
            return Built(text, f"notes: {text}\\n", f"n{len(text)}")

        return build


    class TinyMethod(Method):
        name = "tiny"
        Reader = TinyReader
        builds = {"tiny-notes": ArtifactKind(NotesOptions, plan_notes)}

        def standin(self, request, stage):
            return "4"

        async def score(self, sample, dimension, ctx):
            prompt = f"Rate {dimension.name} ({dimension.scale.label()}): {sample.output}"
            resp = (await ask(ctx.judge, Request.chat(prompt, max_tokens=4), stage="score")).response
            parsed = parse_rating(resp.text, dimension.scale)
            return self.judgment(sample, dimension, ctx, score=parsed.value,
                                 trace={"answer": resp.text, "parse_error": parsed.error},
                                 error=f"unparseable answer: {parsed.error}" if parsed.error else None)
''')


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """Install nothing: write the plugin module and make the registries' entry-point lookup list it."""
    name = "assay_tiny_plugin"
    (tmp_path / f"{name}.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    eps = [
        EntryPoint("tiny", f"{name}:TinyJudge", "assay.judges"),
        EntryPoint("openai", f"{name}:TinyJudge", "assay.judges"),  # may not shadow a built-in
        EntryPoint("gone", "assay_no_such_plugin:Judge", "assay.judges"),  # not installed here: not listed
        EntryPoint("tiny", f"{name}:TinyMethod", "assay.methods"),
        EntryPoint("notamethod", f"{name}:TinyJudge", "assay.methods"),
    ]
    monkeypatch.setattr("assay.common.plugins.entry_points", lambda group: [ep for ep in eps if ep.group == group])
    return name


def test_plugins_are_listed_beside_the_builtins(plugin):
    assert backend_names() == ["llamacpp", "openai", "replay", "tiny"]
    assert method_names() == ["checkeval", "direct", "gereval", "geval", "notamethod", "pairwise", "seal", "tiny"]
    assert plugin not in sys.modules  # listing imports nothing
    assert get_method("tiny").name == "tiny"


def test_a_plugin_judge_is_built_from_its_spec_with_options(plugin):
    judge = load_judge("tiny:three", answer="2")
    assert type(judge).__module__ == plugin
    assert (judge.identity.label, judge.answer) == ("tiny:three", "2")


def test_plugin_errors_say_what_is_wrong(plugin):
    with pytest.raises(ConfigError, match="unknown judge backend 'tinny'. Did you mean 'tiny'"):
        load_judge("tinny:x")
    with pytest.raises(ConfigError, match="unknown method 'tiyn'. Did you mean 'tiny'"):
        get_method("tiyn")
    with pytest.raises(ConfigError, match="TinyJudge takes no endpoint URL"):
        load_judge("tiny:three@http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="'notamethod'.*is not an assay Method"):
        get_method("notamethod")
    with pytest.raises(ConfigError, match="unknown judge backend 'gone'"):
        load_judge("gone:x")


def test_a_plugin_never_shadows_a_builtin(plugin, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = load_judge("openai:m@http://127.0.0.1:1/v1")
    assert isinstance(judge, OpenAIJudge)
    assert judge.identity.base_url == "http://127.0.0.1:1/v1"


def test_evaluate_runs_a_plugin_method_with_a_plugin_judge(plugin, topical_chat, tmp_path):
    res = assay.evaluate(topical_chat, method="tiny", judge="tiny:three", dimensions=["naturalness"], limit=3,
                         run_dir=tmp_path / "run")
    assert [(j.method, j.judge, j.score, j.error) for j in res.judgments] == [("tiny", "tiny:three", 3.0, None)] * 3
    assert res.manifest["method"] == "tiny" and res.manifest["judge"]["backend"] == "tiny"
    assert res.units["scored"] == 3


def test_an_off_format_plugin_answer_is_a_parse_failure(plugin, topical_chat, tmp_path):
    res = assay.evaluate(topical_chat, method="tiny", judge="tiny:chatty", judge_options={"answer": "fine, I guess"},
                         dimensions=["naturalness"], limit=2, run_dir=tmp_path / "run")
    assert [j.score for j in res.judgments] == [None, None]
    assert all(j.error.startswith("unparseable answer") for j in res.judgments)
    assert res.units["parse_failed"] == 2


def test_pyproject_declares_exactly_the_built_ins():
    """The built-ins are declared twice (the registries' dicts serve an uninstalled checkout); they must agree."""
    import tomllib
    from pathlib import Path

    import assay.judges as judges
    import assay.methods as methods

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["entry-points"]
    assert declared["assay.judges"] == judges._BUILTIN
    assert declared["assay.methods"] == methods._BUILTIN


def test_a_plugin_method_imports_answers_written_elsewhere(plugin, topical_chat, tmp_path):
    from assay.importer.write import ImportOptions, import_answers

    ids = [s.id for s in topical_chat.samples[:3]]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"sid": i, "said": a}) + "\n" for i, a in
                               zip(ids, ["2", "3", "so-so"], strict=True)))
    res = import_answers(answers, ImportOptions(method="tiny", dataset="topical-chat", dimension="naturalness",
                                                answers="said", id="sid"), tmp_path / "run")
    assert res.counts["scored"] == 2 and res.counts["parse_failed"] == 1
    assert [(j.method, j.score) for j in res.judgments] == [("tiny", 2.0), ("tiny", 3.0), ("tiny", None)]
    with pytest.raises(ConfigError, match="--mode does not apply to method tiny"):
        import_answers(answers, ImportOptions(method="tiny", dataset="topical-chat", dimension="naturalness",
                                              answers="said", id="sid", mode="greedy"), tmp_path / "run2")


def test_a_plugin_method_is_estimated_with_its_own_stand_in(plugin, topical_chat):
    est = assay.evaluate(topical_chat, method="tiny", judge="tiny:three", dimensions=["naturalness"], limit=3,
                         estimate=True)
    (score,) = est.stages
    assert (score.stage, score.calls, score.exact_calls) == ("score", 3, 3)
    assert score.completion_tokens == 3  # one token per stand-in answer "4", the method's own


def test_a_plugin_method_builds_its_artifact(plugin, topical_chat, tmp_path):
    built = assay.prepare("tiny-notes", dataset=topical_chat, judge="tiny:three", dimensions=["naturalness"],
                          options={"words": 2}, out=tmp_path / "notes.txt")
    assert (built.method, built.text, built.calls) == ("tiny", "notes: 3\n", 1)
    assert (tmp_path / "notes.txt").read_text() == "notes: 3\n"
    with pytest.raises(ConfigError, match="options of 'tiny-notes': wrods: Extra inputs"):
        assay.prepare("tiny-notes", dataset=topical_chat, judge="tiny:three", options={"wrods": 2})
