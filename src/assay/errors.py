"""The errors assay raises on purpose, each with a message meant for the user, not a traceback."""

from __future__ import annotations

from typing import Any


class AssayError(Exception):
    """Base of every error assay raises deliberately; the CLI prints its message and exits 1."""


class InputError(AssayError):
    """Bad input data: names the file, the record (line or index) and the field."""

    def __init__(
        self, message: str, *, file: str | None = None, record: str | int | None = None,
        field: str | None = None,
    ) -> None:
        self.file, self.record, self.field = file, record, field
        where = []
        if file is not None:
            where.append(str(file))
        if record is not None:
            where.append(f"record {record}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{': '.join([', '.join(where), message]) if where else message}")


class ConfigError(AssayError):
    """A bad option, spec string, name or combination of settings."""


class UsageError(ConfigError):
    """A command line that does not parse: an unknown flag or a flag without its value (the CLI exits 2)."""


class JudgeError(AssayError):
    """A judge call failed.

    Attributes:
        attempts: How many times the call was tried before giving up, where known (the middleware
            sets it when its retries run out), so that a failed unit can record it.
        trace: Fields for the failed unit's trace, where the raiser knows more than the message (a unit refused
            before any call for a prompt over the judge's context: ``over_context``).
    """

    attempts: int | None = None
    trace: dict[str, Any] | None = None


class TransientJudgeError(JudgeError):
    """A failure worth retrying: rate limit, server error, timeout, dropped connection.

    Attributes:
        retry_after: Seconds the server asked us to wait, if it said so.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RefusedJudgeError(TransientJudgeError):
    """The endpoint refused the connection: nothing listens there (yet).

    A server that is starting refuses for seconds, an absent one forever, so the middleware retries these within a
    short budget of their own (``RetryPolicy.refused_s``) and then gives up on the endpoint.
    """


class FatalJudgeError(JudgeError):
    """A failure that retrying cannot fix (bad key, unknown model, bad request): stops the run."""


class RequestJudgeError(JudgeError):
    """The endpoint rejected this one request (its prompt is too long for the context, a content filter
    refused it): retrying cannot fix it, but the other units are unaffected, so the unit is stored as failed
    with this error and the run goes on (exit 3)."""


class ReplayMissError(FatalJudgeError):
    """The replay judge was asked for a call the recorded run never made."""


def did_you_mean(name: str, choices: list[str]) -> str:
    """A short hint naming the closest valid choices, for registry errors."""
    import difflib

    close = difflib.get_close_matches(name, choices, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"{hint} Known: {', '.join(sorted(choices))}."
