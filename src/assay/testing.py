"""A scripted OpenAI-compatible HTTP server on loopback, for testing and benchmarking the HTTP judge path.

It answers ``POST /v1/chat/completions`` and ``GET /v1/models``. Each request is answered by
the next scripted behaviour (or the default one): a normal answer, an HTTP error with optional
Retry-After, a slow answer, a dropped connection, a malformed body, an echo of the prompt, or an
answer that varies with how often the same prompt was asked (a nondeterministic judge, made
deterministic for tests). Every request it
receives is logged (with its body and its Authorization header), and optionally appended to a JSONL file so that another
process can see what was asked.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import InputError
from assay.probe.injections import INJECTION_MODES, Injection, inject, load_injections  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from assay.datasets import Dataset


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many concurrent clients connect at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (killed on purpose in tests) is not an error worth printing."""
        return


@dataclass
class Behaviour:
    """How to answer one request.

    Attributes:
        kind: "ok", "error", "slow", "drop" (close the connection without answering), "malformed",
            "echo" (the answer is the request's last user message, after ``text`` as a prefix) or
            "varying" (the answer is ``vary(prompt, k)``, k being how many times that prompt was
            asked before: a second identical call gets another answer, as from a sampling server).
        status: HTTP status for "error".
        retry_after: Retry-After header value for "error".
        delay_s: Wait before answering ("ok", "slow", "echo", "varying").
        text: Answer text for "ok" (a function of the request body is also accepted); the prefix for "echo".
        message: The error message for "error" (default ``scripted STATUS``).
        choices: Answer with at most this many choices whatever ``n`` asks (servers that cap n).
        vary: The answer function for "varying".
        fields: Top-level fields to put in (or replace in) the answer object, e.g. a ``usage`` with
            ``prompt_tokens_details`` or llama.cpp's ``timings``, as servers that report cached tokens send.
    """

    kind: str = "ok"
    status: int = 200
    retry_after: float | None = None
    delay_s: float = 0.0
    text: str | Callable[[dict[str, Any]], str] = "3"
    message: str | None = None
    choices: int | None = None
    vary: Callable[[str, int], str] = field(default_factory=lambda: varying_answer)
    fields: dict[str, Any] = field(default_factory=dict)


def prompt_of(body: dict[str, Any]) -> str:
    """The last user message of a chat-completions request body: the prompt a method wrote."""
    users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""


def varying_answer(prompt: str, k: int) -> str:
    """A well-formed answer that is a function of the prompt and of k, the times it was asked before.

    A checklist prompt (lines ``Qn: question``) gets a yes/no per question, any other prompt a
    rating from 1 to 3 (on every Likert scale of the bundled datasets). Different k give different
    answers for most prompts, so a call paid twice shows up as a changed judgment.
    """
    digest = hashlib.sha256(f"{k}\0{prompt}".encode()).digest()
    questions = re.findall(r"^Q(\d+): ", prompt, re.MULTILINE)
    if questions:
        return "\n".join(f"Q{q}: {'yes' if digest[i % 32] % 2 else 'no'}" for i, q in enumerate(questions))
    return str(1 + digest[0] % 3)


_FACTS_INTRO = "You will rewrite a text as a list of monadic facts."


def _fenced(prompt: str, label: str) -> str:
    found = re.search(rf"<<<{label}>>>\n(.*?)\n<<<END {label}>>>", prompt, re.S)
    return found.group(1) if found else ""


def formatted_answer(request: Any) -> str:
    """A well-formed answer to any shipped method's prompt (for a scripted judge), so that every method takes
    its full path: SEAL's facts are the text's sentences, its support and relevance lists name the first
    source fact, other SEAL answers copy the prompt's own example, and anything else gets
    :func:`varying_answer` (a checklist's yes/no lines, a rating). Its content says nothing about the texts.

    Args:
        request: A :class:`assay.judges.base.Request`.
    """
    from assay.methods.seal.units import split_sentences

    prompt = request.messages[0].content
    if prompt.startswith(_FACTS_INTRO):
        label = re.search(r"<<<([A-Z ]+)>>>", prompt)
        return json.dumps({"facts": split_sentences(_fenced(prompt, label.group(1) if label else ""))})
    n = len(re.findall(r"^s\d+: ", _fenced(prompt, "SUMMARY FACTS"), re.M))
    if '"supporting source facts"' in prompt:
        return json.dumps({"supporting source facts": [["c1"]] * n})
    if '"relevant summary facts"' in prompt:
        return json.dumps({"relevant summary facts": ",".join("1" * n)})
    example = re.findall(r"Example: (.*)", request.messages[-1].content)
    return example[-1] if example else varying_answer(request.messages[-1].content, 0)


@dataclass
class FakeOpenAIServer:
    """A threaded loopback server; use as a context manager, read ``url``, ``requests`` and ``auth``.

    ``auth`` holds the Authorization header of every POST, so that tests can check which
    key a client actually sent; ``asked`` counts the POSTs per prompt. With ``logprobs=False`` no
    answer carries log-probabilities, as from a server without them, so that every method takes
    its path for such judges.
    """

    default: Behaviour = field(default_factory=Behaviour)
    log_path: Path | None = None
    script: deque[Behaviour] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    asked: Counter[str] = field(default_factory=Counter)
    logprobs: bool = True
    port: int = 0
    #: A function of the request body choosing its behaviour (None: the script, then the default), so that a
    #: test can fail some prompts and answer others whatever order concurrent requests arrive in.
    route: Callable[[dict[str, Any]], Behaviour | None] | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # headers and body leave in one write: no Nagle delay between them

            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def do_GET(self) -> None:
                self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                prompt = prompt_of(body)
                with server._lock:
                    server.requests.append(body)
                    server.auth.append(self.headers.get("authorization"))
                    routed = server.route(body) if server.route is not None else None
                    behaviour = routed or (server.script.popleft() if server.script else server.default)
                    asked_before = server.asked[prompt]
                    server.asked[prompt] += 1
                if behaviour.kind == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if behaviour.delay_s:
                    time.sleep(behaviour.delay_s)
                if behaviour.kind == "error":
                    headers = {"retry-after": str(behaviour.retry_after)} if behaviour.retry_after is not None else {}
                    message = behaviour.message or f"scripted {behaviour.status}"
                    self._json(behaviour.status, {"error": {"message": message}}, headers)
                    return
                if behaviour.kind == "malformed":
                    self._raw(200, b"{not json", "application/json")
                    return
                if behaviour.kind == "varying":
                    text = behaviour.vary(prompt, asked_before)
                elif callable(behaviour.text):
                    text = behaviour.text(body)
                else:
                    text = behaviour.text + prompt if behaviour.kind == "echo" else behaviour.text
                answer = completion(body, text, logprobs=server.logprobs)
                if behaviour.choices is not None:
                    answer["choices"] = answer["choices"][:behaviour.choices]
                answer.update(behaviour.fields)
                self._json(200, answer)
                if server.log_path is not None:
                    with server._lock, server.log_path.open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(body) + "\n")

            def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                self._raw(status, json.dumps(obj).encode(), "application/json", headers)

            def _raw(self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

        self._server = _Server(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def enqueue(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self.script.extend(behaviours)


def completion(body: dict[str, Any], text: str, *, logprobs: bool = True) -> dict[str, Any]:
    """A chat.completion object answering ``text`` (with one-token logprobs when asked and ``logprobs``)."""
    n = int(body.get("n", 1))
    top = None
    if logprobs and body.get("logprobs"):
        k = int(body.get("top_logprobs") or 0)
        alts = [{"token": text, "logprob": -0.1, "bytes": None}] + [
            {"token": f"alt{i}", "logprob": -3.0 - i, "bytes": None} for i in range(max(0, k - 1))]
        top = {"content": [{"token": text, "logprob": -0.1, "bytes": None, "top_logprobs": alts[:k]}]}
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [{"index": i, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop", "logprobs": top} for i in range(n)],
        "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n},
    }


def injected_dataset(dataset: Dataset, cases: list[Injection], *, clean: bool = False) -> Dataset:
    """The dataset narrowed to the corpus's injected samples (and, with ``clean``, their bases first).

    Raises:
        InputError: An entry whose base sample the dataset does not have.
    """
    by_id = {s.id: s for s in dataset.all_samples}
    missing = [c for c in cases if c.base not in by_id]
    if missing:
        raise InputError(f"no sample {missing[0].base!r} in dataset {dataset.name!r}", record=missing[0].id,
                         field="base")
    bases = list(dict.fromkeys(c.base for c in cases)) if clean else []
    samples = [by_id[b] for b in bases] + [inject(by_id[c.base], c) for c in cases]
    return replace(dataset, samples=samples, pool=dataset.all_samples)


def serve_forever(delay_s: float, port: int) -> None:
    """Run a fake server in the foreground (``python -m assay.testing DELAY PORT``), for benchmarks."""
    srv = FakeOpenAIServer(default=Behaviour(delay_s=delay_s), port=port)
    print(f"listening on {srv.url}", flush=True)
    srv._server.serve_forever()


if __name__ == "__main__":
    import sys

    serve_forever(float(sys.argv[1]), int(sys.argv[2]))
