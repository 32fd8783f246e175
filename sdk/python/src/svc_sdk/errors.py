"""Exceptions raised by the SDK. Every one carries a stable string `code` (see docs/errors.md)."""

from __future__ import annotations


class ErrorCode:
    """Stable error codes shared with the engine and the TypeScript SDK (sdk/typescript/src/protocol.ts)."""

    FUNCTION_NOT_FOUND = "function_not_found"
    INVOCATION_STOPPED = "invocation_stopped"
    INVOCATION_FAILED = "invocation_failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    CONNECTION_LOST = "connection_lost"
    SHUTTING_DOWN = "shutting_down"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    RESULT_TOO_LARGE = "result_too_large"
    INVALID_PAYLOAD = "invalid_payload"
    INVALID_FUNCTION_ID = "invalid_function_id"
    TRIGGER_REGISTRATION_FAILED = "trigger_registration_failed"
    TRIGGER_TYPE_NOT_FOUND = "trigger_type_not_found"


class SvcError(Exception):
    """Base class: an error with a stable `code` and a human-readable `message`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class InvalidFunctionIdError(SvcError, ValueError):
    """`register_function()` was given an id the engine would refuse (code `invalid_function_id`)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_FUNCTION_ID, message)


class InvocationError(SvcError):
    """A call made with `trigger()` failed: the callee raised, the engine refused, or the call timed out.

    `stacktrace` is the callee's stack trace when it sent one.
    """

    def __init__(self, code: str, message: str, function_id: str | None = None, stacktrace: str | None = None) -> None:
        super().__init__(code, message)
        self.function_id = function_id
        self.stacktrace = stacktrace

    def __repr__(self) -> str:
        return f"InvocationError(code={self.code!r}, message={self.message!r}, function_id={self.function_id!r})"


class TriggerRegistrationError(SvcError):
    """The engine or the trigger type's provider refused a trigger registered with `register_trigger()`."""

    def __init__(self, code: str, message: str, trigger_id: str, trigger_type: str) -> None:
        super().__init__(code, message)
        self.trigger_id = trigger_id
        self.trigger_type = trigger_type
