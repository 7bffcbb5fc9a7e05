"""The import reader of a method: found through the method registry, its options checked before any file is read.

Each method brings its own reader (:attr:`assay.methods.base.Method.Reader`, a subclass of
:class:`~assay.methods.base.AnswerReader` beside the method's code), so a plugin method imports exactly as a
built-in does and nothing here names a method.
"""

from __future__ import annotations

from typing import Any

from assay.datasets import Dataset
from assay.errors import ConfigError
from assay.methods import get_method, method_names
from assay.methods.base import AnswerReader


def importable_methods() -> list[str]:
    """The registered methods whose answers ``assay import`` can read (each imported to ask it; a plugin that
    fails to load is left out here and named by its own error when asked for)."""
    names = []
    for name in method_names():
        try:
            if get_method(name).Reader is not None:
                names.append(name)
        except ConfigError:
            continue
    return names


def make_reader(method: str, dataset: Dataset, dimension: str, answers: str, *, strict: bool = False,
                **options: Any) -> AnswerReader:
    """The reader of a method's imported answers, its options checked before any file is read.

    Args:
        method: A registered method name.
        options: The method's import options (``mode``, ``checklist``, ...); unset ones (None) are left out.

    Raises:
        ConfigError: An unknown method, one that cannot import, or an option its reader does not take.
    """
    reader = get_method(method).Reader
    if reader is None:
        raise ConfigError(f"assay import reads the answers of {', '.join(importable_methods())}; "
                          f"method {method!r} has no import reader")
    given = {k: v for k, v in options.items() if v}
    extra = [k for k in given if k not in reader.options]
    if extra:
        raise ConfigError(f"{', '.join('--' + k for k in extra)} does not apply to method {method}")
    return reader(dataset, dimension, answers, strict=strict, **given)
