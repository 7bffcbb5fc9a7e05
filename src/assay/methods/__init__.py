"""The method registry: built-in methods and plugins (entry point group ``assay.methods``), loaded lazily."""

from __future__ import annotations

import importlib
import importlib.util
from importlib.metadata import entry_points
from typing import Any

from assay.errors import ConfigError, did_you_mean
from assay.methods.base import Method, MethodOptions, RunContext

__all__ = ["Method", "MethodOptions", "RunContext", "get_method", "make_method", "method_names"]

# Built-ins are declared exactly like plugins: "module:Class", imported on first use.
_BUILTIN = {
    "direct": "assay.methods.direct:Direct",
    "geval": "assay.methods.geval:GEval",
    "checkeval": "assay.methods.checkeval:CheckEval",
    "seal": "assay.methods.seal:Seal",
    "gereval": "assay.methods.gereval:GerEval",
}


def _targets() -> dict[str, str]:
    targets = dict(_BUILTIN)
    for ep in entry_points(group="assay.methods"):
        targets.setdefault(ep.name, ep.value)
    return targets


def _available(targets: dict[str, str]) -> dict[str, str]:
    return {n: t for n, t in targets.items() if importlib.util.find_spec(t.split(":")[0]) is not None}


def method_names() -> list[str]:
    """Names of the methods that can be loaded here."""
    return sorted(_available(_targets()))


def get_method(name: str) -> type[Method]:
    """The method class registered under ``name``.

    Raises:
        ConfigError: Unknown name, with a did-you-mean hint.
    """
    targets = _available(_targets())
    if name not in targets:
        raise ConfigError(f"unknown method {name!r}." + did_you_mean(name, list(targets)))
    module, _, attr = targets[name].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise ConfigError(f"{targets[name]} is not an assay Method")
    return cls


def make_method(name: str, options: dict[str, Any] | None = None) -> Method:
    """Instantiate a method with validated options; unknown options are a clear error."""
    from pydantic import ValidationError

    cls = get_method(name)
    try:
        return cls(options or {})
    except ValidationError as exc:
        allowed = ", ".join(sorted(cls.Options.model_fields)) or "none"
        msgs = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"method {name!r}: {msgs}. Its options: {allowed}.") from exc
