"""`async def` handlers at their edges: what they raise or return before their first await, cancels,
re-entrant calls, context variables and shutdown. On Python 3.12+ their tasks start eagerly, inside
the dispatch of their call's frame (handlers.py, EAGER_TASKS); scripts/test.sh runs this file there too.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from svc_sdk import InvocationError, Logger, Worker, current_invocation

from .conftest import Engine, WorkerFactory, python_env, wait_for

eager_only = pytest.mark.skipif(sys.version_info < (3, 12), reason="tasks start eagerly on Python 3.12+ only")

probe: contextvars.ContextVar[str | None] = contextvars.ContextVar("probe", default=None)


def _registered(worker: Worker, *function_ids: str) -> bool:
    listing = str(worker.trigger({"function_id": "engine::functions::list", "payload": {}}))
    return all(function_id in listing for function_id in function_ids)


def _no_entries_left(worker: Worker) -> bool:
    invoker: Any = worker._invoker
    return not invoker._tasks and not invoker._sync


def _call(worker: Worker, function_id: str, payload: Any = None, timeout_ms: int = 3000) -> Any:
    return worker.trigger({"function_id": function_id, "payload": payload or {}, "timeout_ms": timeout_ms})


def _error_of(worker: Worker, function_id: str, timeout_ms: int = 3000) -> InvocationError:
    with pytest.raises(InvocationError) as info:
        _call(worker, function_id, timeout_ms=timeout_ms)
    return info.value


async def _sleep_until_cancelled(cancelled: threading.Semaphore) -> None:
    """A handler's wait that only a cancel ends; each cancel is counted on `cancelled`."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        cancelled.release()
        raise


def test_what_a_handler_raises_or_returns_before_its_first_await_is_answered(make_worker: WorkerFactory) -> None:
    server = make_worker("edges")

    async def raises_first(data: Any) -> Any:
        raise ValueError("raised before any await")

    async def cancels_itself(data: Any) -> Any:
        raise asyncio.CancelledError()  # not cancelled by anyone: the caller must not wait for its timeout

    async def awaits_a_cancelled_future(data: Any) -> Any:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.cancel)
        await future

    def plain_returning_one(data: Any) -> Any:
        return cancels_itself(data)  # a plain `def` that returns a coroutine: it is awaited on the loop

    async def not_json(data: Any) -> Any:
        return object()

    async def nested_first(data: Any) -> Any:
        return await server.trigger_async({"function_id": "py::quick", "payload": {"n": data["n"] + 1}})

    async def blocking_trigger(data: Any) -> Any:
        return server.trigger({"function_id": "py::quick", "payload": {"n": 0}})

    async def quick(data: Any) -> Any:
        return {"n": data["n"]}

    async def exception_state(data: Any) -> Any:
        return repr(sys.exc_info()[1])  # an eager start inherits its creator's (CPython gh-155575): none here

    async def own_timeout(data: Any) -> Any:
        # asyncio.timeout and TaskGroup find their task (current_task) from the first step on.
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(5)
        except TimeoutError:
            pass
        async with asyncio.TaskGroup() as group:
            parts = [group.create_task(quick({"n": n})) for n in range(3)]
        return [part.result()["n"] for part in parts]

    handlers = {
        "py::raises_first": raises_first,
        "py::cancels_itself": cancels_itself,
        "py::awaits_cancelled": awaits_a_cancelled_future,
        "py::plain_cancels": plain_returning_one,
        "py::not_json": not_json,
        "py::nested_first": nested_first,
        "py::blocking_trigger": blocking_trigger,
        "py::quick": quick,
        "py::own_timeout": own_timeout,
        "py::exception_state": exception_state,
    }
    for function_id, handler in handlers.items():
        server.register_function(function_id, handler)
    caller = make_worker("edges-caller")
    wait_for(lambda: _registered(caller, *handlers), what="the edge functions")

    for _ in range(3):
        error = _error_of(caller, "py::raises_first")
        assert (error.code, error.message) == ("invocation_failed", "raised before any await")
        for function_id in ("py::cancels_itself", "py::awaits_cancelled", "py::plain_cancels"):
            error = _error_of(caller, function_id, timeout_ms=10_000)
            assert error.code == "invocation_failed", f"{function_id}: {error.code} {error.message}"
            assert "CancelledError" in error.message
        error = _error_of(caller, "py::not_json")
        assert error.code == "invocation_failed"
        assert "not JSON-serializable" in error.message
        assert _call(caller, "py::nested_first", {"n": 1}) == {"n": 2}
        error = _error_of(caller, "py::blocking_trigger")
        assert error.code == "invocation_failed"
        assert "trigger_async" in error.message
        assert _call(caller, "py::quick", {"n": 5}) == {"n": 5}
        assert _call(caller, "py::own_timeout") == [0, 1, 2]
        assert _call(caller, "py::exception_state") == "None"
    wait_for(lambda: _no_entries_left(server), timeout=5, what="the invocation table to empty")


def test_cancels_of_suspended_and_of_finished_calls_leave_nothing_behind(make_worker: WorkerFactory) -> None:
    server = make_worker("cancels")
    cancelled = threading.Semaphore(0)
    finished_ids: list[str] = []

    async def suspended(data: Any) -> Any:
        await _sleep_until_cancelled(cancelled)

    async def finishes_at_once(data: Any) -> Any:
        ctx = current_invocation()
        assert ctx is not None
        assert ctx.invocation_id is not None
        finished_ids.append(ctx.invocation_id)
        return {"n": data["n"]}

    server.register_function("py::suspended", suspended)
    server.register_function("py::at_once", finishes_at_once)
    caller = make_worker("cancels-caller")
    wait_for(lambda: _registered(caller, "py::suspended", "py::at_once"), what="the functions")

    async def flood() -> list[Any]:
        calls = [
            caller.trigger_async({"function_id": "py::suspended", "payload": {}, "timeout_ms": 300}) for _ in range(8)
        ]
        # Callers that give up (their task is cancelled): the engine passes their `cancel` on.
        calls += [asyncio.wait_for(caller.trigger_async({"function_id": "py::suspended"}), 0.3) for _ in range(4)]
        calls += [caller.trigger_async({"function_id": "py::at_once", "payload": {"n": n}}) for n in range(32)]
        return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(flood())
    assert all(isinstance(r, InvocationError) and r.code == "timeout" for r in results[:8]), results[:8]
    assert all(isinstance(r, TimeoutError) for r in results[8:12]), results[8:12]
    assert results[12:] == [{"n": n} for n in range(32)]
    for _ in range(12):
        assert cancelled.acquire(timeout=5), "a suspended handler was never cancelled"
    # A cancel that arrives after its call was answered (it crossed the answer on the way) finds nothing.
    session = server._connection.session
    assert session is not None
    errors: list[BaseException] = []

    def late_cancels() -> None:
        for invocation_id in finished_ids:
            try:
                server._connection._dispatch(session, {"type": "cancel", "invocation_id": invocation_id})
            except BaseException as exc:
                errors.append(exc)

    server._loop.call_soon_threadsafe(late_cancels)
    wait_for(lambda: _no_entries_left(server), timeout=5, what="the invocation table to empty")
    assert errors == []
    assert _call(caller, "py::at_once", {"n": 7}) == {"n": 7}
    assert _no_entries_left(server)


def test_a_handler_can_register_unregister_and_log_before_its_first_await(
    make_worker: WorkerFactory, capfd: pytest.CaptureFixture[str]
) -> None:
    server = make_worker("reentrant")
    server.register_function("py::old", lambda data: "old")

    async def new(data: Any) -> Any:
        return "new"

    async def rearrange(data: Any) -> Any:
        server.unregister_function("py::old")
        server.register_function("py::new", new)
        Logger(server).info("rearranged before any await")
        ctx = current_invocation()
        return ctx.function_id if ctx is not None else None

    server.register_function("py::rearrange", rearrange)
    caller = make_worker("reentrant-caller")
    wait_for(lambda: _registered(caller, "py::old", "py::rearrange"), what="the functions")
    assert _call(caller, "py::rearrange") == "py::rearrange"
    wait_for(lambda: _registered(caller, "py::new"), what="py::new")
    assert _call(caller, "py::new") == "new"
    wait_for(lambda: not _registered(caller, "py::old"), what="py::old to go")
    with pytest.raises(InvocationError) as info:
        _call(caller, "py::old")
    assert info.value.code == "function_not_found"
    assert "py::rearrange rearranged before any await" in capfd.readouterr().err
    assert _no_entries_left(server)


def test_64_calls_in_flight_answered_once_each(make_worker: WorkerFactory) -> None:
    server = make_worker("in-flight")

    async def echo(data: Any) -> Any:
        return {"n": data["n"]}

    server.register_function("py::echo", echo)
    caller = make_worker("in-flight-caller")
    wait_for(lambda: _registered(caller, "py::echo"), what="py::echo")
    outbox: Any = server._invoker._outbox
    real_put = outbox.put
    answered: list[str] = []

    def counting_put(session: Any, text: str) -> None:
        answered.append(json.loads(text)["invocation_id"])
        real_put(session, text)

    outbox.put = counting_put

    async def flood() -> list[Any]:
        return await asyncio.gather(
            *(caller.trigger_async({"function_id": "py::echo", "payload": {"n": n}}) for n in range(64))
        )

    try:
        for _ in range(5):
            answered.clear()
            assert asyncio.run(flood()) == [{"n": n} for n in range(64)]
            assert sorted(answered) == sorted(set(answered)), "a call answered twice"
            assert len(answered) == 64
    finally:
        outbox.put = real_put
    assert _no_entries_left(server)


def test_context_variables_stay_with_their_call(make_worker: WorkerFactory) -> None:
    server = make_worker("contexts")

    async def sets_probe(data: Any) -> Any:
        seen = probe.get()
        probe.set(f"set by {data['n']}")  # before its first await: must not reach the reader or the next call
        ctx = current_invocation()
        await asyncio.sleep(0.001 * (data["n"] % 4))
        after = current_invocation()
        return {"seen": seen, "own": ctx is after and ctx is not None and ctx.function_id == "py::sets_probe"}

    async def reads_probe(data: Any) -> Any:
        return probe.get()

    server.register_function("py::sets_probe", sets_probe)
    server.register_function("py::reads_probe", reads_probe)
    caller = make_worker("contexts-caller")
    wait_for(lambda: _registered(caller, "py::sets_probe", "py::reads_probe"), what="the functions")

    async def flood() -> list[Any]:
        return await asyncio.gather(
            *(caller.trigger_async({"function_id": "py::sets_probe", "payload": {"n": n}}) for n in range(32))
        )

    assert asyncio.run(flood()) == [{"seen": None, "own": True}] * 32
    assert _call(caller, "py::reads_probe") is None


def test_fire_and_forget_calls_of_async_handlers_run(make_worker: WorkerFactory) -> None:
    server = make_worker("void-async")
    seen: list[Any] = []

    async def record(data: Any) -> Any:
        seen.append(data["n"])
        await asyncio.sleep(0)
        seen.append(-data["n"])

    server.register_function("py::record", record)
    caller = make_worker("void-async-caller")
    wait_for(lambda: _registered(caller, "py::record"), what="py::record")
    for n in range(1, 6):
        assert caller.trigger({"function_id": "py::record", "payload": {"n": n}, "action": {"type": "void"}}) is None
    wait_for(lambda: sorted(seen) == [-5, -4, -3, -2, -1, 1, 2, 3, 4, 5], what="the fire-and-forget calls")
    assert _no_entries_left(server)


@pytest.mark.parametrize("exit_exc", [SystemExit(3), SystemExit("a message as its code"), KeyboardInterrupt()])
def test_a_handler_that_raises_system_exit_fails_only_its_call(
    make_worker: WorkerFactory, exit_exc: BaseException
) -> None:
    """sys.exit() (or a KeyboardInterrupt) raised in a handler is not an Exception: an async one ended
    the worker's loop thread with its socket left open (later calls timed out until the engine cut the
    connection), a plain one left its caller to the deadline. Both now fail their own call only."""
    server = make_worker(f"exit-server-{type(exit_exc).__name__}-{id(exit_exc)}")

    async def exits_async(data: Any) -> Any:
        raise exit_exc

    def exits(data: Any) -> Any:
        raise exit_exc

    async def echo(data: Any) -> Any:
        return data

    server.register_function("py::exits_async", exits_async)
    server.register_function("py::exits", exits)
    server.register_function("py::echo", echo)
    caller = make_worker(f"exit-caller-{type(exit_exc).__name__}-{id(exit_exc)}")
    wait_for(lambda: _registered(caller, "py::exits_async", "py::exits", "py::echo"), what="functions")
    for function_id in ("py::exits_async", "py::exits", "py::exits_async"):
        error = _error_of(caller, function_id)
        assert error.code == "invocation_failed", error
        assert type(exit_exc).__name__ in error.message, error.message
        assert _call(caller, "py::echo", {"n": 1}) == {"n": 1}
    wait_for(lambda: _no_entries_left(server), timeout=3, what="the invoker's tables to empty")


@pytest.mark.parametrize("shut_down_from", ["outside", "a handler before its first await"])
def test_shutdown_cancels_suspended_handlers(make_worker: WorkerFactory, shut_down_from: str) -> None:
    server = make_worker("closing")
    cancelled = threading.Semaphore(0)
    started = threading.Semaphore(0)

    async def suspended(data: Any) -> Any:
        started.release()
        await _sleep_until_cancelled(cancelled)

    async def shuts_down(data: Any) -> Any:
        server.shutdown()  # on the loop thread it only starts the shutdown
        return await suspended(data)

    server.register_function("py::suspended", suspended)
    server.register_function("py::shuts_down", shuts_down)
    caller = make_worker("closing-caller")
    wait_for(lambda: _registered(caller, "py::suspended", "py::shuts_down"), what="the functions")
    outcomes: list[Any] = []

    def call(function_id: str) -> None:
        try:
            outcomes.append(_call(caller, function_id, timeout_ms=10_000))
        except InvocationError as exc:
            outcomes.append(exc.code)

    callers = [threading.Thread(target=call, args=("py::suspended",)) for _ in range(4)]
    for thread in callers:
        thread.start()
    for _ in callers:
        assert started.acquire(timeout=5)
    if shut_down_from == "outside":
        server.shutdown()
    else:
        callers.append(threading.Thread(target=call, args=("py::shuts_down",)))
        callers[-1].start()
    for _ in callers:
        assert cancelled.acquire(timeout=5), "a suspended handler was not cancelled by the shutdown"
    server._runtime.thread.join(5)
    assert not server._runtime.thread.is_alive(), "the worker's thread did not end"
    assert _no_entries_left(server)
    for thread in callers:
        thread.join(10)
    assert len(outcomes) == len(callers), outcomes
    assert all(isinstance(o, str) for o in outcomes), outcomes


SUSPENDED_SCRIPT = """
import asyncio, sys
from svc_sdk import register_worker, InitOptions, Logger

async def suspended(data):
    Logger().info("suspended " + str(data["n"]))
    open(f"{sys.argv[2]}/{data['n']}", "w").close()
    await asyncio.sleep(30)

worker = register_worker(sys.argv[1], InitOptions(worker_name="suspended-script"))
worker.register_function("script::suspended", suspended)
"""


def test_a_script_with_suspended_handlers_exits_cleanly_on_a_signal(
    tmp_path: Path, engine: Engine, make_worker: WorkerFactory
) -> None:
    script = tmp_path / "worker.py"
    script.write_text(SUSPENDED_SCRIPT)
    started = tmp_path / "started"
    started.mkdir()
    proc = subprocess.Popen(
        [sys.executable, str(script), engine.url, str(started)], stderr=subprocess.PIPE, text=True, env=python_env()
    )
    outcomes: list[Any] = []

    def call(n: int) -> None:
        request: Any = {"function_id": "script::suspended", "payload": {"n": n}, "timeout_ms": 20_000}
        try:
            if n % 2 == 0:
                request["action"] = {"type": "void"}
            outcomes.append(caller.trigger(request))
        except InvocationError as exc:
            outcomes.append(exc.code)

    try:
        caller = make_worker("suspended-caller")
        wait_for(lambda: _registered(caller, "script::suspended"), what="the script's function")
        callers = [threading.Thread(target=call, args=(n,)) for n in range(8)]
        for thread in callers:
            thread.start()
        wait_for(lambda: len(list(started.iterdir())) == 8, what="8 handlers to start")
    except BaseException:
        proc.kill()
        raise
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert "destroyed but it is pending" not in err, err
    for thread in callers:
        thread.join(10)
    # The calls that wait for an answer are failed by the engine when the worker leaves.
    assert sorted(outcomes, key=str) == [None] * 4 + ["invocation_stopped"] * 4, outcomes


@eager_only
def test_a_handler_that_never_waits_is_answered_during_its_frames_dispatch(make_worker: WorkerFactory) -> None:
    server = make_worker("eager")
    dispatching: list[bool] = []
    connection: Any = server._connection
    real_dispatch = connection._dispatch
    state = {"in_dispatch": False}

    def watched_dispatch(session: Any, frame: Any) -> None:
        state["in_dispatch"] = True
        try:
            real_dispatch(session, frame)
        finally:
            state["in_dispatch"] = False

    connection._dispatch = watched_dispatch
    outbox: Any = server._invoker._outbox
    real_put = outbox.put

    def watched_put(session: Any, text: str) -> None:
        dispatching.append(state["in_dispatch"])
        real_put(session, text)

    outbox.put = watched_put

    async def at_once(data: Any) -> Any:
        dispatching.append(state["in_dispatch"])
        return data

    server.register_function("py::at_once", at_once)
    caller = make_worker("eager-caller")
    wait_for(lambda: _registered(caller, "py::at_once"), what="py::at_once")
    assert [_call(caller, "py::at_once", {"n": n}) for n in range(3)] == [{"n": n} for n in range(3)]
    assert dispatching == [True] * 6, "ran, then answered, during the dispatch of its frame"
    assert _no_entries_left(server)
