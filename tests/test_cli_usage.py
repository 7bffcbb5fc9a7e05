"""The command line a newcomer meets: typos and bad judge options are one ``error:`` line and a documented exit code.

These run against the typer that pip resolves (0.29 vendors its own click as ``typer._click``), in-process through
``assay.cli.main.main`` as the ``assay`` script runs it.
"""

from __future__ import annotations

import pytest


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize(("args", "says"), [
    (["nosuchcmd"], "No such command 'nosuchcmd'"),
    (["datsets"], "Did you mean 'datasets'?"),
    (["meta", "--no-such-flag", "x.jsonl"], "No such option: --no-such-flag"),
    (["meta", "--boostrap", "3", "x.jsonl"], "Did you mean --bootstrap"),
    (["export"], "Missing argument 'run_dir'"),
    (["run", "--limit", "abc"], "Invalid value for '--limit'"),
])
def test_typos_are_one_line_and_exit_2(cli, args, says):
    code, _out, err = cli(*args)
    line = _one_error_line(err)
    assert code == 2
    assert says in line and "--help" in line


def test_no_arguments_shows_the_help_without_a_traceback(cli):
    code, out, err = cli()
    assert code == 2
    assert "Traceback" not in out + err and "NoArgsIsHelpError" not in out + err
    assert "Usage" in out + err and "run" in out + err


@pytest.mark.parametrize(("flag", "suggested"), [("--limt", "'--limit'"), ("--qiet", "'--quiet'"),
                                                 ("--temprature", "'--temperature'")])
def test_a_run_flag_typo_suggests_the_command_flags_and_the_method_options(cli, tmp_path, flag, suggested):
    code, _out, err = cli("run", "--method", "direct", flag, "2", "--run-dir", str(tmp_path / "r"))
    line = _one_error_line(err)
    assert code == 2
    assert f"method 'direct' has no option {flag}" in line
    assert f"Did you mean {suggested}" in line or f", {suggested}" in line.split("Its options")[0]
    assert "--max-tokens" in line  # the method's options still listed
    assert not (tmp_path / "r").exists()  # nothing created


def test_main_imports_no_undeclared_click():
    """``click`` is not a dependency of assay: the CLI must catch what typer raises, not click's classes."""
    import ast
    from pathlib import Path

    import assay.cli

    for path in Path(assay.cli.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "click" not in names, path


@pytest.mark.parametrize(("judge", "opt", "says"), [
    ("llamacpp:smollm2", "frobnicate=3", "judge option 'frobnicate' is not an option of the llamacpp backend"),
    ("llamacpp:smollm2", "n_thread=2", "Did you mean 'n_threads'?"),
    ("openai:m@http://127.0.0.1:9/v1", "timeout=abc", "judge option timeout='abc': Input should be a valid number"),
    ("openai:m@http://127.0.0.1:9/v1", "timeout=-1", "greater than 0"),
])
def test_bad_judge_options_are_one_line_before_anything_is_made(cli, tmp_path, judge, opt, says):
    run_dir = tmp_path / "run"
    code, _out, err = cli("run", "--limit", "1", "-q", "--judge", judge, "--judge-opt", opt, "--run-dir", str(run_dir))
    line = _one_error_line(err)
    assert code == 1
    assert says in line
    backend = judge.split(":")[0]
    valid = {"llamacpp": ["n_threads", "n_ctx", "seed"], "openai": ["timeout", "logprobs", "cache_prompt"]}[backend]
    assert all(name in line for name in valid)  # the valid options are named
    assert not run_dir.exists()


def test_judge_options_are_checked_and_typed_before_the_judge_is_built():
    from assay.errors import ConfigError
    from assay.judges import check_judge_options
    from assay.judges.openai import OpenAIJudge
    from assay.judges.replay import ReplayJudge

    assert check_judge_options(OpenAIJudge, "openai", {"timeout": "2.5", "logprobs": "false"}) == {
        "timeout": 2.5, "logprobs": False}
    assert check_judge_options(OpenAIJudge, "openai", {}) == {}  # the constructor's defaults stay its own
    with pytest.raises(ConfigError, match="replay backend takes no options"):
        check_judge_options(ReplayJudge, "replay", {"timeout": 3})


def test_a_plugin_judge_without_declared_options_is_checked_by_its_constructor():
    from assay.errors import ConfigError
    from assay.judges import Judge, check_judge_options

    class Plugin(Judge):
        def __init__(self, model: str, *, temperature_scale: float = 1.0, region: str = "eu") -> None:
            self.model = model

        async def generate(self, request):  # pragma: no cover - never called
            raise NotImplementedError

    class Open(Plugin):
        def __init__(self, model: str, **anything) -> None:
            self.model = model

    assert check_judge_options(Plugin, "plug", {"region": "us"}) == {"region": "us"}
    with pytest.raises(ConfigError, match=r"'regoin'.*Did you mean 'region'\?.*region, temperature_scale"):
        check_judge_options(Plugin, "plug", {"regoin": "us"})
    assert check_judge_options(Open, "open", {"whatever": 1}) == {"whatever": 1}


@pytest.mark.parametrize("path", ["assay.judges.openai:OpenAIJudge", "assay.judges.llamacpp:LlamaCppJudge"])
def test_declared_judge_options_match_the_constructor(path):
    """Each declared option is a keyword of the constructor with the same default, and each keyword is declared."""
    import importlib
    import inspect

    module, _, name = path.partition(":")
    cls = getattr(importlib.import_module(module), name)
    params = {p.name: p.default for p in list(inspect.signature(cls.__init__).parameters.values())[2:]}
    params.pop("base_url", None)  # the spec's @URL, not an option
    declared = {k: f.default for k, f in cls.Options.model_fields.items()}
    assert declared == params
