"""Errors of the autocoder client. Each carries what a caller needs to act:
the field at fault for a request that is wrong, the result for a run that
failed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .result import CodeGenEvalResult


class AutoCoderError(Exception):
    """Base class of every error this client raises.

    An error of a server's answer has ``status`` (the HTTP status) and
    ``code`` (the API's error code: "invalid", "unavailable", ...); one
    raised after a job was submitted has ``job_id``, the job that goes on
    (follow it with result_of, stop it with cancel). Each is None when it
    does not apply.
    """

    status: Optional[int] = None
    code: Optional[str] = None
    job_id: Optional[str] = None


class InvalidRequestError(AutoCoderError, ValueError):
    """The request is wrong; fix it and do not retry as is.

    ``field`` is the dotted path of the setting or argument at fault, as the
    server names it ("spec.outputs.total", "run.args.threshold",
    "options.temperature") or as the client does before sending anything
    ("outputs.total", "temperature").
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        if self.field and not self.message.startswith(self.field):
            return "%s: %s" % (self.field, self.message)
        return self.message


class UnavailableError(AutoCoderError):
    """autocoder could not answer (no coordinator, NATS down, the server
    unreachable): retry later."""


class AuthError(AutoCoderError):
    """The token is missing, unknown, or lacks the scope (read, submit)."""


class NotFoundError(AutoCoderError):
    """No such job, task, output or sample."""


class WaitTimeout(AutoCoderError, TimeoutError):
    """The job did not finish within the wait; it goes on. ``job_id`` says
    which one to follow (result_of) or stop (cancel)."""

    def __init__(self, message: str, job_id: str) -> None:
        super().__init__(message)
        self.job_id = job_id


class RunError(AutoCoderError):
    """A run of the generated script failed: it crashed, timed out, or an
    output was missing or did not parse. ``result`` is the run's result
    (``result.error``, ``result.output``)."""

    def __init__(self, message: str, result: CodeGenEvalResult) -> None:
        super().__init__(message)
        self.result = result
