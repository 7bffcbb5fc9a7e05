"""assay: judge generated text with LLMs, reliably and interpretably, and measure how far the judges can be trusted.

The public API::

    import assay
    result = assay.evaluate("topical-chat", method="geval", judge="llamacpp:smollm2", limit=12)
    df = result.to_pandas()
    table = assay.meta_evaluate(result.run_dir)
    built = assay.prepare("checklist", dataset="topical-chat", judge="llamacpp:smollm2", out="checklist.yaml")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay._version import __version__

if TYPE_CHECKING:
    from assay.api import RunResult, evaluate, evaluate_async
    from assay.datasets import Dataset, list_datasets, load_dataset
    from assay.judges import load_judge
    from assay.methods import get_method, method_names
    from assay.run.prepare import PrepareResult, prepare, prepare_async
    from assay.run.store import RunStore
    from assay.types import Dimension, Judgment, Sample, Scale, Usage


def meta_evaluate(*args: object, **kwargs: object) -> object:
    """Correlations of a run (or scores file) with human ratings; see :func:`assay.meta.meta_evaluate`."""
    from assay.meta import meta_evaluate as _meta_evaluate

    return _meta_evaluate(*args, **kwargs)  # type: ignore[arg-type]


#: Where each public name lives, imported on first use (PEP 562): ``import assay.report.ahead`` (the run summary's
#: helper process) or ``import assay.types`` then costs only what it uses, not the whole API (about 0.2 s), and the
#: build steps behind ``prepare`` would double ``import assay``'s time.
_LAZY = {
    "RunResult": "assay.api", "evaluate": "assay.api", "evaluate_async": "assay.api",
    "Dataset": "assay.datasets", "list_datasets": "assay.datasets", "load_dataset": "assay.datasets",
    "load_judge": "assay.judges", "get_method": "assay.methods", "method_names": "assay.methods",
    "prepare": "assay.run.prepare", "prepare_async": "assay.run.prepare", "PrepareResult": "assay.run.prepare",
    "RunStore": "assay.run.store",
    "Dimension": "assay.types", "Judgment": "assay.types", "Sample": "assay.types", "Scale": "assay.types",
    "Usage": "assay.types",
}


def __getattr__(name: str) -> Any:
    """The public names of :data:`_LAZY`, each imported when first asked for."""
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
