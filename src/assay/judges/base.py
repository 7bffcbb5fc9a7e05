"""The one async interface every LLM judge implements, and the request/response types it speaks."""

from __future__ import annotations

import abc
import hashlib
import json
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import ConfigError


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class Request(BaseModel):
    """Everything that determines a judge's answer; the call cache keys on all of it.

    Attributes:
        messages: The chat messages.
        temperature: Sampling temperature; 0 means greedy.
        top_p: Nucleus sampling mass.
        max_tokens: Upper bound on generated tokens per completion.
        n: Number of completions wanted.
        seed: Sampling seed, where the backend honours one.
        stop: Stop strings.
        top_logprobs: If set, the k most likely tokens with log-probabilities at every
            generated position.
        json_mode: Ask the backend for a JSON object answer where it supports it.
        json_schema: A JSON schema (compact JSON text, see :func:`schema_text`) the answer must
            follow where the backend can enforce it: the embedded judge decodes under a grammar
            built from it; the ``openai`` backend sends it as ``response_format`` ``json_schema``
            (or Ollama's ``format``). A run sends schemas only to a judge whose
            :attr:`Judge.supports_schema` holds (probed once per run). Implies ``json_mode``.
        sample_index: Distinguishes repeated draws of an otherwise identical sampled request,
            so that the cache keeps them apart instead of collapsing a sampling estimate.
        attempt: The unit's re-ask round (``--retry-parse-failures``; 0 the first time): part of the key even
            for a greedy request, so that the cache does not hand back the answer that failed to parse.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...]
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    n: int = Field(default=1, ge=1)
    seed: int | None = None
    stop: tuple[str, ...] = ()
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    json_mode: bool = False
    json_schema: str | None = None
    sample_index: int = 0
    attempt: int = 0

    @classmethod
    def chat(cls, prompt: str, *, system: str | None = None, **settings: Any) -> Request:
        """A request with one user message (and an optional system message)."""
        msgs = [Message(role="system", content=system)] if system else []
        msgs.append(Message(role="user", content=prompt))
        return cls(messages=tuple(msgs), **settings)

    def key_payload(self) -> dict[str, Any]:
        """The canonical content of this request for cache keys and replay.

        A greedy request's ``sample_index`` is dropped: greedy decoding is deterministic, so
        repeating it should hit the cache.
        """
        data = self.model_dump(mode="json")
        if self.temperature == 0:
            data["sample_index"] = 0
        if data["json_schema"] is None:
            del data["json_schema"]  # keys of requests without a schema stay as they were
        if not data["attempt"]:
            del data["attempt"]  # likewise for a unit's first attempt (only --retry-parse-failures sets one)
        return data


def schema_text(schema: dict[str, Any]) -> str:
    """A JSON schema as the compact text a :class:`Request` carries. Keys keep their order: a grammar
    built from the schema asks for the properties in that order."""
    return json.dumps(schema, separators=(",", ":"))


class TopToken(NamedTuple):
    """One candidate token at a generated position.

    A named pair rather than a model: an answer with top-20 log-probabilities holds twenty per position, and a
    pair is validated and written at a fraction of a model's cost (stored as ``["token", logprob]``; a stored
    ``{"token": ..., "logprob": ...}`` object still reads, and extra keys are refused either way).
    """

    token: str
    logprob: float


class TokenLogprobs(BaseModel):
    """The generated token at one position and the top-k alternatives there."""

    model_config = ConfigDict(extra="forbid")

    token: str
    logprob: float
    top: list[TopToken] = Field(default_factory=list)


class Choice(BaseModel):
    """One completion."""

    model_config = ConfigDict(extra="forbid")

    text: str
    logprobs: list[TokenLogprobs] | None = None
    finish_reason: str | None = None


class Response(BaseModel):
    """A judge's answer to one request.

    Attributes:
        choices: The n completions.
        prompt_tokens: Prompt tokens as the backend counted them.
        completion_tokens: Completion tokens summed over choices.
        cached_prompt_tokens: Prompt tokens served from a prefix cache, where reported.
        latency_s: Wall time of the call.
        model: The model name the backend reported.
        from_cache: True when the answer came from assay's call cache (set by the middleware).
        cost_usd: Price of the call from the run's price table (set by the middleware).
    """

    model_config = ConfigDict(extra="forbid")

    choices: list[Choice]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    latency_s: float = 0.0
    model: str = ""
    from_cache: bool = False
    cost_usd: float = 0.0

    @property
    def text(self) -> str:
        """The first completion's text."""
        return self.choices[0].text


class JudgeIdentity(BaseModel):
    """What identifies a judge's answers: recorded with every run and part of every cache key.

    It never holds a secret: no API key, no headers.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str
    model: str
    base_url: str | None = None
    model_sha256: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)

    @property
    def label(self) -> str:
        """A short human-readable name, e.g. ``openai:gpt-4o-mini``."""
        return f"{self.backend}:{self.model}"

    def digest(self) -> str:
        """A stable hash of the identity, for cache keys."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


class JudgeOptions(BaseModel):
    """Base of a backend's declared options: unknown names are errors (``--judge-opt frobnicate=3``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Judge(abc.ABC):
    """An LLM behind one async call. Backends only transport; the middleware does the rest.

    Subclasses set ``identity``, ``supports_logprobs`` (methods read it rather than guess)
    and ``default_concurrency``, and implement :meth:`generate`.
    """

    identity: JudgeIdentity
    supports_logprobs: bool = False
    #: Whether it enforces a request's ``json_schema`` (constrained decoding); an endpoint's is probed once per
    #: run (``detect_schema``), and ``schema_reason`` says how it was decided (recorded in the manifest).
    supports_schema: bool = False
    schema_reason: str | None = None
    default_concurrency: int = 8
    #: Whether its calls cost money; a judge that re-answers recorded calls (replay) pays nothing.
    paid: bool = True
    #: Whether it sets each response's ``cost_usd`` itself (a batch judge: batch prices, live retries in full).
    prices_own_calls: bool = False
    #: Whether each instance holds its own model (embedded): N instances are N times the capacity, so a bound on
    #: calls in flight applies per instance (the ray executor divides a shared endpoint's bound among its workers).
    owns_model: bool = False
    #: The options ``--judge-opt`` / ``judge_options`` may give (a pydantic model with ``extra="forbid"``), checked by
    #: :func:`assay.judges.load_judge` before the judge is built; None: the constructor's keyword parameters.
    Options: ClassVar[type[BaseModel] | None] = None

    @classmethod
    def from_spec(cls, model: str, url: str | None = None, **options: Any) -> Judge:
        """Build the judge a spec ``BACKEND:MODEL[@URL]`` names (what :func:`assay.judges.load_judge` calls).

        The default passes ``model`` and the options to the constructor; a backend that talks to an
        endpoint overrides this to take ``url``.

        Raises:
            ConfigError: A URL given to a backend that takes none.
        """
        if url is not None:
            raise ConfigError(f"{cls.__name__} takes no endpoint URL (got '@{url}'): give BACKEND:MODEL")
        return cls(model, **options)

    @abc.abstractmethod
    async def generate(self, request: Request) -> Response:
        """Answer one request, raising TransientJudgeError or FatalJudgeError on failure."""

    async def aclose(self) -> None:
        """Release connections, models or threads."""
        return None

    def plan_concurrency(self, calls: int) -> None:
        """Hear how many calls the middleware lets into flight at once (an HTTP judge sizes its pool to it)."""
        return None

    def runtime(self) -> dict[str, Any]:
        """How this judge runs where that does not change its answers (transport, threads, wait policy).

        Recorded in the run's manifest (``judge_runtime``) and by ``assay judges``; deliberately not in
        :attr:`identity`, whose every field is part of the cache key.
        """
        return {}

    async def context_size(self) -> tuple[int | None, str]:
        """The judge's context size in tokens where it is known, and how it was learnt (or why it is not known).

        Asked once per run, during detection (:meth:`assay.run.session.RunSession.detect`): where it is known, the
        units whose prompts exceed it are named before judging (docs/judges.md, "Context size"). It never raises:
        an unknown size is ``(None, "context size unknown: ...")``. The default knows nothing.
        """
        return None, f"context size unknown: the {self.identity.backend} backend does not say"

    async def check(self) -> dict[str, Any]:
        """Probe the judge with a tiny request; return what it reports (for ``assay judges``)."""
        req = Request.chat("Reply with the single word: ok", max_tokens=4, top_logprobs=1)
        resp = await self.generate(req)
        got_lp = bool(resp.choices and resp.choices[0].logprobs)
        return {
            "identity": self.identity.model_dump(mode="json"),
            "model_reported": resp.model,
            "answer": resp.text,
            "logprobs": got_lp,
            "latency_s": round(resp.latency_s, 3),
            "runtime": self.runtime(),
        }
