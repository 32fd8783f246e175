"""Running this worker's functions when the engine invokes them, and answering with their results.

Plain (sync) handlers run in one thread pool created with the worker, so a handler may block, even
in a nested `trigger()`, without stalling the connection. `async def` handlers run on the loop.

The sync path is the hot one (the quickstart's `math::add`), so it avoids per-call asyncio
machinery: the frame goes straight to a pool thread, which runs the handler, encodes the answer
and, once no more calls wait for the pool, writes the answers it has to the socket itself in one
write (Outbox; the loop is not woken to answer). An `async def` call is one task and nothing else
per call (no done-callback, no wrapper): the invocation table holds it; its answer is written at
once when the socket has nothing waiting (Session.write_now), so the engine routes it while the
loop runs the next handlers.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ._background import spawn
from .connection import Session
from .context import InvocationContext, invocation_var
from .errors import ErrorCode, InvocationError, SvcError
from .otel_export import SpanTracer
from .pool import HandlerPool
from .protocol import ErrorBody, Frame

log = logging.getLogger("svc_sdk")

#: A function handler: takes the call's payload, returns a JSON-compatible value (or an awaitable of one).
Handler = Callable[[Any], Any]


def is_async_callable(fn: Callable[..., Any]) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with an async __call__
    return inspect.iscoroutinefunction(fn) or (call is not None and inspect.iscoroutinefunction(call))


#: A handler thread writes its answers itself at the latest when this many wait, or the oldest has
#: waited this long (the last call of a read writes them sooner): the engine starts routing a long
#: read's answers before all are done, and calls of just under the pool's stall time each, queued
#: behind each other, do not hold an answer for THREAD_BATCH of them.
THREAD_BATCH = 32
THREAD_BATCH_SECONDS = 0.001

MAX_STACKTRACE_CHARS = 8192
"""At most this much of a handler's traceback travels with its error (a deep recursion's is megabytes)."""

# Python 3.12+ can start a task at once (eager_start): an `async def` handler that never waits then
# costs no scheduling round through the loop. Older versions schedule every call's task.
EAGER_TASKS = sys.version_info >= (3, 12)


class _Starting:
    """The table's entry for an `async def` call whose task is being started eagerly (no Task object yet)."""

    def cancel(self) -> bool:
        return False  # nothing can cancel it in between: the start is synchronous


_STARTING = _Starting()


def _cancelled_from_outside() -> bool:
    """In a handler's task that caught CancelledError: was the task cancelled (by `Invoker.cancel`,
    `close` or the loop's end), or did the handler raise it itself (e.g. it awaited a future that
    something else cancelled)? Only the latter has a caller still waiting for an answer."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


#: What a handler may raise that fails its own call. SystemExit and KeyboardInterrupt (`sys.exit()` in a
#: handler) are not Exceptions: on the loop they ended the worker's loop thread with its socket left
#: open, so the engine kept sending it calls; a handler thread could not end the process anyway.
HANDLER_ERRORS = (Exception, SystemExit, KeyboardInterrupt)


def error_body(exc: BaseException, with_stack: bool = True) -> ErrorBody:
    """How an exception raised by a handler travels: its string `code` attribute, else invocation_failed.

    An SvcError was raised on purpose (bad input, not found): it goes without a traceback, which
    would only tell the caller the callee's file paths, and the engine logs it at WARN, not ERROR.
    Any other exception was not expected: its traceback is what helps. An InvocationError passed
    on keeps the traceback its own callee sent, if any."""
    if isinstance(exc, (SystemExit, KeyboardInterrupt)):  # SystemExit.code is the exit status, not ours
        code: object = None
        message = (
            f"{type(exc).__name__}({exc}) raised by the handler: it fails this call only; "
            "a worker is stopped by worker.shutdown(), Ctrl-C or SIGTERM"
        )
    else:
        code = getattr(exc, "code", None)
        message = exc.message if isinstance(exc, SvcError) else str(exc)
    if not isinstance(code, str) or not code:
        code = ErrorCode.INVOCATION_FAILED
    body: ErrorBody = {"code": code, "message": message or type(exc).__name__}
    if with_stack and isinstance(exc, InvocationError):
        if exc.stacktrace:
            body["stacktrace"] = exc.stacktrace
    elif with_stack and not isinstance(exc, SvcError):
        stack = "".join(traceback.format_exception(exc))
        if len(stack) > MAX_STACKTRACE_CHARS:
            # The end of a traceback names the error and where it was raised: that part is kept.
            stack = f"… ({len(stack) - MAX_STACKTRACE_CHARS} characters before)\n{stack[-MAX_STACKTRACE_CHARS:]}"
        body["stacktrace"] = stack
    return body


def encode_reply(session: Session, function_id: str, invocation_id: str, result: Any, error: ErrorBody | None) -> str:
    """The `invocationresult` text; a result too large or not JSON becomes an error the caller can read."""
    head: Frame = {"type": "invocationresult", "invocation_id": invocation_id, "function_id": function_id}
    try:
        return session.encode_checked({**head, "error": error} if error is not None else {**head, "result": result})
    except SvcError as exc:  # too large: the caller gets that instead of a dead socket
        code = ErrorCode.RESULT_TOO_LARGE if exc.code == ErrorCode.PAYLOAD_TOO_LARGE else exc.code
        failure: ErrorBody = {"code": code, "message": exc.message}  # it names the result
    except (TypeError, ValueError) as exc:
        failure = {
            "code": ErrorCode.INVOCATION_FAILED,
            "message": f"Result of {function_id} is not JSON-serializable: {exc}",
        }
    return session.encode_checked({**head, "error": failure})


@dataclass
class RegisteredFunction:
    id: str
    handler: Handler
    is_async: bool
    frame: Frame  # the registerfunction frame, replayed on every reconnect


@dataclass
class _SyncCall:
    fn: RegisteredFunction
    data: Any
    ctx: InvocationContext
    session: Session
    cancelled: bool = False


class Outbox:
    """Answers on their way to the socket: written at once when the socket takes them, else by one writer on the loop.

    From the loop (`async def` handlers): written at once (Session.write_now). From a pool thread
    (plain `def`): the answer waits here until a pool thread finds no more calls waiting (`drain`),
    or THREAD_BATCH answers wait, or the oldest waited THREAD_BATCH_SECONDS when the next arrives;
    that thread writes them itself, in one write
    (Session.write_from_thread), so a read's calls cost the loop no wake-up to answer them. If
    threads block before that, the pool's stall check hands them to the loop's writer (`flush`).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: deque[tuple[Session, str]] = deque()
        self._lock = threading.Lock()
        self._scheduled = False
        self._oldest = 0.0  # when a handler thread put an answer into an empty outbox

    def put(self, session: Session, text: str) -> None:
        if asyncio._get_running_loop() is self._loop:
            if not self._scheduled and session.write_now(text):
                # An async handler's answer goes out at once when the socket takes it: the engine can
                # route it while this loop runs the next handlers (collected, they would leave
                # together only after all of them, and the engine and this worker would take turns).
                return
            with self._lock:
                self._items.append((session, text))
            self._schedule()
            return
        now = time.monotonic()
        with self._lock:
            if not self._items:
                self._oldest = now
            self._items.append((session, text))
            if len(self._items) < THREAD_BATCH and now - self._oldest < THREAD_BATCH_SECONDS:
                return  # the loop's writer, or the pool thread that finds no more calls waiting, sends it
        self.drain()

    def drain(self) -> None:
        """In a pool thread (that found no more calls waiting): write the answers waiting here."""
        with self._lock:
            if not self._items or self._scheduled:
                return  # nothing, or the loop's writer sends them
            batch = list(self._items)
            self._items.clear()
        self._write_from_thread(batch)

    def flush(self) -> None:
        """On the loop: have the writer send what waits here (handler threads blocked before sending it)."""
        with self._lock:
            if not self._items or self._scheduled:
                return
        self._schedule()

    def _write_from_thread(self, batch: list[tuple[Session, str]]) -> None:
        refused: list[tuple[Session, str]] = []
        for session, texts in _by_session(batch):
            if not session.closed and not session.write_from_thread(texts):
                refused += ((session, text) for text in texts)
        if not refused:
            return
        with self._lock:
            self._items.extendleft(reversed(refused))
            if self._scheduled:
                return
        self._schedule()

    def _schedule(self) -> None:
        with self._lock:
            if self._scheduled:
                return
            self._scheduled = True
        if asyncio._get_running_loop() is self._loop:
            self._loop.call_soon(self._start_writer)
            return
        try:
            self._loop.call_soon_threadsafe(self._start_writer)
        except RuntimeError:
            pass  # loop closed: the worker has shut down

    def _start_writer(self) -> None:
        spawn(self._write())

    async def _write(self) -> None:
        while True:
            with self._lock:
                if not self._items:
                    self._scheduled = False
                    return
                batch = list(self._items)
                self._items.clear()
            # Answers of one session go out in one write (one syscall here, one read in the engine).
            for session, texts in _by_session(batch):
                try:
                    await session.send_texts(texts)
                except SvcError:
                    pass  # the socket it came on is gone; the engine has already failed these calls
                except Exception:
                    # Unforeseen: these answers are lost (their callers get `timeout`), the later ones
                    # must not be. A writer that ended here would stay `_scheduled` for good.
                    log.exception("svc: writing %d answer(s) to the engine failed; they are lost", len(texts))


def _by_session(batch: list[tuple[Session, str]]) -> list[tuple[Session, list[str]]]:
    """Consecutive answers of one session, grouped (there is one session at a time but at a reconnect)."""
    groups: list[tuple[Session, list[str]]] = []
    for session, text in batch:
        if groups and groups[-1][0] is session:
            groups[-1][1].append(text)
        else:
            groups.append((session, [text]))
    return groups


class Invoker:
    """The function table and the invocations currently running."""

    def __init__(self, max_threads: int, loop: asyncio.AbstractEventLoop, tracer: SpanTracer | None = None) -> None:
        self.functions: dict[str, RegisteredFunction] = {}
        #: OpenTelemetry export (otel_export.py), when on: a SERVER span per handled call.
        self.tracer = tracer
        self.pool = HandlerPool(max_threads, "svc-handler", loop)
        self._loop = loop
        self._outbox = Outbox(loop)
        self.pool.on_stall = self._outbox.flush
        self.pool.on_drained = self._outbox.drain
        self._tasks: dict[str, asyncio.Task[None] | _Starting] = {}  # async handlers, by invocation id
        self._sync: dict[str, _SyncCall] = {}  # sync handlers, by invocation id

    def invoke(self, session: Session, frame: Frame) -> None:
        """Start running an `invokefunction` frame; its result is sent when the handler finishes."""
        function_id = frame.get("function_id")
        invocation_id = frame.get("invocation_id")
        if not isinstance(function_id, str):
            log.warning("svc: ignoring an invokefunction frame without a function_id")
            return
        if not isinstance(invocation_id, str):
            invocation_id = None
        traceparent, baggage = frame.get("traceparent"), frame.get("baggage")
        if not isinstance(traceparent, str):
            traceparent = None
        # With export on, the handler's logs and nested calls run under our SERVER span, a child of the engine's.
        span = self.tracer.server(function_id, traceparent) if self.tracer is not None else None
        ctx = InvocationContext(
            function_id,
            invocation_id,
            span.traceparent if span is not None else traceparent,
            frame.get("metadata"),
            baggage if isinstance(baggage, str) else None,
            span,
        )
        data = frame.get("data")
        if data is None:
            data = {}  # a call without payload, or with null: as the TypeScript SDK's handlers get it
        fn = self.functions.get(function_id)
        if fn is None:
            error: ErrorBody = {"code": ErrorCode.FUNCTION_NOT_FOUND, "message": f"Function {function_id} not found"}
            self._answer(session, ctx, None, error)
        elif fn.is_async:
            run = self._run_handler(session, fn.handler, data, ctx)
            if invocation_id is None:
                spawn(run)
            elif EAGER_TASKS:
                # Started at once: a handler that finishes without waiting is answered in this turn,
                # never scheduled (most do: bench/RESULTS.md). The placeholder is in the table
                # before it starts, so a handler that finishes here finds itself wanted. Only ever on the
                # loop's own thread (the reader): from another, 3.12/3.13 would run the step there and
                # corrupt the loop's current task (CPython gh-155338).
                self._tasks[invocation_id] = _STARTING
                task = asyncio.Task(run, loop=self._loop, eager_start=True)  # type: ignore[call-arg,unused-ignore]
                if not task.done():
                    self._tasks[invocation_id] = task
            else:
                # The table holds the task (asyncio keeps only a weak reference); the task removes
                # itself when done, and cancel() removes it, so no done-callback per call.
                self._tasks[invocation_id] = self._loop.create_task(run)
        else:
            call = _SyncCall(fn, data, ctx, session)
            if invocation_id is not None:
                self._sync[invocation_id] = call
            self.pool.run_soon(self._run_sync, call)

    def cancel(self, invocation_id: str) -> None:
        """The engine no longer wants this result. A sync handler already running runs on; its result is dropped."""
        task = self._tasks.pop(invocation_id, None)
        if task is not None:
            task.cancel()
        call = self._sync.pop(invocation_id, None)
        if call is not None:
            call.cancelled = True

    async def run_callable(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        """Run a plain callable in the pool or await an async one (trigger providers use this)."""
        if is_async_callable(fn):
            return await fn(arg)
        result = await asyncio.get_running_loop().run_in_executor(self.pool, fn, arg)
        if inspect.isawaitable(result):
            result = await result
        return result

    def close(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        self._tasks.clear()
        for call in self._sync.values():
            call.cancelled = True
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.tracer is not None:
            self.tracer.shutdown()  # sends the spans and lines still buffered

    def _run_sync(self, call: _SyncCall) -> None:
        """In a pool thread."""
        if call.cancelled:
            return
        result: Any = None
        error: ErrorBody | None = None
        token = invocation_var.set(call.ctx)
        try:
            result = call.fn.handler(call.data)
        except HANDLER_ERRORS as exc:
            error = error_body(exc)
        finally:
            invocation_var.reset(token)
        if inspect.isawaitable(result):  # a plain function that returned a coroutine: finish on the loop
            try:
                self._loop.call_soon_threadsafe(self._finish_awaitable, call, result)
            except RuntimeError:
                pass
            return
        if call.ctx.invocation_id is not None and self._sync.pop(call.ctx.invocation_id, None) is None:
            return  # cancelled while running
        self._answer(call.session, call.ctx, result, error)

    def _finish_awaitable(self, call: _SyncCall, awaitable: Awaitable[Any]) -> None:
        """On the loop: a plain `def` returned an awaitable; it finishes as an `async def` call does.

        Its task takes the call's place in the table, so a `cancel` from the engine (or shutdown)
        cancels it and nothing is sent; one that came while the `def` ran leaves nothing to run.
        """
        invocation_id = call.ctx.invocation_id

        async def result(_data: Any) -> Any:
            return await awaitable

        run = self._run_handler(call.session, result, None, call.ctx)
        if invocation_id is None:
            spawn(run)
        elif self._sync.pop(invocation_id, None) is None or call.cancelled:  # by the engine, or the worker closed
            run.close()
            if inspect.iscoroutine(awaitable):
                awaitable.close()  # never awaited: no "never awaited" warning, no work started
        else:
            self._tasks[invocation_id] = self._loop.create_task(run)

    async def _run_handler(self, session: Session, handler: Handler, data: Any, ctx: InvocationContext) -> None:
        """An `async def` handler's call, in a task of its own (so with a context of its own)."""
        invocation_var.set(ctx)
        result: Any = None
        error: ErrorBody | None = None
        try:
            result = await handler(data)
        except asyncio.CancelledError as exc:
            if _cancelled_from_outside():
                return  # by the engine or by shutdown: nobody waits for an answer (finally drops the entry)
            error = error_body(exc)  # the handler's own: an error, not a caller left to its deadline
        except HANDLER_ERRORS as exc:
            error = error_body(exc)
        finally:
            # Out of the table however it ended; still in it unless cancel() or close() came first.
            wanted = ctx.invocation_id is None or self._tasks.pop(ctx.invocation_id, None) is not None
        if wanted:
            self._answer(session, ctx, result, error)

    def _answer(self, session: Session, ctx: InvocationContext, result: Any, error: ErrorBody | None) -> None:
        """From any thread: queue the invocationresult (fire-and-forget calls only log failures)."""
        if ctx.span is not None:
            ctx.span.end(error)
        if ctx.invocation_id is None:
            if error is not None:
                log.warning(
                    "svc: fire-and-forget call of %s failed: [%s] %s", ctx.function_id, error["code"], error["message"]
                )
            return
        if session.closed:
            return  # the socket it came on is gone; the engine has already failed this call
        self._outbox.put(session, encode_reply(session, ctx.function_id, ctx.invocation_id, result, error))
