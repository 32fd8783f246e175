"""Which invocation the current code runs for, so log lines can name it without being told."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import SvcError

if TYPE_CHECKING:
    from .otel_export import OpenSpan


@dataclass(frozen=True)
class InvocationContext:
    function_id: str
    #: None for fire-and-forget invocations.
    invocation_id: str | None
    #: W3C trace context of this invocation; calls made from its handler carry it on, so they
    #: join the same trace.
    traceparent: str | None = None
    #: The call's metadata (JSON), as its caller sent it. A job run by svc-queue gets
    #: {"message_id", "attempt", "max_attempts", "queue", "enqueued_at", ...} here (docs/queues.md).
    metadata: Any = None
    #: W3C baggage of this invocation (key=value pairs its callers set); carried on with
    #: traceparent to the calls its handler makes.
    baggage: str | None = None
    #: This worker's own span of the invocation when OpenTelemetry export is on (otel_export.py).
    span: OpenSpan | None = field(default=None, repr=False, compare=False)


#: Set by the SDK around every handler call (in its thread, or in its task for async handlers).
invocation_var: ContextVar[InvocationContext | None] = ContextVar("svc_invocation", default=None)


def current_invocation() -> InvocationContext | None:
    """The invocation whose handler is running in this thread or task, if any.

    For code that also runs outside handlers. Inside a handler, `running_invocation()` gives the
    same context typed without `None`, so a type checker needs no check."""
    return invocation_var.get()


class NoInvocationError(SvcError, RuntimeError):
    """`running_invocation()` was called where no handler runs (code `no_invocation`). A
    `RuntimeError`, as asyncio's `get_running_loop()` raises without a running loop."""

    def __init__(self, message: str) -> None:
        super().__init__("no_invocation", message)


def running_invocation() -> InvocationContext:
    """The invocation whose handler is running in this thread or task.

    Raises `NoInvocationError` (code `no_invocation`) outside a handler: at import time, in a
    thread the handler started (threads do not inherit context variables; start one with
    `contextvars.copy_context().run`, as `asyncio.to_thread` does and `loop.run_in_executor` does
    not), or in a callback of the worker's own. Tasks a handler creates (`asyncio.create_task`,
    `gather`) inherit it."""
    ctx = invocation_var.get()
    if ctx is None:
        raise NoInvocationError(
            "running_invocation() was called outside a handler: no invocation runs in this thread or task "
            "(a thread the handler started inherits it only when run with contextvars.copy_context().run, "
            "as asyncio.to_thread does and loop.run_in_executor does not); "
            "use current_invocation(), which returns None there"
        )
    return ctx
