"""Shared fixtures: the embedded judge (loaded once per session) and small dataset slices."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from assay.datasets import Dataset, load_dataset

E2E = Path(__file__).resolve().parent / "e2e"


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects: ``-m "not e2e"`` sees the marks added here
def pytest_collection_modifyitems(config, items):
    """Mark every test under ``tests/e2e/`` ``e2e``; skip ``embed``-marked tests, saying why, when the embed extra is
    not installed."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)
    if importlib.util.find_spec("sentence_transformers") is not None:
        return
    skip = pytest.mark.skip(reason="needs the embed extra (sentence-transformers is not importable): "
                                   "pip install 'assay[embed]'")
    for item in items:
        if "embed" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def smollm2():
    """The embedded SmolLM2-135M judge, loaded once for the whole session."""
    from assay.judges.llamacpp import LlamaCppJudge

    return LlamaCppJudge("smollm2", n_threads=2)


@pytest.fixture(scope="session")
def topical_chat() -> Dataset:
    return load_dataset("topical-chat")


@pytest.fixture(scope="session")
def summeval() -> Dataset:
    return load_dataset("summeval")


@pytest.fixture(scope="session")
def qags_xsum() -> Dataset:
    return load_dataset("qags-xsum")


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run the ``assay`` command in-process as a user would (errors as one line, exit codes); returns
    ``(exit code, stdout, stderr)``."""
    import sys

    from assay.cli.main import main

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["assay", *args])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    return run
