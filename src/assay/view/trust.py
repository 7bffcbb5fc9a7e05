"""The viewer's Trust tab: ``assay meta --human/--labels`` results per run, drawn as tables and forest plots."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from assay.view.page import Section

__all__ = ["trust_section"]


def trust_section(runs: Sequence[Path], *, alpha: float = 0.05, **how: Any) -> Section:
    """The Trust tab for these runs, with the labels ``how`` names (``human=FILE`` or ``labels=K``, ``seed``, ...).

    A run the labels do not fit (a sample of the file not in it) shows its error in its card; other runs still show.
    """
    from assay.errors import AssayError
    from assay.meta.table import jsonable
    from assay.meta.trust.session import assess

    entries = []
    for run in runs:
        try:
            res = assess(run, alpha=alpha, **how)
            entries.append({"run": str(run), "labels": res["labels"], "trust": res["trust"]})
        except AssayError as exc:
            entries.append({"run": str(run), "labels": {"source": str(how.get("human") or how.get("labels"))},
                            "error": str(exc)})
    script = resources.files("assay.view").joinpath("static", "trust.js").read_text(encoding="utf-8")
    return Section("trust", "Trust", script, jsonable({"alpha": alpha, "runs": entries}))
