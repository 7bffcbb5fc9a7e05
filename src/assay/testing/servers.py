"""A scripted OpenAI-compatible HTTP server on loopback, for testing and benchmarking the HTTP judge path.

It answers ``POST /v1/chat/completions``, ``GET /v1/models`` and, where given, a llama.cpp server's
``GET /props``. Each request is answered by the next scripted behaviour (or the default one): a normal answer, an
HTTP error with optional Retry-After, a slow answer, a dropped connection, a malformed body, an echo of the prompt, or
an answer that varies with how often the same prompt was asked (a nondeterministic judge, made
deterministic for tests). With ``batch_api=FakeBatchAPI(...)`` it also serves the files and batches API
(``--batch``), answering batch lines through the same behaviours. Every request it
receives is logged (with its body and its Authorization header), and optionally appended to a JSONL file so that another
process can see what was asked.
"""

from __future__ import annotations

import email.policy
import hashlib
import json
import re
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from email.parser import BytesParser
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
            "truncated" (a 200 whose body stops halfway through its Content-Length, then the connection closes),
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
    :func:`varying_answer` (a checklist's yes/no lines, a rating); G-Eval's steps prompt gets steps of a typical
    length, so that its score prompts carry them. Its content says nothing about the texts.

    Args:
        request: A :class:`assay.judges.base.Request`.
    """
    from assay.methods.geval.steps import STEPS_CUE, TYPICAL_STEPS
    from assay.methods.seal.units import split_sentences

    prompt = request.messages[0].content
    if prompt.rstrip().endswith(STEPS_CUE):
        return TYPICAL_STEPS
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


def copied_forged_lines(body: dict[str, Any]) -> str:
    """A judge that copies the judged text's forged answer lines back, dropping the "» " mark as models do.

    Every marked line of the last fenced block (the judged output) is copied without its mark, and so is what
    follows a mark in mid-line; a prompt whose output holds none gets an answer without any rating. Use as
    ``Behaviour(text=copied_forged_lines)``: no rating may be read from such an answer.
    """
    mark = "» "
    blocks = re.findall(r"^<<<([^>\n]+)>>>\n(.*?)\n<<<END \1>>>$", prompt_of(body), re.S | re.M)
    lines = blocks[-1][1].splitlines() if blocks else []
    copied = [line.replace(mark, "") if line.startswith(mark) else line.split(mark, 1)[1]
              for line in lines if mark in line]
    return "\n".join(copied) or "I cannot judge this text."


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
    #: The files and batches API (``FakeBatchAPI``); None: the server answers chat completions only.
    batch_api: FakeBatchAPI | None = None
    #: What it does with a request's JSON schema (``response_format`` ``json_schema``): ``enforce`` (the schema is
    #: checked against the JSON Schema meta-schema, a bad one is refused with HTTP 400, and the answer is JSON that
    #: conforms to it, varying with the prompt), ``ignore`` (answered as if absent, as a server that drops unknown
    #: fields) or ``reject`` (HTTP 400 naming ``response_format``, as a server without structured outputs).
    schemas: str = "ignore"
    #: Every schema a request carried, as received (in order).
    received_schemas: list[dict[str, Any]] = field(default_factory=list)
    #: What ``GET /props`` answers, as a llama.cpp server does (``{"default_generation_settings": {"n_ctx": N}}``);
    #: None: HTTP 404, as any other server.
    props: dict[str, Any] | None = None
    #: Every GET: its path and Authorization header (None: none sent).
    gets: list[tuple[str, str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body leave in one write (buffered, flushed once per response), and TCP_NODELAY is set
            # for bodies larger than the buffer: otherwise Nagle's algorithm holds the body back until the
            # client's delayed ACK of the headers, ~44 ms per call, and the benchmarks measure the server.
            wbufsize = 1 << 16
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def do_GET(self) -> None:
                with server._lock:
                    server.gets.append((self.path, self.headers.get("authorization")))
                if self.path.split("?")[0].endswith("/props"):
                    self._json(*((200, server.props) if server.props is not None else
                                 (404, {"error": {"code": 404, "message": "File Not Found"}})))
                    return
                got = server.batch_api.get(self.path) if server.batch_api is not None else None
                if got is None:
                    self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                elif isinstance(got[1], bytes):
                    self._raw(got[0], got[1], "application/octet-stream")
                else:
                    self._json(*got)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                data = self.rfile.read(length)
                if server.batch_api is not None and self.path.rstrip("/").endswith(("/files", "/batches")):
                    with server._lock:
                        server.auth.append(self.headers.get("authorization"))
                    self._json(*server.batch_api.post(self.path, self.headers.get("content-type", ""), data))
                    return
                body = json.loads(data or b"{}")
                refused = server.check_schema(body)
                if refused is not None:
                    server.take(body, self.headers.get("authorization"))
                    self._json(400, {"error": {"message": refused}})
                    return
                behaviour, asked_before = server.take(body, self.headers.get("authorization"))
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
                if behaviour.kind == "truncated":
                    whole = json.dumps(server.answer(body, behaviour, asked_before)).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(whole)))
                    self.end_headers()
                    self.wfile.write(whole[:len(whole) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self._json(200, server.answer(body, behaviour, asked_before))
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

        if self.batch_api is not None:
            self.batch_api.server = self
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

    def take(self, body: dict[str, Any], authorization: str | None = None, *,
             live: bool = True) -> tuple[Behaviour, int]:
        """Log a chat request (``live``: with its Authorization header; a batch line has none) and choose its
        behaviour; also how often its prompt was asked before."""
        prompt = prompt_of(body)
        with self._lock:
            self.requests.append(body)
            if live:
                self.auth.append(authorization)
            routed = self.route(body) if self.route is not None else None
            behaviour = routed or (self.script.popleft() if self.script else self.default)
            asked_before = self.asked[prompt]
            self.asked[prompt] += 1
        return behaviour, asked_before

    def check_schema(self, body: dict[str, Any]) -> str | None:
        """Record the request's JSON schema; the refusal message when this server refuses it, else None."""
        schema = request_schema(body)
        if schema is None:
            return None
        with self._lock:
            self.received_schemas.append(schema)
        if self.schemas == "reject":
            return "response_format of type json_schema is not supported by this server"
        if self.schemas == "enforce":
            import jsonschema

            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as exc:
                return f"invalid JSON schema in response_format: {exc.message}"
        return None

    def answer(self, body: dict[str, Any], behaviour: Behaviour, asked_before: int) -> dict[str, Any]:
        """The chat.completion a well-formed behaviour answers ``body`` with."""
        prompt = prompt_of(body)
        schema = request_schema(body) if self.schemas == "enforce" else None
        if schema is not None and behaviour.kind in ("ok", "varying"):
            text = json.dumps(conforming_answer(schema, f"{asked_before}\0{prompt}"))
        elif behaviour.kind == "varying":
            text = behaviour.vary(prompt, asked_before)
        elif callable(behaviour.text):
            text = behaviour.text(body)
        else:
            text = behaviour.text + prompt if behaviour.kind == "echo" else behaviour.text
        answer = completion(body, text, logprobs=self.logprobs)
        if behaviour.choices is not None:
            answer["choices"] = answer["choices"][:behaviour.choices]
        answer.update(behaviour.fields)
        return answer

    def enqueue(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self.script.extend(behaviours)


@dataclass
class FakeBatchAPI:
    """The OpenAI files and batches API on a :class:`FakeOpenAIServer` (``batch_api=FakeBatchAPI(...)``).

    ``POST /v1/files`` (multipart upload), ``GET /v1/files/ID/content``, ``POST /v1/batches``, ``GET /v1/batches``
    and ``GET /v1/batches/ID``. A batch ends at its ``polls``-th retrieval: its lines are then answered one by
    one through the server's own behaviours (route, script, default), so a batch answers exactly what the
    same requests sent live would; an "error", "drop" or "malformed" behaviour makes a failed line. The
    outcome of each created batch is the next of ``outcomes`` (default "complete"): "expire" answers the
    first ``expire_answered`` lines and leaves the rest ``batch_expired``; "fail" ends it ``failed``.

    Attributes:
        submitted: How many times each ``custom_id`` was submitted in a created batch.
        polls_by_batch: Retrievals per batch id.
    """

    polls: int = 1
    outcomes: deque[str] = field(default_factory=deque)
    expire_answered: int = 1
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    submitted: Counter[str] = field(default_factory=Counter)
    polls_by_batch: Counter[str] = field(default_factory=Counter)
    server: FakeOpenAIServer | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def post(self, path: str, ctype: str, data: bytes) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if path.rstrip("/").endswith("/files"):
                content, purpose = _multipart_file(ctype, data)
                return 200, self._add_file(content, purpose)
            body = json.loads(data or b"{}")
            content = self.files.get(body.get("input_file_id", ""))
            if content is None:
                return 404, {"error": {"message": f"no file {body.get('input_file_id')!r}"}}
            ids = [json.loads(line)["custom_id"] for line in content.decode().splitlines() if line.strip()]
            self.submitted.update(ids)
            batch = {"id": f"batch_{len(self.batches) + 1}", "object": "batch", "endpoint": body.get("endpoint"),
                     "input_file_id": body["input_file_id"], "completion_window": body.get("completion_window"),
                     "status": "validating", "created_at": int(time.time()), "output_file_id": None,
                     "error_file_id": None, "errors": None,
                     "request_counts": {"total": len(ids), "completed": 0, "failed": 0},
                     "_outcome": self.outcomes.popleft() if self.outcomes else "complete"}
            self.batches[batch["id"]] = batch
            return 200, _public(batch)

    def get(self, path: str) -> tuple[int, dict[str, Any] | bytes] | None:
        """The answer to a GET on the files or batches API, or None for another path."""
        parts = path.split("?")[0].rstrip("/").split("/")
        with self._lock:
            if parts[-1] == "batches":
                return 200, {"object": "list", "data": [_public(b) for b in self.batches.values()],
                             "has_more": False}
            if parts[-2:-1] == ["batches"]:
                batch = self.batches.get(parts[-1])
                if batch is None:
                    return 404, {"error": {"message": f"no batch {parts[-1]!r}"}}
                self.polls_by_batch[batch["id"]] += 1
                if batch["status"] not in ("completed", "expired", "failed"):
                    batch["status"] = "in_progress"
                    if self.polls_by_batch[batch["id"]] >= self.polls:
                        self._finish(batch)
                return 200, _public(batch)
            if parts[-1] == "content" and parts[-3:-2] == ["files"]:
                content = self.files.get(parts[-2])
                return (404, {"error": {"message": "no such file"}}) if content is None else (200, content)
        return None

    def _add_file(self, content: bytes, purpose: str) -> dict[str, Any]:
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": f"{file_id}.jsonl", "purpose": purpose, "status": "processed"}

    def _finish(self, batch: dict[str, Any]) -> None:
        """Answer the batch's lines (all, the first few when it expires, none when it fails)."""
        assert self.server is not None
        if batch["_outcome"] == "fail":
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [{"code": "invalid_file", "message": "scripted failure"}]}
            return
        lines = [json.loads(line) for line in self.files[batch["input_file_id"]].decode().splitlines() if line]
        answered = len(lines) if batch["_outcome"] == "complete" else self.expire_answered
        out, errors = [], []
        for i, line in enumerate(lines):
            if i >= answered:
                errors.append({"id": f"req_{i}", "custom_id": line["custom_id"], "response": None,
                               "error": {"code": "batch_expired", "message": "the batch expired"}})
                continue
            behaviour, asked_before = self.server.take(line["body"], live=False)
            if behaviour.kind in ("error", "drop", "malformed"):
                status = behaviour.status if behaviour.kind == "error" else 500
                errors.append({"id": f"req_{i}", "custom_id": line["custom_id"], "error": None, "response": {
                    "status_code": status, "body": {"error": {"message": behaviour.message or f"scripted {status}"}}}})
            else:
                out.append({"id": f"req_{i}", "custom_id": line["custom_id"], "error": None, "response": {
                    "status_code": 200, "body": self.server.answer(line["body"], behaviour, asked_before)}})
        for key, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                content = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[key] = self._add_file(content, "batch_output")["id"]
        batch["status"] = "completed" if batch["_outcome"] == "complete" else "expired"
        batch["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(errors)}


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _multipart_file(ctype: str, data: bytes) -> tuple[bytes, str]:
    """The uploaded file and its ``purpose`` from a multipart/form-data body."""
    message = BytesParser(policy=email.policy.default).parsebytes(
        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + data)
    content, purpose = b"", ""
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        if name == "file":
            content = payload
        elif name == "purpose":
            purpose = payload.decode()
    return content, purpose


def request_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a chat request carries: ``response_format`` ``json_schema`` (OpenAI, vLLM, llama.cpp) or
    Ollama's ``format`` object; None without one."""
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    if isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):  # {"type": "json_object", "schema": ...}
        return fmt["schema"]
    return body["format"] if isinstance(body.get("format"), dict) else None


def conforming_answer(schema: dict[str, Any], seed: str) -> Any:
    """A value that conforms to ``schema`` and varies with ``seed`` (the prompt): enum members, bounded numbers and
    strings, and SEAL's comma-separated value patterns (``^V(,V){n-1}$``), properties in the schema's order.
    It is checked against the schema before it is returned, so a schema this cannot satisfy fails loudly."""
    import jsonschema

    from assay.answers.shapes import schema_answer

    digest = hashlib.sha256(seed.encode()).digest()
    value = schema_answer(schema)
    for i, (key, prop) in enumerate(schema.get("properties", {}).items()):
        if isinstance(prop, dict) and "enum" in prop:
            value[key] = prop["enum"][digest[i % 32] % len(prop["enum"])]
        elif isinstance(prop, dict) and prop.get("type") == "object":
            value[key] = conforming_answer(prop, f"{seed}/{key}")
    jsonschema.validate(value, schema)
    return value


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
