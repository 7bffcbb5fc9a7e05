"""Where the project's shared published data lives (``../shared/data/published``), for tests that compare with it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def published_dir(*parts: str) -> Path:
    """A folder of ``shared/data/published`` (env ``ASSAY_SHARED_DIR``, or ``../shared`` of the checkout or of
    its parent); the calling test is skipped when it is absent, as it is outside the project's workspace."""
    candidates = [Path(os.environ["ASSAY_SHARED_DIR"])] if os.environ.get("ASSAY_SHARED_DIR") else []
    candidates += [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
    for base in candidates:
        path = base.joinpath("data", "published", *parts)
        if path.is_dir():
            return path
    pytest.skip(f"shared/data/published/{'/'.join(parts)} is not available here")
