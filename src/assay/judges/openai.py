"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp server, Ollama): chats over aiohttp, the rest by SDK."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import importlib.util
import json
import os
import re
import socket
import ssl
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from pydantic import Field, ValidationError

from assay.common import jsontext
from assay.errors import (
    ConfigError,
    FatalJudgeError,
    JudgeError,
    RefusedJudgeError,
    RequestJudgeError,
    TransientJudgeError,
)
from assay.judges.base import (
    Judge,
    JudgeIdentity,
    JudgeOptions,
    Request,
    Response,
)

#: Seconds an idle connection is kept alive: the SDK's default (httpx's ``Limits.keepalive_expiry``).
KEEPALIVE_S = 5.0


# The option ``schema`` is named as users type it (``--judge-opt schema=false``); pydantic warns that the field
# shadows ``BaseModel.schema``, a deprecated classmethod nothing here calls.
warnings.filterwarnings("ignore", message='Field name "schema" in "OpenAIOptions" shadows', category=UserWarning)


class OpenAIOptions(JudgeOptions):
    """``--judge-opt`` options of ``openai:`` judges (their meaning: :class:`OpenAIJudge`)."""

    api_key: str | None = None
    timeout: float = Field(120.0, gt=0)
    logprobs: bool | None = None
    cache_prompt: bool | None = None
    n_ctx: int | None = Field(None, gt=0)
    schema: bool | None = None
    schema_field: Literal["response_format", "json_object", "format"] | None = None


class OpenAIJudge(Judge):
    """A chat-completions client; retries are the middleware's, so the SDK's own are off.

    Chat calls (the hot path) go straight over the judge's aiohttp session: the body serialised once
    with ``json.dumps``, the answer's JSON parsed into a :class:`Response`, errors classified by
    :func:`status_error` as the SDK path classified them. The SDK client shares that session and serves
    the rest (the batch API's files and batches); without aiohttp, chat calls go through the SDK on httpx.

    Args:
        model: The model name the endpoint serves.
        base_url: The endpoint (``http://host:port/v1``); None means OPENAI_BASE_URL or OpenAI.
        api_key: The key; None means OPENAI_API_KEY, or a placeholder for local servers
            that need none. It is held by the SDK client only, never recorded.
        timeout: Per-request timeout in seconds (connect, pool wait and each read), enforced by the HTTP client.
        logprobs: Force the log-probability capability on or off instead of probing.
        cache_prompt: Send llama.cpp's ``cache_prompt`` field (keep the prompt in the server's KV cache so that
            the next request evaluates only what follows the shared prefix). Opt-in, since OpenAI's API refuses
            unknown fields; recent llama.cpp servers cache by default. Part of the identity when set, since
            llama.cpp warns that a reused cache may change logits slightly (other batch sizes).
        n_ctx: The endpoint's context size in tokens, where you know it (``--judge-opt n_ctx=N``); it wins over a
            llama.cpp server's ``/props`` (:meth:`context_size`). A run and ``--estimate`` then name the units whose
            prompt exceeds it. Not part of the identity (it changes no answer).
        schema: Force the JSON-schema capability on or off instead of probing (``--answer-format``).
        schema_field: How a request's JSON schema is sent: ``response_format`` (``{"type": "json_schema", ...}``:
            OpenAI structured outputs, vLLM, llama.cpp's own server), ``json_object`` (``{"type": "json_object",
            "schema": ...}``: llama-cpp-python's server, Anyscale) or ``format`` (Ollama's own field, the schema
            itself). Part of the identity when set, since it changes what the endpoint enforces.
    """

    default_concurrency = 16
    Options = OpenAIOptions

    @classmethod
    def from_spec(cls, model: str, url: str | None = None, **options: Any) -> OpenAIJudge:
        """``openai:MODEL`` or ``openai:MODEL@URL``: the URL is the endpoint."""
        if "@" in model:  # MODEL@host:port without a scheme: say so rather than send it as a model name
            raise ConfigError(f"judge spec 'openai:{model}': the endpoint after '@' must be an http(s) URL")
        return cls(model, url, **options)

    def __init__(
        self, model: str, base_url: str | None = None, *, api_key: str | None = None,
        timeout: float = 120.0, logprobs: bool | None = None, cache_prompt: bool | None = None,
        n_ctx: int | None = None,
        schema: bool | None = None, schema_field: str | None = None,
    ) -> None:
        if importlib.util.find_spec("openai") is None:  # pragma: no cover - openai is a core dependency
            raise ConfigError("the openai judge needs the 'openai' package: pip install openai")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key is None:
            if base_url is None:
                raise ConfigError(
                    "openai judge: set OPENAI_API_KEY, or give a local endpoint as "
                    "'openai:MODEL@http://host:port/v1'"
                )
            key = "not-needed"  # local servers accept any key
        sdk_url, auth = url_credentials(base_url)
        self._connect = {"api_key": key, "base_url": sdk_url, "max_retries": 0, "timeout": timeout,
                         "default_headers": auth}
        self._transport, self._transport_note = http_transport()
        self._pool = self.default_concurrency
        self._client: Any = None  # the SDK client, built when first needed, in the loop that uses it (_client_now)
        self._session: Any = None  # the aiohttp session of the hot path, shared with the SDK client (aiohttp only)
        self._proxy: tuple[Any, Any] = (None, None)  # HTTP(S)_PROXY for the endpoint and its auth, read per loop
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._chat_url = chat_url(sdk_url or "https://api.openai.com/v1")
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                         "Accept": "application/json"} | auth
        self._cache_prompt = cache_prompt
        self.n_ctx = n_ctx
        self._props_url = props_url(sdk_url) if sdk_url is not None else None
        if schema_field not in (None, "response_format", "json_object", "format"):
            raise ConfigError(f"openai judge: schema_field must be response_format, json_object or format (Ollama), "
                              f"not {schema_field!r}")
        self._schema_field = schema_field or "response_format"
        settings: dict[str, Any] = {} if cache_prompt is None else {"cache_prompt": cache_prompt}
        if schema_field is not None:
            settings["schema_field"] = schema_field
        self.identity = JudgeIdentity(backend="openai", model=model, base_url=public_url(base_url),
                                      settings=settings)
        self._secrets = secrets_of(key if key != "not-needed" else None, base_url)
        self._where = public_url(base_url) or "the OpenAI API (https://api.openai.com/v1)"
        self._model = model
        self._logprobs_forced = logprobs
        self.supports_logprobs = bool(logprobs) if logprobs is not None else True
        self._probed = logprobs is not None
        #: How ``supports_logprobs`` was decided (recorded in the run's manifest).
        self.logprobs_reason: str | None = (f"set by the judge option logprobs={str(logprobs).lower()}"
                                            if logprobs is not None else None)
        self.supports_schema = bool(schema)
        self._schema_probed = schema is not None
        self.schema_reason = f"set by the judge option schema={str(schema).lower()}" if schema is not None else None

    async def context_size(self) -> tuple[int | None, str]:
        """The option ``n_ctx`` where given; else a llama.cpp server's own, read once from ``GET <root>/props``.

        The request carries no key nor credentials (llama.cpp serves ``/props`` publicly), follows no redirect
        and waits at most :data:`PROPS_TIMEOUT_S`; any failure (no such route on vLLM, Ollama or OpenAI, an
        error, a timeout, an answer without ``n_ctx``) leaves the size unknown, with the reason, never an error.
        """
        if self.n_ctx is not None:
            return self.n_ctx, "set by the judge option n_ctx"
        if self._props_url is None:
            return None, "context size unknown: the OpenAI API does not report it (set --judge-opt n_ctx=N)"
        where = public_url(self._props_url)
        try:
            async with asyncio.timeout(PROPS_TIMEOUT_S):  # the whole look-up (the socket's bounds each read)
                props = await asyncio.to_thread(_get_json, self._props_url, PROPS_TIMEOUT_S)
        except Exception as exc:  # anything: a run never fails on this look-up
            reason = (f"HTTP {exc.code}" if isinstance(exc, urllib.error.HTTPError)
                      else f"no answer within {PROPS_TIMEOUT_S:g} s" if isinstance(exc, TimeoutError)
                      else self.redacted(str(getattr(exc, "reason", None) or exc))[:200])
            return None, f"context size unknown: GET {where} failed ({reason}); set --judge-opt n_ctx=N"
        n_ctx = props_context(props)
        if n_ctx is None:
            return None, f"context size unknown: GET {where} gave no n_ctx; set --judge-opt n_ctx=N"
        return n_ctx, f"the llama.cpp server's /props ({where}: n_ctx per slot)"

    @property
    def client(self) -> Any:
        """The SDK client (``openai.AsyncOpenAI``) of the running loop, for the batch API (assay.judges.batch)."""
        return self._client_now()

    def redacted(self, text: str) -> str:
        """``text`` with this judge's key and endpoint credentials redacted (for errors from other endpoints)."""
        return redact(text, self._secrets)

    def plan_concurrency(self, calls: int) -> None:
        """Size the connection pool to the calls the middleware lets into flight at once.

        A pool smaller than the concurrency makes calls queue for a connection; a keep-alive limit
        below it (the SDK's default keeps 100) closes and reopens connections on every call at higher
        concurrency. It takes effect when the client is built (the first call in an event loop).
        """
        self._pool = max(self._pool, calls)

    def runtime(self) -> dict[str, Any]:
        """How calls travel (recorded in the manifest and by ``assay judges``; no part of the identity)."""
        out: dict[str, Any] = {"transport": self._transport, "pool": self._pool}
        if self._transport_note:
            out["transport_note"] = self._transport_note
        return out

    async def aclose(self) -> None:
        """Close the connection pool (built in this loop; one of an ended loop is dropped with it)."""
        client, session, self._client, self._session = self._client, self._session, None, None
        loop = asyncio.get_running_loop()
        if client is not None and self._client_loop is loop:
            await client.close()  # closes the shared session through the SDK's aiohttp transport
        if session is not None and self._session_loop is loop:
            await session.close()

    @property
    def _openai(self) -> Any:
        """The SDK, imported when first needed (the batch API, the httpx fallback, an https session's TLS
        settings): it takes longer to import than the rest of a run's start, and chats over aiohttp never use it."""
        import openai

        return openai

    def _session_now(self) -> Any:
        """The aiohttp session of the running loop for the hot path, with a pool of ``self._pool`` connections.

        An aiohttp session belongs to the loop that opened it, so a judge reused by a later ``asyncio.run``
        (``assay.evaluate`` twice) gets a new one there. A plain-http endpoint's session is built without the
        SDK; an https one comes with the SDK client (:meth:`_client_now`), for the SDK's TLS settings.
        """
        loop = asyncio.get_running_loop()
        if self._session is None or self._session_loop is not loop:
            if urlsplit(self._chat_url).scheme == "https":
                self._client_now()
            else:
                self._session = aiohttp_session(self._pool, self._connect["timeout"], KEEPALIVE_S)
                self._proxy = env_proxy(self._chat_url)
                self._session_loop = loop
        return self._session

    def _client_now(self) -> Any:
        """The SDK client of the running loop: built on first use, with a pool of ``self._pool`` connections.

        Like the session, it belongs to the loop that built it. On aiohttp the client is built around the
        judge's own session (the one chat calls use, made here if there is none yet), so that chat calls and
        the batch API share one pool.
        """
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            from openai._constants import DEFAULT_CONNECTION_LIMITS  # its type is httpx's Limits, whichever httpx

            oa = self._openai
            limits = type(DEFAULT_CONNECTION_LIMITS)(max_connections=self._pool, max_keepalive_connections=self._pool)
            timeout = self._connect["timeout"]
            if self._transport == "aiohttp":
                from openai._vendor.httpx_aiohttp.transport import AiohttpTransport  # the SDK's own transport

                transport = AiohttpTransport(limits=limits)  # its TLS context: the SDK's defaults
                if self._session is None or self._session_loop is not loop:
                    self._session = aiohttp_session(self._pool, timeout, limits.keepalive_expiry,
                                                    transport.ssl_context)
                    self._proxy = env_proxy(self._chat_url)
                    self._session_loop = loop
                transport.client = self._session
                http = oa.DefaultAioHttpClient(transport=transport, timeout=timeout)
            else:
                self._session = None
                http = oa.DefaultAsyncHttpxClient(limits=limits, timeout=timeout)
            self._client = oa.AsyncOpenAI(**self._connect, http_client=http)
            self._client_loop = loop
        return self._client

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

    async def detect_schema(self, known: bool | None = None, *,
                            send: Callable[[Request], Awaitable[Response]] | None = None) -> bool:
        """Ask the endpoint once whether it enforces a JSON schema; remember the answer and why.

        The probe asks for a word while its schema allows only ``{"answer": "schema"}``: an endpoint that
        enforces the schema answers that object, one that ignores it answers the word (or other JSON). A refusal
        (HTTP 400 or 422: the field is unknown to it) is a definitive no; a transient failure is retried by
        ``send`` and, if it never clears, raised, as for :meth:`detect_logprobs`.

        Args:
            known: An answer recorded earlier (a resumed run), adopted without a call.
            send: How to send the probe (the middleware's retry policy); default one bare call.

        Raises:
            JudgeError: The probe got no definitive answer (retries ran out) or a fatal error other than a refusal.
        """
        if known is not None and not self._schema_probed:
            self.supports_schema, self._schema_probed = known, True
            self.schema_reason = "as recorded by the run being resumed"
        if self._schema_probed:
            return self.supports_schema
        request = Request.chat("Reply with the single word: hello", max_tokens=16, json_schema=PROBE_SCHEMA)
        try:
            resp = await (send or self.generate)(request)
        except FatalJudgeError as exc:
            if getattr(exc.__cause__, "status_code", None) not in (400, 422):
                raise
            self.supports_schema = False
            self.schema_reason = f"probe: the endpoint refused a JSON schema ({exc})"
        except JudgeError as exc:
            raise JudgeError(f"{self.identity.label}: the JSON-schema probe got no answer ({exc}); retry later, "
                             "or skip the probe with --judge-opt schema=true|false (or --answer-format free)") from exc
        else:
            self.supports_schema = probe_obeyed(resp.text)
            self.schema_reason = ("probe: the endpoint answered in the schema" if self.supports_schema else
                                  f"probe: the endpoint ignored the schema (it answered {resp.text[:60]!r})")
        self._schema_probed = True
        return self.supports_schema

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
        if request.json_schema and self._schema_field == "format":
            body["format"] = json.loads(request.json_schema)  # Ollama: the schema itself
        elif request.json_schema and self._schema_field == "json_object":
            body["response_format"] = {"type": "json_object", "schema": json.loads(request.json_schema)}
        elif request.json_schema:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "answer", "schema": json.loads(request.json_schema)}}
        elif request.json_mode:
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
        start = time.perf_counter()
        if self._transport != "aiohttp":
            raw = await self._post_sdk(self._client_now(), self.payload(request))
        else:
            self._session_now()
            raw = await self._post_direct(jsontext.dumps(self.payload(request), ensure_ascii=True).encode())
        return to_response(raw, time.perf_counter() - start, self._where)

    async def _post_direct(self, body: bytes) -> Any:
        """POST a serialised body over the judge's aiohttp session; the answer's JSON, or a classified error."""
        import aiohttp

        try:
            async with self._session.post(self._chat_url, data=body, headers=self._headers,
                                          proxy=self._proxy[0], proxy_auth=self._proxy[1]) as resp:
                data = await resp.read()
                if not 200 <= resp.status < 300:
                    raise status_error(resp.status, resp.headers, data.decode("utf-8", "replace"),
                                       self.identity.label, self._where)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._connection_error(exc) from exc
        try:
            return jsontext.loads(data)
        except ValueError as exc:  # not JSON at all (a proxy's HTML page, a truncated body)
            raise TransientJudgeError(f"malformed response body from {self._where}: {exc}; "
                                      f"body starts {data[:120]!r}") from exc

    async def _post_sdk(self, client: Any, body: dict[str, Any]) -> Any:
        """The fallback without aiohttp: the SDK's generic post on httpx, its errors classified alike."""
        oa = self._openai
        try:
            return await client.post("/chat/completions", body=body, cast_to=object)
        except oa.APIStatusError as exc:
            raise status_error(exc.status_code, exc.response.headers, exc.response.text,
                               self.identity.label, self._where) from exc
        except oa.APIConnectionError as exc:  # APITimeoutError included
            raise self._connection_error(exc) from exc
        except ValueError as exc:  # body that is not JSON at all
            raise TransientJudgeError(f"malformed response body from {self._where}: {exc}") from exc

    def _connection_error(self, exc: BaseException) -> TransientJudgeError:
        reason = connection_reason(exc)
        if reason.startswith("timed out waiting"):
            return TransientJudgeError(f"request to {self._where} {reason}")
        if reason.startswith(REFUSED):
            return RefusedJudgeError(f"cannot reach {self._where}: {reason}")
        return TransientJudgeError(f"cannot reach {self._where}: {reason}")


#: The schema of the capability probe: one field whose only value no judge would write unasked.
PROBE_SCHEMA = '{"type":"object","properties":{"answer":{"type":"string","enum":["schema"]}},' \
               '"required":["answer"],"additionalProperties":false}'


def probe_obeyed(text: str) -> bool:
    """Whether the probe's answer is exactly the object its schema allows (whitespace aside)."""
    try:
        return json.loads(text) == {"answer": "schema"}
    except ValueError:
        return False


class HTTPStatusError(Exception):
    """A non-2xx answer, kept as the cause of the judge error it became (:func:`refuses_logprobs` reads it)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code


#: What an error body says when the request itself, not the run's settings, was refused: its prompt is too long
#: for the context (OpenAI's ``context_length_exceeded``, vLLM's "maximum context length", llama.cpp's
#: ``exceed_context_size_error``), or a content filter refused it (OpenAI, Azure's ``content_filter``).
_REQUEST_SPECIFIC = re.compile(
    r"context[_ ]length|context[_ ]size|context window|maximum context|prompt is too long|too many (?:input )?tokens"
    r"|string too long|exceeds? (?:the )?(?:available |maximum )?(?:context|token|length)|content[_ ]filter"
    r"|content (?:management )?policy|responsible ?ai|safety system|flagged|invalid[_ ]prompt", re.IGNORECASE)


def request_specific(status: int, body: str) -> bool:
    """Whether a 4xx refuses this request only (pure): HTTP 413, or a 400/422 whose body (message or code)
    names the prompt's length or a content filter. A refusal of log-probabilities, a parameter, the key or
    the model is the same for every request of the run, so it is no such refusal."""
    if status == 413:
        return True
    return status in (400, 422) and "logprob" not in body.lower() and bool(_REQUEST_SPECIFIC.search(body))


def status_error(status: int, headers: Mapping[str, str], body: str, label: str, where: str) -> JudgeError:
    """The judge error for a non-2xx answer (pure): 408, 409, 429 and 5xx are transient; a refusal of this
    request's prompt (:func:`request_specific`) fails its unit only; the rest (key, model, parameters) is fatal.

    A transient error carries the wait the server asked for (Retry-After, retry-after-ms); the others
    the server's own message, so the user sees why a request was rejected.
    """
    message = server_message(body)
    cause = HTTPStatusError(status, message)
    if status == 429:
        err: JudgeError = TransientJudgeError(f"rate limited (HTTP 429): {message}",
                                              retry_after=retry_after_seconds(headers))
    elif status >= 500 or status in (408, 409):
        err = TransientJudgeError(f"server error HTTP {status} from {where}", retry_after=retry_after_seconds(headers))
    elif status in (401, 403):
        err = FatalJudgeError(f"{label}: the endpoint refused the credentials (HTTP {status}); check OPENAI_API_KEY")
    elif status == 404:
        err = FatalJudgeError(f"{label}: model or endpoint not found (HTTP 404) at {where}: {message}")
    elif request_specific(status, body):
        err = RequestJudgeError(f"{label}: this request was rejected (HTTP {status}): {message}")
    else:
        err = FatalJudgeError(f"{label}: request rejected (HTTP {status}): {message}")
    err.__cause__ = cause
    return err


def server_message(body: str) -> str:
    """The error message in an error body (``{"error": {"message": ...}}`` or ``{"message": ...}``), else its start."""
    try:
        obj = json.loads(body)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        inner = obj.get("error", obj)
        found = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(found, str) and found:
            return found.splitlines()[0][:300]
    text = body.strip()
    return text.splitlines()[0][:300] if text else "(empty body)"


#: Seconds the context-size look-up (``GET /props``) may take, once per run.
PROPS_TIMEOUT_S = 3.0


def props_url(base_url: str) -> str:
    """A llama.cpp server's ``/props`` URL: at the server's root, above the OpenAI-compatible ``/v1`` (a path
    prefix before it, as behind a reverse proxy, is kept; the query string is dropped)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    root = path[: -len("/v1")] if path.endswith("/v1") else path
    return urlunsplit((parts.scheme, parts.netloc, root + "/props", "", ""))


def props_context(props: Any) -> int | None:
    """The context size of one request in a llama.cpp server's ``/props`` answer: ``default_generation_settings.n_ctx``
    (a slot's context, what one request gets), else a top-level ``n_ctx``; None when neither is a positive integer."""
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    for value in ((settings or {}).get("n_ctx") if isinstance(settings, dict) else None, props.get("n_ctx")):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # a redirect is an answer without n_ctx
        return None


def _get_json(url: str, timeout: float) -> Any:
    """``GET url`` without credentials or redirects (blocking: run in a thread), its JSON body."""
    opener = urllib.request.build_opener(_NoRedirect)
    with opener.open(urllib.request.Request(url, headers={"Accept": "application/json"}), timeout=timeout) as resp:
        return json.loads(resp.read(1 << 20))


def chat_url(base_url: str) -> str:
    """The chat-completions URL under an endpoint, its query string (``?api-version=...``) kept."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/chat/completions", parts.query, ""))


def aiohttp_session(pool: int, timeout: float, keepalive_s: float | None, tls: ssl.SSLContext | bool = True) -> Any:
    """One aiohttp session for a judge in one event loop: ``pool`` kept-alive connections, the SDK's timeouts.

    Like the SDK's transport, the timeout bounds the wait for a free connection, the connect and each
    read (not the whole answer). Connections are kept alive between calls (``keepalive_s``, the SDK's
    expiry) and their sockets carry TCP keep-alive (:func:`keepalive_socket`). No ``trust_env``: it costs
    two thread-pool hops per request (netrc and proxy look-ups); the proxy is looked up once instead
    (:func:`env_proxy`).
    """
    import aiohttp

    connector = aiohttp.TCPConnector(limit=pool, limit_per_host=0, keepalive_timeout=keepalive_s or 15.0, ssl=tls,
                                     socket_factory=keepalive_socket)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None, connect=timeout, sock_connect=timeout, sock_read=timeout))


def keepalive_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """A client socket with TCP keep-alive on, for aiohttp's ``socket_factory``.

    A long answer (a reasoning model's minutes) leaves the connection silent; keep-alive probes keep
    NAT and firewall state alive and let the OS notice a peer that vanished, rather than wait for the timeout.
    """
    family, kind, proto = addr_info[:3]
    sock = socket.socket(family=family, type=kind, proto=proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return sock


def env_proxy(url: str) -> tuple[Any, Any]:
    """The proxy HTTP(S)_PROXY / NO_PROXY name for ``url``, and its credentials; ``(None, None)`` for none.

    The SDK's clients honour these variables (httpx's ``trust_env``), so the hot path does too.
    """
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None


def aiohttp_installed() -> bool:
    """Whether aiohttp can be imported (``openai[aiohttp]``, a core dependency), asked without importing it."""
    return importlib.util.find_spec("aiohttp") is not None


def http_transport() -> tuple[str, str | None]:
    """Which HTTP transport chat calls take, and why not the fast one when it is not.

    Chat calls go over the judge's own aiohttp session, which spends a fraction of the CPU per call of the
    SDK's default httpx transport, whose pool bookkeeping dominates at concurrency 128 and more
    (benchmarks/http_overhead.py). Without aiohttp they go through the SDK on httpx, said so in the judge's
    runtime record.
    """
    if not aiohttp_installed():
        return "httpx", ("aiohttp is not installed; calls use the SDK on httpx, slower at high concurrency: "
                         "pip install 'openai[aiohttp]'")
    return "aiohttp", None


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


def url_credentials(url: str | None) -> tuple[str | None, dict[str, str]]:
    """The endpoint without ``user:password@``, and those credentials as a Basic Authorization header.

    httpx turned a URL's credentials into Basic auth in place of the bearer key; aiohttp refuses a URL
    with credentials beside an Authorization header. Sending the header ourselves keeps the one behaviour
    on both transports.
    """
    if url is None:
        return None, {}
    parts = urlsplit(url)
    if parts.username is None:
        return url, {}
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    netloc = parts.netloc.rsplit("@", 1)[1]
    plain = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return plain, {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}


def secrets_of(key: str | None, base_url: str | None) -> list[str]:
    """What must never be shown: the key, and credentials or query values carried by the endpoint URL."""
    out = [key] if key else []
    if base_url:
        parts = urlsplit(base_url)
        out += [p for p in (parts.password, parts.username if parts.password else None) if p]
        out += [v for _, v in parse_qsl(parts.query)]
    return [s for s in out if len(s) >= _MIN_SECRET]


_MIN_SECRET = 8  # shorter strings are no real key, and replacing them would garble messages
_TOKEN = re.compile(r"(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}|\bsk-[A-Za-z0-9_-]{8,}")


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with each secret, and anything that looks like a bearer or Basic token or an ``sk-`` key, redacted.

    A URL's ``user:password`` travels as a Basic Authorization header (:func:`url_credentials`), which a
    server may echo in an error body.
    """
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return _TOKEN.sub(lambda m: (m.group(1) or "") + "[redacted]", text)


REFUSED = "connection refused"


def _cut_short(err: BaseException) -> str | None:
    """What an answer cut short means, from aiohttp's payload errors (whose own words are a parser's), or None."""
    name, text = type(err).__name__, str(err)
    if name == "ContentLengthError" or "content length" in text.lower():
        return ("the server closed the connection mid-answer: the body was shorter than its Content-Length "
                "(a server or proxy that crashed or timed out while sending)")
    if name == "TransferEncodingError" or "payload is not completed" in text.lower():
        return "the server closed the connection mid-answer: the chunked body ended before its last chunk"
    if name == "ServerDisconnectedError":
        return "the server closed the connection without answering"
    return None


def connection_reason(exc: BaseException) -> str:
    """Why a connection failed, from the chain of errors under the SDK's generic ``Connection error.``.

    The innermost error that says something decides: the SDK's aiohttp transport maps every aiohttp
    connection error (refused, reset, closed by the server) to httpx's ``ConnectTimeout``, so the outer
    errors' names would call a refused connection a timeout.
    """
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for err in reversed(chain):
        if isinstance(err, ConnectionRefusedError):
            return f"{REFUSED} (is the server running, on that port?)"
        if (cut := _cut_short(err)) is not None:
            return cut
        if isinstance(err, socket.gaierror):
            return f"host name not found (DNS: {err.strerror or err})"
        if isinstance(err, ssl.SSLError):
            return f"TLS error ({err})"
        name = type(err).__name__
        if "ConnectTimeout" in name or "ConnectionTimeout" in name:
            return "timed out while connecting (is the host up, and the port open?)"
        if isinstance(err, TimeoutError) or "Timeout" in name:
            return "timed out waiting for the answer"
        if isinstance(err, ConnectionError) or "Disconnected" in name or "RemoteProtocol" in name:
            return f"connection failed ({err or name})"
    detail = next((str(e) for e in reversed(chain) if str(e)), "")
    return f"connection failed ({detail})" if detail else "connection failed"


def to_response(raw: Any, latency: float, where: str = "the endpoint") -> Response:
    """A chat.completion JSON object as a Response; anything else is a malformed answer from ``where``.

    A missing field or one of the wrong type (a log-probability that is no number) is such an answer too, named
    by its path (``choices.0.logprobs.0.logprob: Input should be a valid number``): retried like any transient
    failure, never a validation traceback.
    """
    if not isinstance(raw, dict) or not raw.get("choices"):
        raise TransientJudgeError(f"malformed response from {where}: no choices in {str(raw)[:200]!r}")
    try:
        choices = []
        for ch in raw["choices"]:
            content = (ch.get("logprobs") or {}).get("content")
            lp = [{"token": t["token"], "logprob": t["logprob"],
                   "top": [(a["token"], a["logprob"]) for a in t.get("top_logprobs") or []]}
                  for t in content] if content else None
            choices.append({"text": (ch.get("message") or {}).get("content") or "", "logprobs": lp,
                            "finish_reason": ch.get("finish_reason")})
        usage = raw.get("usage") or {}
        prompt = usage.get("prompt_tokens") or 0
        return Response.model_validate({
            "choices": choices, "prompt_tokens": prompt, "completion_tokens": usage.get("completion_tokens") or 0,
            "cached_prompt_tokens": cached_tokens(raw, prompt), "latency_s": latency, "model": raw.get("model") or "",
        })
    except (KeyError, TypeError, AttributeError, ValidationError) as exc:
        raise TransientJudgeError(f"malformed response from {where}: {_first_line(exc)}") from exc


def _first_line(exc: Exception) -> str:
    """An exception in a few words: a validation error's first problem (field and message), else its repr."""
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}"
    return repr(exc)


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
