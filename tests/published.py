"""Where the project's shared material lives (``../shared``: published data, the seed papers), for tests that compare
with it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The tests folder (fixtures, data) and the checkout's root.
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def shared_path(*parts: str) -> Path:
    """A file or folder of ``shared/`` (env ``ASSAY_SHARED_DIR``, or ``../shared`` of the checkout or of its
    parent); the calling test is skipped when it is absent, as it is outside the project's workspace."""
    candidates = [Path(os.environ["ASSAY_SHARED_DIR"])] if os.environ.get("ASSAY_SHARED_DIR") else []
    candidates += [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
    for base in candidates:
        path = base.joinpath(*parts)
        if path.exists():
            return path
    pytest.skip(f"shared/{'/'.join(parts)} is not available here")


def published_dir(*parts: str) -> Path:
    """A folder of ``shared/data/published`` (see :func:`shared_path`)."""
    return shared_path("data", "published", *parts)
