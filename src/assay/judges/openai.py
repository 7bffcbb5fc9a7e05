"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp server, Ollama) through the official SDK."""

from __future__ import annotations

import email.utils
import os
import re
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from assay.errors import ConfigError, FatalJudgeError, JudgeError, TransientJudgeError
from assay.judges.base import (
    Choice,
    Judge,
    JudgeIdentity,
    Request,
    Response,
    TokenLogprobs,
    TopToken,
)


class OpenAIJudge(Judge):
    """A chat-completions client; retries are the middleware's, so the SDK's own are off.

    Args:
        model: The model name the endpoint serves.
        base_url: The endpoint (``http://host:port/v1``); None means OPENAI_BASE_URL or OpenAI.
        api_key: The key; None means OPENAI_API_KEY, or a placeholder for local servers
            that need none. It is held by the SDK client only, never recorded.
        timeout: Per-request timeout in seconds, enforced by the SDK's HTTP client.
        logprobs: Force the log-probability capability on or off instead of probing.
        cache_prompt: Send llama.cpp's ``cache_prompt`` field (keep the prompt in the server's KV cache so that
            the next request evaluates only what follows the shared prefix). Opt-in, since OpenAI's API refuses
            unknown fields; recent llama.cpp servers cache by default. Part of the identity when set, since
            llama.cpp warns that a reused cache may change logits slightly (other batch sizes).
    """

    default_concurrency = 16

    @classmethod
    def from_spec(cls, model: str, url: str | None = None, **options: Any) -> OpenAIJudge:
        """``openai:MODEL`` or ``openai:MODEL@URL``: the URL is the endpoint."""
        if "@" in model:  # MODEL@host:port without a scheme: say so rather than send it as a model name
            raise ConfigError(f"judge spec 'openai:{model}': the endpoint after '@' must be an http(s) URL")
        return cls(model, url, **options)

    def __init__(
        self, model: str, base_url: str | None = None, *, api_key: str | None = None,
        timeout: float = 120.0, logprobs: bool | None = None, cache_prompt: bool | None = None,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is a core dependency
            raise ConfigError("the openai judge needs the 'openai' package: pip install openai") from exc
        self._openai = openai
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key is None:
            if base_url is None:
                raise ConfigError(
                    "openai judge: set OPENAI_API_KEY, or give a local endpoint as "
                    "'openai:MODEL@http://host:port/v1'"
                )
            key = "not-needed"  # local servers accept any key
        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=base_url, max_retries=0, timeout=timeout
        )
        self._cache_prompt = cache_prompt
        self.identity = JudgeIdentity(backend="openai", model=model, base_url=public_url(base_url),
                                      settings={} if cache_prompt is None else {"cache_prompt": cache_prompt})
        self._secrets = secrets_of(key if key != "not-needed" else None, base_url)
        self._where = public_url(base_url) or "the OpenAI API (https://api.openai.com/v1)"
        self._model = model
        self._logprobs_forced = logprobs
        self.supports_logprobs = bool(logprobs) if logprobs is not None else True
        self._probed = logprobs is not None
        #: How ``supports_logprobs`` was decided (recorded in the run's manifest).
        self.logprobs_reason: str | None = (f"set by the judge option logprobs={str(logprobs).lower()}"
                                            if logprobs is not None else None)

    async def detect_logprobs(self, known: bool | None = None, *,
                              send: Callable[[Request], Awaitable[Response]] | None = None) -> bool:
        """Ask the endpoint once whether it returns log-probabilities; remember the answer and why.

        Only a definitive answer says no: the endpoint answered without log-probabilities, or refused
        the request with a 4xx naming them (:func:`refuses_logprobs`). A transient failure (5xx,
        timeout, dropped connection) is no answer: ``send`` retries it like any call, and if it never
        clears the error is raised, since a guess from one 503 would switch a method's mode for the
        whole run (and a resume would keep it).

        Args:
            known: An answer recorded earlier (a resumed run), adopted without a call.
            send: How to send the probe: the middleware's ``generate`` brings its retry policy;
                default one bare call.

        Raises:
            JudgeError: The probe got no definitive answer (retries ran out) or a fatal error.
        """
        if known is not None and not self._probed:
            self.supports_logprobs, self._probed = known, True
            self.logprobs_reason = "as recorded by the run being resumed"
        if not self._probed:
            req = Request.chat("Say ok.", max_tokens=1, top_logprobs=2)
            try:
                resp = await (send or self.generate)(req)
            except FatalJudgeError as exc:
                if not refuses_logprobs(exc):
                    raise
                self.supports_logprobs = False
                self.logprobs_reason = f"probe: the endpoint refused log-probabilities ({exc})"
            except JudgeError as exc:  # no answer at all: say so rather than guess a capability
                raise JudgeError(f"{self.identity.label}: the log-probability probe got no answer ({exc}); "
                                 "retry later, or skip the probe with --judge-opt logprobs=true|false") from exc
            else:
                self.supports_logprobs = bool(resp.choices and resp.choices[0].logprobs)
                self.logprobs_reason = ("probe: the endpoint answered with log-probabilities" if self.supports_logprobs
                                        else "probe: the endpoint answered without log-probabilities")
            self._probed = True
        return self.supports_logprobs

    def payload(self, request: Request) -> dict[str, Any]:
        """The chat-completions arguments for a request (pure; tested without a network)."""
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "n": request.n,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        if request.top_logprobs is not None:
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        if request.json_mode or request.json_schema:
            body["response_format"] = {"type": "json_object"}
        if self._cache_prompt is not None:
            body["cache_prompt"] = self._cache_prompt
        return body

    async def generate(self, request: Request) -> Response:
        """Send one request; every error it raises has the key and anything like a token redacted.

        Servers echo headers or keys in error bodies (a 429 from a proxy may quote the whole request),
        and the message is printed and stored with the failed unit.
        """
        try:
            return await self._generate(request)
        except JudgeError as exc:
            exc.args = (redact(str(exc), self._secrets),)
            cause = exc.__cause__
            if cause is not None and redact(str(cause), self._secrets) != str(cause):
                exc.__cause__, exc.__suppress_context__ = None, True  # no traceback may print the raw body
            raise

    async def _generate(self, request: Request) -> Response:
        oa = self._openai
        start = time.perf_counter()
        try:
            # The SDK's generic post keeps its transport, auth and typed errors but skips the
            # per-call transformation of typed params and pydantic parsing of the reply, which
            # cost about 1.5 ms of CPU per call (benchmarks/http_overhead.py).
            raw = await self._client.post("/chat/completions", body=self.payload(request), cast_to=object)
        except oa.RateLimitError as exc:
            raise TransientJudgeError(f"rate limited (HTTP 429): {_brief(exc)}",
                                      retry_after=_retry_after(exc)) from exc
        except (oa.AuthenticationError, oa.PermissionDeniedError) as exc:
            raise FatalJudgeError(
                f"{self.identity.label}: the endpoint refused the credentials "
                f"(HTTP {exc.status_code}); check OPENAI_API_KEY"
            ) from exc
        except oa.NotFoundError as exc:
            raise FatalJudgeError(
                f"{self.identity.label}: model or endpoint not found (HTTP 404) at "
                f"{self.identity.base_url or 'the default OpenAI URL'}: {_brief(exc)}"
            ) from exc
        except oa.APITimeoutError as exc:
            raise TransientJudgeError(f"request to {self._where} {connection_reason(exc)}") from exc
        except oa.APIConnectionError as exc:
            raise TransientJudgeError(f"cannot reach {self._where}: {connection_reason(exc)}") from exc
        except oa.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise TransientJudgeError(f"server error HTTP {exc.status_code} from {self._where}",
                                          retry_after=_retry_after(exc)) from exc
            raise FatalJudgeError(
                f"{self.identity.label}: request rejected (HTTP {exc.status_code}): {_brief(exc)}"
            ) from exc
        except oa.APIResponseValidationError as exc:
            raise TransientJudgeError(f"malformed response body: {_brief(exc)}") from exc
        except ValueError as exc:  # body that is not JSON at all
            raise TransientJudgeError(f"malformed response body: {exc}") from exc
        latency = time.perf_counter() - start
        return _to_response(raw, latency)


def refuses_logprobs(exc: FatalJudgeError) -> bool:
    """Whether a rejected request is the endpoint saying it does not do log-probabilities: HTTP 400
    or 422 whose message names them. Any other refusal (bad key, unknown model) is no such answer."""
    status = getattr(exc.__cause__, "status_code", None)
    return status in (400, 422) and "logprob" in str(exc).lower()


def public_url(url: str | None) -> str | None:
    """The endpoint as it may be recorded: credentials (``user:key@``) and query string removed."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def secrets_of(key: str | None, base_url: str | None) -> list[str]:
    """What must never be shown: the key, and credentials or query values carried by the endpoint URL."""
    out = [key] if key else []
    if base_url:
        parts = urlsplit(base_url)
        out += [p for p in (parts.password, parts.username if parts.password else None) if p]
        out += [v for _, v in parse_qsl(parts.query)]
    return [s for s in out if len(s) >= _MIN_SECRET]


_MIN_SECRET = 8  # shorter strings are no real key, and replacing them would garble messages
_TOKEN = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}|\bsk-[A-Za-z0-9_-]{8,}")


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with each secret, and anything that looks like a bearer token or an ``sk-`` key, redacted."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return _TOKEN.sub(lambda m: (m.group(1) or "") + "[redacted]", text)


def connection_reason(exc: BaseException) -> str:
    """Why a connection failed, from the chain of errors under the SDK's generic ``Connection error.``."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for err in chain:
        if isinstance(err, ConnectionRefusedError):
            return "connection refused (is the server running, on that port?)"
        if isinstance(err, socket.gaierror):
            return f"host name not found (DNS: {err.strerror or err})"
        if "ConnectTimeout" in type(err).__name__:
            return "timed out while connecting (is the host up, and the port open?)"
        if isinstance(err, TimeoutError) or "Timeout" in type(err).__name__:
            return "timed out waiting for the answer"
        if isinstance(err, ssl.SSLError):
            return f"TLS error ({err})"
    detail = next((str(e) for e in reversed(chain) if str(e)), "")
    return f"connection failed ({detail})" if detail else "connection failed"


def _to_response(raw: Any, latency: float) -> Response:
    """A chat.completion JSON object as a Response; anything else is a malformed answer."""
    if not isinstance(raw, dict) or not raw.get("choices"):
        raise TransientJudgeError(f"malformed response: no choices in {str(raw)[:200]!r}")
    choices = []
    try:
        for ch in raw["choices"]:
            content = (ch.get("logprobs") or {}).get("content")
            lp = [
                TokenLogprobs(token=t["token"], logprob=t["logprob"],
                              top=[TopToken(token=a["token"], logprob=a["logprob"])
                                   for a in t.get("top_logprobs") or []])
                for t in content
            ] if content else None
            text = (ch.get("message") or {}).get("content") or ""
            choices.append(Choice(text=text, logprobs=lp, finish_reason=ch.get("finish_reason")))
    except (KeyError, TypeError, AttributeError) as exc:
        raise TransientJudgeError(f"malformed response: {exc!r}") from exc
    usage = raw.get("usage") or {}
    prompt = usage.get("prompt_tokens") or 0
    return Response(
        choices=choices,
        prompt_tokens=prompt,
        completion_tokens=usage.get("completion_tokens") or 0,
        cached_prompt_tokens=cached_tokens(raw, prompt),
        latency_s=latency,
        model=raw.get("model") or "",
    )


def cached_tokens(raw: dict[str, Any], prompt_tokens: int) -> int:
    """The prompt tokens a server served from its prefix cache, as it reports them (0 when it does not).

    OpenAI and vLLM say ``usage.prompt_tokens_details.cached_tokens``; a llama.cpp server says ``timings.cache_n``
    (recent), or only ``timings.prompt_n``, the tokens it evaluated (the rest came from the cache). Its
    ``tokens_cached`` is no such count (all tokens kept after the answer) and is not read.
    """
    details = (raw.get("usage") or {}).get("prompt_tokens_details") or {}
    timings = raw.get("timings") or {}
    if isinstance(details.get("cached_tokens"), int):
        found = details["cached_tokens"]
    elif isinstance(timings.get("cache_n"), int):
        found = timings["cache_n"]
    elif isinstance(timings.get("prompt_n"), int) and prompt_tokens:
        found = prompt_tokens - timings["prompt_n"]
    else:
        return 0
    return max(0, min(found, prompt_tokens)) if prompt_tokens else max(0, found)


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    return retry_after_seconds(response.headers) if response is not None else None


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a server asked for: ``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP date."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _brief(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
