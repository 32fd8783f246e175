"""Calls this worker makes with `trigger()`: sending them, matching results, deadlines, failing fast.

Every call carries `timeout_ms` (an svc extension) so the engine enforces the deadline and answers
`timeout`; a local timer slightly later is the safety net for an engine that never answers. When the
socket a call went out on closes, the call fails at once with `connection_lost` instead of waiting
out its deadline.
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
from .protocol import DEFAULT_INVOCATION_TIMEOUT_MS, Frame, TriggerRequest

#: How long past the engine's deadline the local timer waits before giving up on its answer.
SAFETY_MARGIN_S = 1.0


@dataclass
class _Pending:
    future: asyncio.Future[Any]
    function_id: str
    session: Session
    timer: asyncio.TimerHandle | None = None


class Caller:
    def __init__(self, connection: Connection, default_timeout_ms: int | None) -> None:
        self._connection = connection
        self._default_timeout_ms = default_timeout_ms
        self._pending: dict[str, _Pending] = {}

    def timeout_ms_for(self, request: TriggerRequest, session: Session | None) -> int:
        explicit = request.get("timeout_ms")
        if explicit is not None:
            if not isinstance(explicit, int | float) or explicit <= 0:
                raise InvocationError(
                    ErrorCode.INVALID_PAYLOAD, f"timeout_ms must be a positive number, got {explicit!r}"
                )
            return int(explicit)
        if self._default_timeout_ms is not None:
            return self._default_timeout_ms
        engine_default = session.engine.get("invocation_timeout_ms") if session is not None else None
        return (
            engine_default if isinstance(engine_default, int) and engine_default > 0 else DEFAULT_INVOCATION_TIMEOUT_MS
        )

    async def call(self, request: TriggerRequest, parent: InvocationContext | None = None) -> Any:
        """`parent`: the invocation making this call (captured in the caller's thread), whose trace it joins."""
        if not isinstance(request, dict):
            raise TypeError(
                f"trigger() takes a dict {{'function_id': ..., 'payload': ...}}, got {type(request).__name__}"
            )
        function_id = request.get("function_id")
        if not isinstance(function_id, str) or not function_id:
            raise InvocationError("invalid_function_id", f"function_id must be a non-empty string, got {function_id!r}")
        action = request.get("action")
        if action is not None and not (
            isinstance(action, dict)
            and (
                action.get("type") == "void"
                or (action.get("type") == "enqueue" and isinstance(action.get("queue"), str))
            )
        ):
            raise InvocationError(
                ErrorCode.INVALID_PAYLOAD,
                f'action must be {{"type": "void"}} or {{"type": "enqueue", "queue": name}}, got {action!r}',
                function_id,
            )
        loop = asyncio.get_running_loop()
        timeout_ms = self.timeout_ms_for(request, self._connection.session)
        deadline = loop.time() + timeout_ms / 1000
        try:
            session = await self._connection.wait_ready(timeout_ms / 1000)
        except TimeoutError:
            raise InvocationError(
                ErrorCode.TIMEOUT,
                f"Not connected to the engine at {self._connection.url} within {timeout_ms} ms; "
                f"{function_id} was not called",
                function_id,
            ) from None
        except SvcError as exc:
            raise InvocationError(exc.code, exc.message, function_id) from None

        frame: Frame = {"type": "invokefunction", "function_id": function_id, "data": request.get("payload")}
        if parent is not None and parent.traceparent:
            frame["traceparent"] = parent.traceparent
        if request.get("metadata") is not None:
            frame["metadata"] = request["metadata"]
        if action is not None and action.get("type") == "void":
            frame["action"] = action
            await self._send(session, frame, function_id)
            return None
        invocation_id = str(uuid.uuid4())
        remaining_ms = max(1, int((deadline - loop.time()) * 1000))
        frame["invocation_id"] = invocation_id
        frame["timeout_ms"] = remaining_ms
        if action is not None:
            frame["action"] = action
        pending = _Pending(loop.create_future(), function_id, session)
        self._pending[invocation_id] = pending
        try:
            await self._send(session, frame, function_id)
            pending.timer = loop.call_later(
                remaining_ms / 1000 + SAFETY_MARGIN_S, self._expire, invocation_id, timeout_ms
            )
            return await pending.future
        except asyncio.CancelledError:
            self._cancel_remote(session, invocation_id, "the caller was cancelled")
            raise
        finally:
            if pending.timer is not None:
                pending.timer.cancel()
            self._pending.pop(invocation_id, None)

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
            raise InvocationError(exc.code, f"Payload for {function_id}: {exc.message}", function_id) from None
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
