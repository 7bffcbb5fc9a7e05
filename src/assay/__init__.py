"""assay: judge generated text with LLMs, reliably and interpretably, and measure how far the judges can be trusted.

The public API::

    import assay
    result = assay.evaluate("topical-chat", method="geval", judge="llamacpp:smollm2", limit=12)
    df = result.to_pandas()
    table = assay.meta_evaluate(result.run_dir)
    built = assay.prepare("checklist", dataset="topical-chat", judge="llamacpp:smollm2", out="checklist.yaml")
"""

from __future__ import annotations

from typing import Any

from assay._version import __version__
from assay.api import RunResult, evaluate, evaluate_async
from assay.datasets import Dataset, list_datasets, load_dataset
from assay.judges import load_judge
from assay.methods import get_method, method_names
from assay.run.store import RunStore
from assay.types import Dimension, Judgment, Sample, Scale, Usage


def meta_evaluate(*args: object, **kwargs: object) -> object:
    """Correlations of a run (or scores file) with human ratings; see :func:`assay.meta.meta_evaluate`."""
    from assay.meta import meta_evaluate as _meta_evaluate

    return _meta_evaluate(*args, **kwargs)  # type: ignore[arg-type]


#: Imported on first use (PEP 562): the build steps behind ``prepare`` would double ``import assay``'s time.
_LAZY = {"prepare": "assay.run.prepare", "prepare_async": "assay.run.prepare", "PrepareResult": "assay.run.prepare"}


def __getattr__(name: str) -> Any:
    """``assay.prepare``, ``assay.prepare_async`` and ``assay.PrepareResult``, imported when first asked for."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'assay' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Dataset", "Dimension", "Judgment", "PrepareResult", "RunResult", "RunStore", "Sample", "Scale", "Usage",
    "__version__", "evaluate", "evaluate_async", "get_method", "list_datasets", "load_dataset", "load_judge",
    "meta_evaluate", "method_names", "prepare", "prepare_async",
]
