"""Exceptions raised by the SDK. Every one carries a stable string `code` (see docs/errors.md)."""

from __future__ import annotations


class ErrorCode:
    """The error codes of the protocol: every `code` the engine and the SDKs put in the error of a
    call, a frame refusal or a trigger registration (docs/errors.md: Calls, Frames, Triggers). The
    same values as the TypeScript SDK's `ErrorCode` (tests/test_protocol_constants.py)."""

    # calls
    FUNCTION_NOT_FOUND = "function_not_found"
    INVOCATION_FAILED = "invocation_failed"
    INVOCATION_STOPPED = "invocation_stopped"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    CONNECTION_LOST = "connection_lost"
    SHUTTING_DOWN = "shutting_down"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    RESULT_TOO_LARGE = "result_too_large"
    INTERNAL_ERROR = "internal_error"
    INVALID_PAYLOAD = "invalid_payload"
    INVALID_ARGUMENT = "invalid_argument"
    INVALID_FUNCTION_ID = "invalid_function_id"
    INVALID_NAMESPACE = "invalid_namespace"
    DUPLICATE_FUNCTION = "duplicate_function"
    ENQUEUE_ERROR = "enqueue_error"
    WORKER_NOT_FOUND = "worker_not_found"
    TRIGGER_NOT_FOUND = "trigger_not_found"
    FORBIDDEN = "forbidden"
    BINDING_NOT_FOUND = "binding_not_found"
    OVERLOADED = "overloaded"
    TOO_MANY_REGISTRATIONS = "too_many_registrations"
    UNAUTHORIZED = "unauthorized"
    STALE_WORKER = "stale_worker"
    RESERVED_NAME = "reserved_name"
    WORKER_START_FAILED = "worker_start_failed"
    TRACE_NOT_FOUND = "trace_not_found"
    # frames
    MALFORMED_FRAME = "malformed_frame"
    UNKNOWN_MESSAGE_TYPE = "unknown_message_type"
    INVALID_FRAME = "invalid_frame"
    FRAME_TOO_LARGE = "frame_too_large"
    FRAME_TOO_DEEP = "frame_too_deep"
    # triggers
    TRIGGER_TYPE_NOT_FOUND = "trigger_type_not_found"
    TRIGGER_REGISTRATION_FAILED = "trigger_registration_failed"


class SvcError(Exception):
    """Base class: an error with a stable `code` and a human-readable `message`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class InvalidFunctionIdError(SvcError, ValueError):
    """`register_function()` or `register_trigger()` was given a function id the engine would refuse
    (code `invalid_function_id`)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_FUNCTION_ID, message)


class InvalidArgumentError(SvcError, TypeError, ValueError):
    """A registration method was given an argument of the wrong kind (code `invalid_argument`; the
    message names the argument and what was given). The TypeScript SDK reports the same mistakes
    with the same code. A `TypeError` and a `ValueError` too, as the SDK raised before."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_ARGUMENT, message)


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
