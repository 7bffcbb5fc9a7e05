"""Counting tokens: a request's prompt tokens without calling the judge (the model's own tokenizer where it is
offline), and the prefix two token sequences share."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from assay.judges.base import Request

#: OpenAI's documented chat overhead (the cookbook's ``num_tokens_from_messages``): tokens per message and the
#: tokens that prime the reply.
OPENAI_PER_MESSAGE, OPENAI_REPLY_PRIMING = 3, 3
#: The stated approximation where no tokenizer is available offline.
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class TokenCounter:
    """How prompt and completion tokens are counted, and in words how (recorded in every estimate).

    Attributes:
        name: What counts, e.g. ``gguf SmolLM2-135M-Instruct.Q4_1.gguf (chat template)`` or
            ``approximate chars/4``.
        exact: Whether the counts are the model's own (the tokenizer is the model's).
        prompt: Tokens of a request's prompt, as the backend reports them for the whole request.
        text: Tokens of a text (a completion).
        own: Whether the count is the one the judge itself checks a prompt against (the embedded judge's tokenizer
            and chat template): a prompt it finds over the context is one the judge refuses, so a run may fail
            that unit without a call. A remote endpoint's count is never its own, even where ``exact``.
    """

    name: str
    exact: bool
    prompt: Callable[[Request], int]
    text: Callable[[str], int]
    own: bool = False


def approximate(reason: str) -> TokenCounter:
    """``ceil(chars / 4)`` per message: the stated approximation, with why no tokenizer was used."""
    def text(s: str) -> int:
        return math.ceil(len(s) / CHARS_PER_TOKEN)

    return TokenCounter(f"approximate chars/{CHARS_PER_TOKEN} ({reason})", False,
                        lambda r: sum(text(m.content) for m in r.messages), text)


@contextmanager
def _offline_tiktoken() -> Iterator[Any]:
    """tiktoken with its download turned into an error: only encodings already in its cache load."""
    import tiktoken
    import tiktoken.load

    def refuse(blobpath: str) -> bytes:
        raise OSError(f"not in tiktoken's cache (TIKTOKEN_CACHE_DIR) and no download is made: {blobpath}")

    original = tiktoken.load.read_file
    tiktoken.load.read_file = refuse
    try:
        yield tiktoken
    finally:
        tiktoken.load.read_file = original


def tiktoken_counter(model: str) -> TokenCounter:
    """tiktoken's encoding of an OpenAI model where its files are cached offline, else the approximation
    (saying why). Chat overhead as OpenAI documents it; the prompt is counted once per request (``n`` choices
    share it)."""
    try:
        with _offline_tiktoken() as tiktoken:
            encoding = tiktoken.encoding_for_model(model)
    except ImportError:
        return approximate("tiktoken is not installed: pip install 'assay[estimate]'")
    except KeyError:
        return approximate(f"tiktoken does not know model {model!r}")
    except (OSError, ValueError) as exc:
        return approximate(f"tiktoken's {model!r} encoding is not available offline: {exc}")

    def text(s: str) -> int:
        return len(encoding.encode(s, disallowed_special=()))

    def prompt(r: Request) -> int:
        return sum(OPENAI_PER_MESSAGE + text(m.content) + text(m.role) for m in r.messages) + OPENAI_REPLY_PRIMING

    return TokenCounter(f"tiktoken {encoding.name} (+{OPENAI_PER_MESSAGE} per message, +{OPENAI_REPLY_PRIMING} "
                        "reply priming, as OpenAI documents)", True, prompt, text)


def judge_counter(judge: Any) -> TokenCounter:
    """The counter for a judge object: its own tokenizer if it has one (the embedded judge), else by model name."""
    own, text = getattr(judge, "prompt_tokens", None), getattr(judge, "text_tokens", None)
    if callable(own) and callable(text):  # the embedded judge: counted as it reports (once per request)
        return TokenCounter(f"{judge.identity.label} (the judge's own tokenizer)", True,
                            lambda r: len(own(r)), text, own=True)
    if judge.identity.backend == "openai":
        return tiktoken_counter(judge.identity.model)
    return approximate(f"no offline tokenizer known for {judge.identity.label}")


def common_prefix(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the shared prefix of two token sequences (the embedded judge's KV-cache reuse, and
    :func:`assay.run.executor.prefix_reuse`'s measure of a request stream)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
