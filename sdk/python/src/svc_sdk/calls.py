"""Calls this worker makes with `trigger()`: sending them, matching results, deadlines, failing fast.

The engine enforces every call's deadline and answers `timeout`: a call given a deadline (its own
`timeout_ms`, else `InitOptions.invocation_timeout_ms`) carries it as `timeout_ms` (an svc
extension); a call given none carries none, and the engine applies its `engine.invocation_timeout_ms`.
A local timer slightly later than the deadline (the engine's advertised default for calls without
one) is the safety net for an engine that never answers. When the socket a call went out on closes,
the call fails at once with `connection_lost` instead of waiting out its deadline.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

from ._background import spawn
from .connection import Connection, Session
from .context import InvocationContext
from .errors import ErrorCode, InvocationError, SvcError
from .otel_export import SpanTracer
from .protocol import DEFAULT_INVOCATION_TIMEOUT_MS, Frame, TriggerRequest, invoke_frame

#: How long past the engine's deadline the local timer waits before giving up on its answer.
SAFETY_MARGIN_S = 1.0


@dataclass
class _Pending:
    future: asyncio.Future[Any]
    function_id: str
    session: Session
    timer: asyncio.TimerHandle | None = None


class Caller:
    def __init__(
        self,
        connection: Connection,
        default_timeout_ms: int | None,
        namespace: str | None = None,
        tracer: SpanTracer | None = None,
    ) -> None:
        self._connection = connection
        #: OpenTelemetry export (otel_export.py), when on: a CLIENT span per call made.
        self.tracer = tracer
        self._default_timeout_ms = default_timeout_ms
        self._namespace = namespace
        self._pending: dict[str, _Pending] = {}

    def explicit_timeout_ms(self, request: TriggerRequest) -> int | None:
        """The deadline the caller set: the request's `timeout_ms`, else the worker's option, else None."""
        explicit = request.get("timeout_ms")
        if explicit is not None:
            if isinstance(explicit, bool) or not isinstance(explicit, int | float) or not 0 < explicit < float("inf"):
                raise InvocationError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"timeout_ms must be a positive number of milliseconds, got {explicit!r}",
                    request.get("function_id"),
                )
            return int(explicit)
        return self._default_timeout_ms

    @staticmethod
    def engine_default_ms(session: Session | None) -> int:
        """The engine's `engine.invocation_timeout_ms`, as its `hello` answer advertised it (30 s if unknown)."""
        engine_default = session.engine.get("invocation_timeout_ms") if session is not None else None
        return (
            engine_default if isinstance(engine_default, int) and engine_default > 0 else DEFAULT_INVOCATION_TIMEOUT_MS
        )

    async def call(self, request: TriggerRequest, parent: InvocationContext | None = None) -> Any:
        """`parent`: the invocation making this call (captured in the caller's thread), whose trace it joins."""
        # Bad arguments are reported as the TypeScript SDK reports them: the same codes.
        if not isinstance(request, dict):
            raise InvocationError(
                ErrorCode.INVALID_ARGUMENT,
                f"trigger() takes a dict {{'function_id': ..., 'payload': ...}}, got {type(request).__name__}",
            )
        function_id = request.get("function_id")
        if not isinstance(function_id, str) or not function_id:
            raise InvocationError(
                ErrorCode.INVALID_FUNCTION_ID, f"trigger() needs a non-empty function_id, got {function_id!r}"
            )
        action = request.get("action")
        if action is not None and not (
            isinstance(action, dict)
            and (
                action.get("type") == "void"
                or (action.get("type") == "enqueue" and isinstance(action.get("queue"), str))
            )
        ):
            raise InvocationError(
                ErrorCode.INVALID_ARGUMENT,
                'action must be {"type": "void"} or {"type": "enqueue", "queue": name} (TriggerAction), '
                f"got {action!r}",
                function_id,
            )
        binding_id = request.get("binding_id")
        if binding_id is not None and (not isinstance(binding_id, str) or not binding_id):
            raise InvocationError(
                ErrorCode.INVALID_ARGUMENT, f"binding_id must be a non-empty string, got {binding_id!r}", function_id
            )
        namespace = request.get("namespace", self._namespace)
        if namespace is not None and (not isinstance(namespace, str) or not namespace.strip()):
            raise InvocationError(
                ErrorCode.INVALID_NAMESPACE,
                f"namespace must be a non-blank string, got {namespace!r}; leave it unset for this worker's namespace",
                function_id,
            )
        loop = asyncio.get_running_loop()
        explicit_ms = self.explicit_timeout_ms(request)
        timeout_ms = explicit_ms if explicit_ms is not None else self.engine_default_ms(self._connection.session)
        deadline = loop.time() + timeout_ms / 1000
        try:
            session = await self._connection.wait_ready(timeout_ms / 1000)
        except TimeoutError:
            raise InvocationError(
                ErrorCode.CONNECTION_LOST,
                f"Could not connect to the engine at {self._connection.shown_url} within {timeout_ms} ms; "
                f"{function_id} was not called",
                function_id,
            ) from None
        except SvcError as exc:
            raise InvocationError(exc.code, exc.message, function_id) from None

        payload, metadata = request.get("payload"), request.get("metadata")
        if payload is None:
            payload = {}  # as the TypeScript SDK and iii's send a call without payload
        traceparent = parent.traceparent if parent is not None else None
        baggage = parent.baggage if parent is not None else None
        # With export on, the traceparent sent names our CLIENT span: the engine's span is its child.
        span = self.tracer.client(function_id, traceparent) if self.tracer is not None else None
        if span is not None:
            traceparent = span.traceparent
        if action is not None and action.get("type") == "void":
            frame = invoke_frame(
                function_id, None, None, binding_id, payload, action, metadata, traceparent, baggage, namespace
            )
            try:
                await self._send(session, frame, function_id)
            finally:
                if span is not None:
                    span.end()
            return None
        invocation_id = str(uuid.uuid4())
        sent_ms: int | None = None
        if explicit_ms is not None:
            # What is left of the caller's deadline after waiting for the connection.
            remaining_ms = sent_ms = max(1, int((deadline - loop.time()) * 1000))
        else:
            # No deadline sent: the engine's default runs from when it receives the call.
            remaining_ms = timeout_ms = self.engine_default_ms(session)
        # In the layout the engine passes payloads on in as text (protocol.INVOKE_KEY_ORDER).
        frame = invoke_frame(
            function_id, invocation_id, sent_ms, binding_id, payload, action, metadata, traceparent, baggage, namespace
        )
        pending = _Pending(loop.create_future(), function_id, session)
        self._pending[invocation_id] = pending
        try:
            await self._send(session, frame, function_id)
            pending.timer = loop.call_later(
                remaining_ms / 1000 + SAFETY_MARGIN_S, self._expire, invocation_id, timeout_ms
            )
            result = await pending.future
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                self._cancel_remote(session, invocation_id, "the caller was cancelled")
            if span is not None:
                span.end(exc)
            raise
        finally:
            if pending.timer is not None:
                pending.timer.cancel()
            self._pending.pop(invocation_id, None)
        if span is not None:
            span.end()
        return result

    def on_result(self, frame: Frame) -> None:
        pending = self._pending.get(frame.get("invocation_id"))  # type: ignore[arg-type]
        if pending is None or pending.future.done():
            return  # late answer to a call that already timed out or failed
        error = frame.get("error")
        if isinstance(error, dict):
            stack = error.get("stacktrace")
            pending.future.set_exception(
                InvocationError(
                    str(error.get("code") or ErrorCode.INVOCATION_FAILED),
                    str(error.get("message") or ""),
                    pending.function_id,
                    stack if isinstance(stack, str) else None,
                )
            )
        else:
            pending.future.set_result(frame.get("result"))

    def fail_session(self, session: Session, reason: str) -> None:
        """The socket closed: fail every call that went out on it, now."""
        for pending in list(self._pending.values()):
            if pending.session is session and not pending.future.done():
                pending.future.set_exception(
                    InvocationError(
                        ErrorCode.CONNECTION_LOST,
                        f"Lost the connection to the engine while calling {pending.function_id} ({reason}); "
                        "the call may or may not have run",
                        pending.function_id,
                    )
                )

    def fail_all(self, code: str, message: str) -> None:
        for pending in list(self._pending.values()):
            if not pending.future.done():
                pending.future.set_exception(InvocationError(code, message, pending.function_id))

    async def _send(self, session: Session, frame: Frame, function_id: str) -> None:
        try:
            text = session.encode_checked(frame)
        except (TypeError, ValueError) as exc:
            raise InvocationError(
                ErrorCode.INVALID_PAYLOAD, f"Payload for {function_id} is not JSON-serializable: {exc}", function_id
            ) from None
        except SvcError as exc:
            raise InvocationError(exc.code, exc.message, function_id) from None  # it names the call
        try:
            await session.send_text(text)
        except SvcError as exc:
            raise InvocationError(exc.code, f"Could not call {function_id}: {exc.message}", function_id) from None

    def _expire(self, invocation_id: str, timeout_ms: int) -> None:
        pending = self._pending.get(invocation_id)
        if pending is None or pending.future.done():
            return
        pending.future.set_exception(
            InvocationError(
                ErrorCode.TIMEOUT, f"{pending.function_id} did not answer within {timeout_ms} ms", pending.function_id
            )
        )
        self._cancel_remote(pending.session, invocation_id, "timeout")

    def _cancel_remote(self, session: Session, invocation_id: str, reason: str) -> None:
        if "cancel" in session.features and not session.closed:
            frame = {"type": "cancel", "invocation_id": invocation_id, "reason": reason}
            spawn(_send_quietly(session, frame))


async def _send_quietly(session: Session, frame: Frame) -> None:
    try:
        await session.send(frame)
    except SvcError:
        pass
