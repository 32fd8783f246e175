"""The worker handle returned by `register_worker`: functions, triggers and calls over one connection.

All state changes happen on the worker's loop thread, so registrations made from any thread are
ordered with the replay that follows every reconnect: each is either in the replay or sent after it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from ._background import spawn
from ._version import __version__
from .calls import Caller
from .channels import ChannelReader, ChannelWriter
from .connection import Connection, Session
from .context import current_invocation
from .errors import ErrorCode, SvcError
from .handlers import Handler, Invoker, RegisteredFunction
from .log_batches import LogBatcher
from .options import InitOptions, default_url
from .otel_export import tracer_for
from .process_report import ProcessReporter
from .protocol import (
    REGISTER_WORKER_FUNCTION,
    Frame,
    TriggerConfig,
    TriggerRequest,
    TriggerTypeInfo,
)
from .ready_file import ReadyFile
from .refs import FunctionRef, TriggerTypeRef
from .registrations import new_function, new_trigger, new_trigger_type
from .runtime import LoopThread, forget, on_process_exit
from .supervised import RUN_SECRET_ENV, engine_gone, watch_engine_liveness
from .triggers import ProvidedType, Trigger, TriggerRegistry, TriggerTypeHandler

log = logging.getLogger("svc_sdk")

_workers: list[Worker] = []


def current_worker() -> Worker | None:
    """The most recently registered worker that is still running (what `Logger()` sends through)."""
    return _workers[-1] if _workers else None


class Worker:
    def __init__(self, url: str | Sequence[str], options: InitOptions) -> None:
        # Several engines (a cluster): comma-separated or a sequence; the connection rotates.
        self.url = url if isinstance(url, str) else ",".join(url)
        self.options = options
        self._runtime = LoopThread(f"svc-worker[{options.worker_name}]", options.event_loop)
        self._loop = self._runtime.loop
        self._invoker = Invoker(options.max_handler_threads, self._loop, tracer_for(options.otel, options.worker_name))
        self._loop.set_default_executor(self._invoker.pool)  # see pool.py: survives interpreter shutdown
        self._triggers = TriggerRegistry(self._invoker.run_callable)
        self._connection = Connection(url, options, self)
        self._caller = Caller(self._connection, options.invocation_timeout_ms, options.namespace, self._invoker.tracer)
        # The session whose replay has been taken: registrations made later are sent on it directly.
        self._replayed: Session | None = None
        self._connected = threading.Event()
        self._stopped = threading.Event()
        # Ids of the functions registered, as the caller's thread sees them (duplicate_function).
        self._registry_lock = threading.Lock()
        self._function_ids: set[str] = set()
        self._logs = LogBatcher(self._runtime, lambda: self._replayed)
        self._reporter = ProcessReporter(options.process_report_interval_ms, self._send_now)
        self._ready_file = ReadyFile(options.ready_file, options.worker_name) if options.ready_file else None

    @property
    def worker_name(self) -> str:
        return self.options.worker_name

    @property
    def worker_id(self) -> str | None:
        """The engine's id for the current connection, None while disconnected."""
        session = self._connection.session
        return session.worker_id if session is not None else None

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def refusal(self) -> SvcError | None:
        """Why the engine last refused this worker (`unauthorized`, `stale_worker`), until it accepts one.

        Calls and `trigger()` fail with it at once meanwhile; an `unauthorized` worker keeps retrying
        at the backoff's cap (a token may be added and the engine restarted), a `stale_worker` stops.
        """
        return self._connection.refusal

    def wait_until_connected(self, timeout: float | None = None) -> bool:
        """Block until registered with the engine (functions replayed); False on timeout."""
        return self._connected.wait(timeout)

    # ---- registration ------------------------------------------------------------------------

    def register_function(
        self,
        function_id: str,
        handler: Handler,
        *,
        description: str | None = None,
        request_format: Any = None,
        response_format: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> FunctionRef:
        """Serve `function_id` with `handler(payload) -> result` (plain or `async def`).

        Raises InvalidFunctionIdError (`invalid_function_id`), InvalidArgumentError
        (`invalid_argument`: a handler that is not callable) or SvcError `duplicate_function`.
        """
        fn = new_function(function_id, handler, description, request_format, response_format, metadata)
        with self._registry_lock:  # registrations come from any thread; the loop applies them later
            if function_id in self._function_ids:
                raise SvcError(
                    ErrorCode.DUPLICATE_FUNCTION, f"Function {function_id} is already registered by this worker"
                )
            self._function_ids.add(function_id)
        self._on_loop(self._add_function, fn)
        return FunctionRef(function_id, self)

    def unregister_function(self, function_id: str) -> None:
        with self._registry_lock:
            self._function_ids.discard(function_id)
        self._on_loop(self._drop_function, function_id)

    def register_trigger(self, trigger: TriggerConfig) -> Trigger:
        """Bind a function to an event source, e.g. `{"type": "http", "function_id": ..., "config": {...}}`.

        Returns at once; `.wait()` on the result blocks for the engine's answer and raises
        TriggerRegistrationError if it was refused (refusals are also logged).
        """
        handle = new_trigger(trigger, lambda t: self._on_loop(self._drop_trigger, t))
        self._on_loop(self._add_trigger, handle)
        return handle

    def register_trigger_type(self, info: TriggerTypeInfo | str, handler: TriggerTypeHandler) -> TriggerTypeRef:
        """Provide a trigger type: `handler.register_trigger(instance)` / `unregister_trigger(instance)`
        are called for every binding of that type, from any worker."""
        provided = new_trigger_type(info, handler)
        self._on_loop(self._add_trigger_type, provided)
        return TriggerTypeRef(str(provided.frame["id"]), self)

    # ---- calls -------------------------------------------------------------------------------

    def trigger(self, request: TriggerRequest) -> Any:
        """Call a function by id and return its result. Raises InvocationError (`code`, `message`).

        Blocks the calling thread; from an `async def` handler use `await trigger_async(...)`.
        """
        if self._runtime.on_loop_thread:
            raise RuntimeError(
                "worker.trigger() would block the worker's event loop: "
                "inside async handlers use `await worker.trigger_async(...)`"
            )
        if self._loop.is_closed():
            raise SvcError(ErrorCode.SHUTTING_DOWN, "The worker has been shut down")
        # The handler's context lives in this thread; the call runs on the loop thread.
        parent = current_invocation()
        return asyncio.run_coroutine_threadsafe(self._caller.call(request, parent), self._loop).result()

    async def trigger_async(self, request: TriggerRequest) -> Any:
        """`trigger()` for async code, on the worker's own loop or any other."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        parent = current_invocation()
        if running is self._loop:
            return await self._caller.call(request, parent)
        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self._caller.call(request, parent), self._loop)
        )

    async def create_channel(self, buffer_size: int | None = None) -> dict[str, Any]:
        """A new channel (`engine::channels::create`): `{"writer": ref, "reader": ref}`, to open or pass on."""
        payload = {} if buffer_size is None else {"buffer_size": buffer_size}
        request: TriggerRequest = {"function_id": "engine::channels::create", "payload": payload}
        return cast(dict[str, Any], await self.trigger_async(request))

    def open_reader(self, ref: Mapping[str, Any]) -> ChannelReader:
        return ChannelReader(self._connection.url, ref, self.options.token)

    def open_writer(self, ref: Mapping[str, Any]) -> ChannelWriter:
        return ChannelWriter(self._connection.url, ref, self.options.token)

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        _workers.append(self)
        on_process_exit(self.request_shutdown, self.options.handle_signals)
        watch_engine_liveness()
        self._runtime.start(self._main())

    def request_shutdown(self) -> None:
        """Start closing the connection; returns at once. Safe from any thread and signal handlers."""
        if self._loop.is_closed():
            return
        try:
            self._loop.call_soon_threadsafe(lambda: spawn(self._connection.stop()))
        except RuntimeError:
            pass  # loop already closed

    def shutdown(self, timeout: float | None = 5.0) -> None:
        """Close the connection cleanly (code 1000) and stop the worker's thread."""
        self.request_shutdown()
        if not self._runtime.on_loop_thread and self._runtime.thread.is_alive():
            self._runtime.thread.join(timeout)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    async def _main(self) -> None:
        reporting = spawn(self._reporter.run())
        touching = spawn(self._ready_file.run()) if self._ready_file else None
        try:
            await self._connection.run()
        finally:
            reporting.cancel()
            if touching is not None and self._ready_file is not None:
                touching.cancel()
                self._ready_file.stopped(refused=self._connection.stale is not None)
            self._connected.clear()
            self._stopped.set()
            self._caller.fail_all(ErrorCode.SHUTTING_DOWN, "The worker is shutting down")
            self._invoker.close()
            if self in _workers:
                _workers.remove(self)
            forget(self.request_shutdown)
            secret = self.options.run_secret
            if self._connection.stale is not None and secret and secret == os.environ.get(RUN_SECRET_ENV):
                engine_gone(f"the engine at {self._connection.url} is not the engine run that started this worker")

    # ---- connection callbacks (loop thread) ---------------------------------------------------

    async def on_open(self, session: Session) -> None:
        await session.send(
            {
                "type": "invokefunction",
                "function_id": REGISTER_WORKER_FUNCTION,
                "data": {
                    "name": self.options.worker_name,
                    "description": self.options.description,
                    "runtime": "python",
                    "version": __version__,
                    "os": sys.platform,
                    "pid": os.getpid(),
                    **({"namespace": self.options.namespace} if self.options.namespace is not None else {}),
                },
                "action": {"type": "void"},
            }
        )
        # Snapshot and mark in one step (no await between): later registrations are sent directly.
        frames = [t.frame for t in self._triggers.types.values()]
        frames += [f.frame for f in self._invoker.functions.values()]
        triggers = list(self._triggers.triggers.values())
        self._replayed = session
        for frame in frames:
            await session.send(frame)
        for trigger in triggers:
            trigger.reset()
            await session.send(trigger.frame())
            self._triggers.sent(trigger, session)
        self._connected.set()
        self._reporter.report()
        if self._ready_file is not None:
            self._ready_file.update(True)

    def on_frame(self, session: Session, frame: Frame) -> None:
        kind = frame["type"]
        if kind == "invokefunction":
            self._invoker.invoke(session, frame)
        elif kind == "invocationresult":
            self._caller.on_result(frame)
        elif kind == "cancel":
            invocation_id = frame.get("invocation_id")
            if isinstance(invocation_id, str):
                self._invoker.cancel(invocation_id)
        elif kind == "triggerregistrationresult":
            self._triggers.on_result(frame)
        elif kind == "registertrigger":
            spawn(self._triggers.provide(session, frame))
        elif kind == "unregistertrigger":
            spawn(self._triggers.withdraw(frame))
        elif kind == "registrationrejected":
            log.error("svc: the engine rejected a registration: %s", frame)
        else:
            log.debug("svc: ignoring a %s frame", kind)

    def on_close(self, session: Session, reason: str) -> None:
        self._connected.clear()
        if self._ready_file is not None:
            self._ready_file.update(False, "stopping" if self._connection.stopping else "reconnecting")
        if self._replayed is session:
            self._replayed = None
        self._caller.fail_session(session, reason)
        spawn(self._triggers.withdraw_all())

    # ---- state changes (loop thread) ----------------------------------------------------------

    def _on_loop(self, fn: Callable[..., None], *args: Any) -> None:
        if self._runtime.on_loop_thread or self._loop.is_closed():
            fn(*args)
            return
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # closed between the check and the call
            fn(*args)

    def _send_now(self, frame: Frame, after: Callable[[Session], None] | None = None) -> None:
        session = self._replayed
        if session is None or session.closed:
            return  # the next replay carries it
        spawn(self._send_logged(session, frame, after))

    async def _send_logged(self, session: Session, frame: Frame, after: Callable[[Session], None] | None) -> None:
        try:
            await session.send(frame)
        except SvcError as exc:
            if exc.code != ErrorCode.CONNECTION_LOST:
                log.error("svc: could not send %s %s: %s", frame.get("type"), frame.get("id"), exc)
            return
        if after is not None:
            after(session)

    def _add_function(self, fn: RegisteredFunction) -> None:
        self._invoker.functions[fn.id] = fn
        self._send_now(fn.frame)

    def _drop_function(self, function_id: str) -> None:
        if self._invoker.functions.pop(function_id, None) is not None:
            self._send_now({"type": "unregisterfunction", "id": function_id})

    def _add_trigger(self, trigger: Trigger) -> None:
        self._triggers.triggers[trigger.id] = trigger
        self._send_now(trigger.frame(), lambda session: self._triggers.sent(trigger, session))

    def _drop_trigger(self, trigger: Trigger) -> None:
        if self._triggers.triggers.pop(trigger.id, None) is not None:
            trigger.settle("unregistered")
            self._send_now({"type": "unregistertrigger", "id": trigger.id, "trigger_type": trigger.trigger_type})

    def _add_trigger_type(self, provided: ProvidedType) -> None:
        self._triggers.types[str(provided.frame["id"])] = provided
        self._send_now(provided.frame)

    def _drop_trigger_type(self, type_id: str) -> None:
        if self._triggers.types.pop(type_id, None) is not None:
            self._send_now({"type": "unregistertriggertype", "id": type_id})

    def _send_void(self, frame: Frame) -> None:
        """Fire-and-forget from any thread; dropped while disconnected."""
        self._on_loop(self._send_now, frame)

    # ---- log lines -----------------------------------------------------------------------------

    def _queue_log_line(self, row: list[Any]) -> None:
        """Send a Logger line, from any thread (log_batches.py: batched, dropped while disconnected)."""
        self._logs.queue(row)


def register_worker(url: str | Sequence[str] | None = None, options: InitOptions | None = None) -> Worker:
    """Connect a worker to the engine at `url` (default $SVC_URL, else ws://localhost:49134).

    `url` may name several engines of one cluster, comma-separated ("ws://a:49134,ws://b:49134")
    or as a list: the worker moves to the next one whenever its engine closes or cannot be reached.

    Returns at once: the connection runs in a background thread, reconnects by itself, and keeps
    the process alive until Ctrl-C, SIGTERM or `shutdown()`.
    """
    worker = Worker(url or default_url(), options or InitOptions())
    worker.start()
    return worker
