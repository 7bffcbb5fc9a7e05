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
    (["meta", "--boostrap", "3", "x.jsonl"], "Did you mean --bootstrap?"),
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
