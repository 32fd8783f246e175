"""Calls through a real engine: results, errors, timeouts, nesting, size limits, concurrency."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from svc_sdk import (
    DEFAULT_MAX_FRAME_BYTES,
    InvalidFunctionIdError,
    InvocationError,
    SvcError,
    Worker,
    current_invocation,
    register_worker,
)

from .conftest import Engine, WorkerFactory, fast_options, wait_for


def add(data: dict[str, Any]) -> dict[str, Any]:
    return {"c": data["a"] + data["b"]}


def test_register_and_call_from_another_worker(make_worker: WorkerFactory) -> None:
    server = make_worker("math-worker")
    server.register_function("math::add", add, description="Add two numbers")
    caller = make_worker("caller")
    wait_for(lambda: _callable(caller, "math::add"), what="math::add to be registered")
    assert caller.trigger({"function_id": "math::add", "payload": {"a": 1, "b": 2}}) == {"c": 3}
    # a worker can call its own functions too, through the engine
    assert server.trigger({"function_id": "math::add", "payload": {"a": 40, "b": 2}}) == {"c": 42}
    # the engine knows who we are
    info = caller.trigger({"function_id": "engine::workers::info", "payload": {"name": "math-worker"}})
    assert "python" in str(info)


def test_async_handler_and_json_values(make_worker: WorkerFactory) -> None:
    w = make_worker("async-worker")

    async def echo(data: Any) -> Any:
        await asyncio.sleep(0.01)
        ctx = current_invocation()
        return {"got": data, "ctx": ctx.function_id if ctx is not None else None}

    w.register_function("py::echo", echo)
    wait_for(lambda: _callable(w, "py::echo", {}), what="py::echo")
    # (a null payload arrives as {}: the engine substitutes it, see src/engine/invocations.ts)
    for value in [0, 1.5, "text ünïcode", [1, [2]], {"nested": {"ok": True}}]:
        assert w.trigger({"function_id": "py::echo", "payload": value}) == {"got": value, "ctx": "py::echo"}


def test_a_call_without_payload_reaches_handlers_as_an_empty_dict(make_worker: WorkerFactory) -> None:
    """As in the TypeScript SDK and iii's: no payload, or None, is `{}` for the handler (plain or async)."""
    w = make_worker("no-payload")
    got: list[Any] = []

    async def on_async(data: Any) -> Any:
        got.append(data)

    w.register_function("py::plain_sink", got.append)
    w.register_function("py::async_sink", on_async)
    wait_for(lambda: _registered(w, "py::async_sink"), what="py::async_sink")
    for function_id in ("py::plain_sink", "py::async_sink"):
        w.trigger({"function_id": function_id})
        w.trigger({"function_id": function_id, "payload": None})
    assert got == [{}, {}, {}, {}]


def test_handler_exception_becomes_invocation_error(make_worker: WorkerFactory) -> None:
    w = make_worker("failing")

    def boom(data: Any) -> Any:
        raise ValueError(f"bad input {data['x']}")

    class QuotaError(Exception):
        code = "quota_exceeded"

    def quota(data: Any) -> Any:
        raise QuotaError("too many calls")

    w.register_function("py::boom", boom)
    w.register_function("py::quota", quota)
    wait_for(lambda: _registered(w, "py::quota"), what="functions")
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "py::boom", "payload": {"x": 7}})
    assert info.value.code == "invocation_failed"
    assert info.value.message == "bad input 7"
    assert info.value.function_id == "py::boom"
    assert info.value.stacktrace is not None
    assert "ValueError" in info.value.stacktrace
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "py::quota", "payload": {}})
    assert (info.value.code, info.value.message) == ("quota_exceeded", "too many calls")
    # Not an SvcError: a code of its own does not make it deliberate (an OSError-like library error).
    assert info.value.stacktrace is not None
    assert "QuotaError" in info.value.stacktrace


def test_svc_error_travels_without_its_traceback(make_worker: WorkerFactory) -> None:
    # An SvcError is raised on purpose (bad input, not found): where it was raised is the callee's
    # business (its file paths), and the engine logs it at WARN. A passed-on InvocationError keeps
    # the traceback its own callee sent, so an unexpected failure further down is still traceable.
    w = make_worker("refusing")

    def not_found(data: Any) -> Any:
        raise SvcError("order_not_found", f"no order {data['id']}")

    def passes_on(data: Any) -> Any:
        return w.trigger({"function_id": data["to"], "payload": {"x": 1, "id": 7}})

    def boom(data: Any) -> Any:
        raise ValueError("deep down")

    w.register_function("py::not_found", not_found)
    w.register_function("py::passes_on", passes_on)
    w.register_function("py::deep_boom", boom)
    wait_for(lambda: _registered(w, "py::deep_boom"), what="functions")
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "py::not_found", "payload": {"id": 7}})
    assert (info.value.code, info.value.message, info.value.stacktrace) == ("order_not_found", "no order 7", None)
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "py::passes_on", "payload": {"to": "py::not_found"}})
    assert (info.value.code, info.value.stacktrace) == ("order_not_found", None)
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "py::passes_on", "payload": {"to": "py::deep_boom"}})
    assert info.value.code == "invocation_failed"
    assert info.value.stacktrace is not None
    assert "in boom" in info.value.stacktrace, info.value.stacktrace


def test_function_not_found(make_worker: WorkerFactory) -> None:
    w = make_worker("lonely")
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "nobody::here", "payload": {}})
    assert info.value.code == "function_not_found"
    assert "nobody::here" in info.value.message
    assert info.value.function_id == "nobody::here"


def test_timeout_answers_quickly_and_cancels_the_callee(make_worker: WorkerFactory) -> None:
    server = make_worker("slow")
    cancelled = threading.Event()

    async def slow(data: Any) -> Any:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "too late"

    server.register_function("py::slow", slow)
    caller = make_worker("impatient")
    wait_for(lambda: _registered(caller, "py::slow"), what="py::slow")
    started = time.monotonic()
    with pytest.raises(InvocationError) as info:
        caller.trigger({"function_id": "py::slow", "payload": {}, "timeout_ms": 300})
    assert info.value.code == "timeout"
    assert time.monotonic() - started < 5, "the deadline was not enforced"
    # svc extension `cancel`: the engine tells the callee to stop
    assert cancelled.wait(5), "the slow handler was never cancelled"


def test_a_def_returning_a_coroutine_is_cancelled_with_its_call(make_worker: WorkerFactory) -> None:
    """A plain `def` that returns a coroutine: the engine's `cancel` cancels the coroutine as it does an
    `async def` handler, and one that came while the `def` ran keeps the coroutine from starting, so
    nothing more is sent for the call either way."""
    server = make_worker("slow-def")
    cancelled, finished, started_late = threading.Event(), threading.Event(), threading.Event()

    async def wait_then_finish() -> str:
        try:
            await asyncio.sleep(1.0)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        finished.set()  # only now would the answer go out
        return "too late"

    async def mark_started() -> str:
        started_late.set()
        return "too late"

    def slow_coroutine(data: Any) -> Any:
        return wait_then_finish()

    def slow_def(data: Any) -> Any:
        time.sleep(0.8)  # the engine's cancel arrives meanwhile
        return mark_started()

    server.register_function("py::slow_coroutine", slow_coroutine)
    server.register_function("py::slow_def", slow_def)
    caller = make_worker("impatient-def")
    wait_for(lambda: _registered(caller, "py::slow_def"), what="py::slow_def")
    for function_id in ("py::slow_coroutine", "py::slow_def"):
        with pytest.raises(InvocationError) as info:
            caller.trigger({"function_id": function_id, "payload": {}, "timeout_ms": 300})
        assert info.value.code == "timeout"
    assert cancelled.wait(5), "the coroutine was not cancelled"
    time.sleep(1.5)  # past when either would have finished
    assert not finished.is_set(), "the coroutine ran on after its call was cancelled"
    assert not started_late.is_set(), "the coroutine of a call cancelled while its def ran was started"
    invoker: Any = server._invoker
    assert not invoker._tasks
    assert not invoker._sync


def test_default_timeout_from_options(make_worker: WorkerFactory) -> None:
    server = make_worker("sleepy")
    server.register_function("py::sleep", lambda data: time.sleep(data["s"]))
    caller = make_worker("caller", invocation_timeout_ms=200)
    wait_for(lambda: _registered(caller, "py::sleep"), what="py::sleep")
    with pytest.raises(InvocationError) as info:
        caller.trigger({"function_id": "py::sleep", "payload": {"s": 3}})
    assert info.value.code == "timeout"


def test_no_deadline_given_gets_the_engines_default(tmp_path: Path) -> None:
    """Neither the call nor InitOptions sets a deadline: the engine's invocation_timeout_ms applies."""
    engine = Engine(tmp_path, "  invocation_timeout_ms: 400\n")
    engine.start()
    workers: list[Worker] = []
    try:
        server = register_worker(engine.url, fast_options("sleepy"))
        workers.append(server)
        server.register_function("py::sleep", lambda data: time.sleep(data["s"]))
        caller = register_worker(engine.url, fast_options("caller"))
        workers.append(caller)
        assert caller.wait_until_connected(10)
        wait_for(lambda: _registered(caller, "py::sleep"), what="py::sleep")
        started = time.monotonic()
        with pytest.raises(InvocationError) as info:
            caller.trigger({"function_id": "py::sleep", "payload": {"s": 8}})
        elapsed = time.monotonic() - started
        assert info.value.code == "timeout"
        assert "400ms" in info.value.message, info.value.message
        assert 0.4 <= elapsed < 3, f"ended after {elapsed:.2f} s, not at the engine's 400 ms"
    finally:
        for worker in workers:
            worker.shutdown()
        engine.stop()


@pytest.mark.parametrize(
    ("function_id", "why"),
    [
        ("state::\u200bget", "contains U+200B (a zero-width character) at index 7"),
        ("state::get\u202e", "contains U+202E (a bidirectional control) at index 10"),
        ("del\u007f", "contains U+007F (a control character)"),
        ("c1\u0085", "contains U+0085 (a control character)"),
        ("nb\u00a0sp", "contains U+00A0 (whitespace)"),
        ("soft\u00adhyphen", "contains U+00AD (an invisible formatting character)"),
        ("has space", "contains U+0020 (whitespace) at index 3"),
        ("", "is empty"),
        ("x" * 257, "is longer than 256 characters"),
    ],
)
def test_function_ids_the_engine_refuses_are_refused_locally(
    make_worker: WorkerFactory, function_id: str, why: str
) -> None:
    worker = make_worker("ids")
    with pytest.raises(InvalidFunctionIdError) as info:
        worker.register_function(function_id, lambda data: None)
    assert info.value.code == "invalid_function_id"
    assert why in info.value.message
    assert isinstance(info.value, ValueError)


def test_function_ids_of_any_script_are_accepted(make_worker: WorkerFactory) -> None:
    worker = make_worker("scripts")
    worker.register_function("検索::日本語/🙂-v1", lambda data: "found")
    assert worker.trigger({"function_id": "検索::日本語/🙂-v1", "payload": {}}) == "found"


def test_nested_calls_from_sync_and_async_handlers(make_worker: WorkerFactory) -> None:
    w = make_worker("nested")
    w.register_function("math::add", add)

    def add_three(data: Any) -> Any:
        first = w.trigger({"function_id": "math::add", "payload": {"a": data["a"], "b": data["b"]}})
        return w.trigger({"function_id": "math::add", "payload": {"a": first["c"], "b": data["c"]}})

    async def add_three_async(data: Any) -> Any:
        first = await w.trigger_async({"function_id": "math::add", "payload": {"a": data["a"], "b": data["b"]}})
        return await w.trigger_async({"function_id": "math::add", "payload": {"a": first["c"], "b": data["c"]}})

    async def blocks_loop(data: Any) -> Any:
        return w.trigger({"function_id": "math::add", "payload": {"a": 1, "b": 1}})

    w.register_function("math::add3", add_three)
    w.register_function("math::add3_async", add_three_async)
    w.register_function("py::blocks_loop", blocks_loop)
    wait_for(lambda: _registered(w, "py::blocks_loop"), what="functions")
    payload = {"a": 1, "b": 2, "c": 3}
    assert w.trigger({"function_id": "math::add3", "payload": payload}) == {"c": 6}
    assert w.trigger({"function_id": "math::add3_async", "payload": payload}) == {"c": 6}
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "py::blocks_loop", "payload": {}})
    assert "trigger_async" in info.value.message


def test_fire_and_forget(make_worker: WorkerFactory) -> None:
    w = make_worker("void")
    seen: list[Any] = []
    w.register_function("py::record", lambda data: seen.append(data))
    wait_for(lambda: _registered(w, "py::record"), what="py::record")
    assert w.trigger({"function_id": "py::record", "payload": {"n": 1}, "action": {"type": "void"}}) is None
    wait_for(lambda: seen == [{"n": 1}], what="the fire-and-forget call to run")


def test_payload_limits(make_worker: WorkerFactory) -> None:
    w = make_worker("big")
    w.register_function("py::big_result", lambda data: "x" * (DEFAULT_MAX_FRAME_BYTES + 10))
    w.register_function("py::not_json", lambda data: {1, 2, 3})
    w.register_function("py::len", lambda data: len(data["blob"]))
    w.register_function("math::add", add)
    wait_for(lambda: _registered(w, "math::add"), what="functions")
    # just under the limit: goes through the engine and back into a Python worker
    near_limit = DEFAULT_MAX_FRAME_BYTES - 1024
    assert w.trigger({"function_id": "py::len", "payload": {"blob": "z" * near_limit}}) == near_limit
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "math::add", "payload": {"blob": "y" * (DEFAULT_MAX_FRAME_BYTES + 1)}})
    assert info.value.code == "payload_too_large"
    # Which call, how big, the limit and where it comes from (the engine's, as small as the SDK's here).
    assert re.fullmatch(
        rf"Call of math::add: frame of \d+ bytes exceeds the limit of {DEFAULT_MAX_FRAME_BYTES} bytes "
        r"\(the engine's max_frame_bytes, announced at connect\)",
        info.value.message,
    ), info.value.message
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "py::big_result", "payload": {}})
    assert info.value.code == "result_too_large"
    assert re.fullmatch(
        rf"Result of py::big_result: frame of \d+ bytes exceeds the limit of {DEFAULT_MAX_FRAME_BYTES} bytes "
        r"\(the engine's max_frame_bytes, announced at connect\)",
        info.value.message,
    ), info.value.message
    # A smaller InitOptions.max_frame_bytes is the limit then, named with the engine's.
    small = make_worker("small-frames", max_frame_bytes=4096)
    with pytest.raises(InvocationError) as info:
        small.trigger({"function_id": "py::len", "payload": {"blob": "s" * 5000}})
    assert info.value.code == "payload_too_large"
    assert re.fullmatch(
        r"Call of py::len: frame of \d+ bytes exceeds the limit of 4096 bytes "
        rf"\(InitOptions.max_frame_bytes; the engine announced max_frame_bytes {DEFAULT_MAX_FRAME_BYTES} at connect\)",
        info.value.message,
    ), info.value.message
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "py::not_json", "payload": {}})
    assert info.value.code == "invocation_failed"
    assert "JSON" in info.value.message
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "math::add", "payload": object()})
    assert info.value.code == "invalid_payload"
    # nothing above cost the connection
    assert w.trigger({"function_id": "math::add", "payload": {"a": 2, "b": 3}}) == {"c": 5}


def test_hundred_calls_in_flight_to_one_worker(make_worker: WorkerFactory) -> None:
    server = make_worker("busy")
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def work(data: Any) -> Any:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.3)
        with lock:
            state["now"] -= 1
        return {"n": data["n"], "square": data["n"] ** 2}

    server.register_function("py::work", work)
    caller = make_worker("flood")
    wait_for(lambda: _registered(caller, "py::work"), what="py::work")

    async def flood() -> list[Any]:
        calls = [caller.trigger_async({"function_id": "py::work", "payload": {"n": n}}) for n in range(100)]
        return await asyncio.gather(*calls)

    results = asyncio.run(flood())
    assert results == [{"n": n, "square": n * n} for n in range(100)]
    # handlers really ran side by side (64 handler threads by default)
    assert state["peak"] >= 50, f"at most {state['peak']} handlers ran at once"


def _answers_of_20_async_calls_finishing_together(make_worker: WorkerFactory, name: str, backlog: bool) -> list[int]:
    """The sizes of the server's socket writes while 20 `async def` calls all finish in one loop
    iteration; `backlog`: the socket reports bytes still waiting to be written, as under load."""
    server = make_worker(name)
    n = 20
    arrived = 0
    release: asyncio.Event | None = None

    async def gather_then_answer(data: Any) -> Any:
        # The 20 calls wait for each other, then all finish in one loop iteration.
        nonlocal arrived, release
        if release is None:
            release = asyncio.Event()
        arrived += 1
        if arrived == n:
            release.set()
        await release.wait()
        return {"n": data["n"]}

    server.register_function("py::batch", gather_then_answer)
    caller = make_worker(f"{name}-caller")
    wait_for(lambda: _registered(caller, "py::batch"), what="py::batch")
    # Count the server's writes on its real socket (every write still goes through).
    session = server._connection.session
    assert session is not None
    transport = session.ws.transport
    real_write, real_size = transport.write, transport.get_write_buffer_size
    writes: list[int] = []

    def counting_write(data: Any) -> None:
        writes.append(len(data))
        real_write(data)

    transport.write = counting_write  # type: ignore[method-assign]
    if backlog:
        transport.get_write_buffer_size = lambda: 1  # type: ignore[method-assign]

    async def flood() -> list[Any]:
        calls = [caller.trigger_async({"function_id": "py::batch", "payload": {"n": i}}) for i in range(n)]
        return await asyncio.gather(*calls)

    try:
        results = asyncio.run(flood())
    finally:
        transport.write, transport.get_write_buffer_size = real_write, real_size  # type: ignore[method-assign]
    assert results == [{"n": i} for i in range(n)]
    return writes


def test_async_answers_leave_at_once_while_the_socket_has_nothing_waiting(make_worker: WorkerFactory) -> None:
    """Each answer is written as its handler returns, so the engine routes it while the loop runs the
    next handlers (issue 21: collected, they left together after all of them)."""
    writes = _answers_of_20_async_calls_finishing_together(make_worker, "at-once-server", backlog=False)
    assert len(writes) == 20, f"20 answers took {len(writes)} socket writes"


def test_answers_wait_and_share_one_write_while_the_socket_has_bytes_waiting(make_worker: WorkerFactory) -> None:
    """With bytes waiting for the socket, answers are queued and leave together, with flow control."""
    writes = _answers_of_20_async_calls_finishing_together(make_worker, "backlog-server", backlog=True)
    assert 1 <= len(writes) <= 2, f"20 answers took {len(writes)} socket writes"


def _registered(worker: Any, function_id: str) -> bool:
    listing = worker.trigger({"function_id": "engine::functions::list", "payload": {}})
    return function_id in str(listing)


def _callable(worker: Any, function_id: str, payload: Any = None) -> bool:
    try:
        worker.trigger({"function_id": function_id, "payload": payload or {"a": 0, "b": 0}, "timeout_ms": 2000})
        return True
    except InvocationError as exc:
        if exc.code == "function_not_found":
            return False
        raise
