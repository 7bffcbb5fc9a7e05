"""The method registry: built-in methods and plugins (entry point group ``assay.methods``), loaded lazily."""

from __future__ import annotations

from typing import Any

from assay.common.plugins import Registry
from assay.errors import ConfigError
from assay.methods.base import Method, MethodOptions, RunContext

__all__ = ["DEFAULT_METHOD", "Method", "MethodOptions", "RunContext", "get_method", "make_method", "method_names"]

# Built-ins are declared exactly like plugins: "module:Class", imported on first use.
_BUILTIN = {
    "direct": "assay.methods.direct:Direct",
    "geval": "assay.methods.geval:GEval",
    "checkeval": "assay.methods.checkeval:CheckEval",
    "seal": "assay.methods.seal:Seal",
    "gereval": "assay.methods.gereval:GerEval",
    "pairwise": "assay.methods.pairwise:Pairwise",
}


#: The method a run uses when none is named: the holistic baseline the papers compare against.
DEFAULT_METHOD = "direct"

_REGISTRY = Registry("assay.methods", "method", _BUILTIN, Method)


def method_names() -> list[str]:
    """Names of the methods that can be loaded here."""
    return _REGISTRY.names()


def get_method(name: str) -> type[Method]:
    """The method class registered under ``name``.

    Raises:
        ConfigError: Unknown name, with a did-you-mean hint.
    """
    return _REGISTRY.get(name)


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
