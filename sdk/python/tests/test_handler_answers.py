"""Answers of plain `def` handlers: written by the handler threads, when they leave, and those that cannot go out."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from svc_sdk import InvocationError
from svc_sdk.options import EVENT_LOOPS

from .conftest import WorkerFactory, wait_for


def _registered(worker: Any, function_id: str) -> bool:
    listing = worker.trigger({"function_id": "engine::functions::list", "payload": {}})
    return function_id in str(listing)


def _count_direct_writes(session: Any) -> dict[str, int]:
    """Count a session's answers written by handler threads, and the writes the socket took in part."""
    counts = {"direct": 0, "leftover": 0}
    writer = session._thread_writer
    real_direct, real_flush = session.write_from_thread, writer._flush_leftover

    def direct(texts: list[str]) -> bool:
        written = bool(real_direct(texts))
        counts["direct"] += len(texts) if written else 0
        return written

    def flush() -> None:
        counts["leftover"] += 1
        real_flush()

    session.write_from_thread, writer._flush_leftover = direct, flush
    return counts


@pytest.mark.parametrize("event_loop", EVENT_LOOPS)
def test_sync_answers_are_written_by_the_handler_threads(make_worker: WorkerFactory, event_loop: str) -> None:
    """Plain `def` handlers' answers leave from the pool thread that ran them, which writes what it
    has once no more calls wait (issue 21): the loop is not woken to answer them. On either loop."""
    server = make_worker("direct-server", event_loop=event_loop)
    assert type(server._loop).__module__.split(".")[0] == event_loop
    n = 200

    def add(data: Any) -> Any:
        return {"c": data["a"] + data["b"]}

    server.register_function("py::add", add)
    caller = make_worker("direct-caller")
    wait_for(lambda: _registered(caller, "py::add"), what="py::add")
    session = server._connection.session
    assert session is not None
    counts = _count_direct_writes(session)
    transport = session.ws.transport
    real_write = transport.write
    loop_writes: list[int] = []

    def counting_write(data: Any) -> None:
        loop_writes.append(len(data))
        real_write(data)

    transport.write = counting_write  # type: ignore[method-assign]

    async def flood() -> list[Any]:
        calls = [caller.trigger_async({"function_id": "py::add", "payload": {"a": i, "b": 1}}) for i in range(n)]
        return await asyncio.gather(*calls)

    try:
        assert asyncio.run(flood()) == [{"c": i + 1} for i in range(n)]
    finally:
        transport.write = real_write  # type: ignore[method-assign]
    # All of them, unless a thread the machine held up for a millisecond left some to the loop.
    assert counts["direct"] >= n * 3 // 4, f"{counts['direct']} of {n} answers were written by handler threads"
    assert len(loop_writes) <= n // 8, f"the loop wrote {len(loop_writes)} times for {n} answers"


def test_a_blocked_handler_thread_does_not_hold_back_answers_it_finished(make_worker: WorkerFactory) -> None:
    """A thread leaves answers for later while calls wait for it; if a handler then blocks, the pool's
    stall check has the loop send them (here: the quick call's answer arrives while the slow one runs)."""
    # One thread: the quick call's answer waits while the slow call waits for that thread.
    server = make_worker("stall-server", max_handler_threads=1)
    release = threading.Event()

    def maybe_slow(data: Any) -> Any:
        if data["slow"]:
            release.wait(10)
        else:
            wait_for(lambda: server._invoker.pool.waiting() > 0, what="the slow call to wait for the thread")
        return {"n": data["n"]}

    server.register_function("py::maybe_slow", maybe_slow)
    caller = make_worker("stall-caller")
    wait_for(lambda: _registered(caller, "py::maybe_slow"), what="py::maybe_slow")

    async def quick_then_slow() -> float:
        started = time.monotonic()
        quick = asyncio.ensure_future(
            caller.trigger_async({"function_id": "py::maybe_slow", "payload": {"n": 0, "slow": False}})
        )
        slow = asyncio.ensure_future(
            caller.trigger_async({"function_id": "py::maybe_slow", "payload": {"n": 1, "slow": True}})
        )
        assert await quick == {"n": 0}
        took = time.monotonic() - started
        release.set()
        assert await slow == {"n": 1}
        return took

    try:
        took = asyncio.run(quick_then_slow())
    finally:
        release.set()
    assert took < 2, f"the quick call's answer took {took:.2f}s: it waited for the slow call"


def test_an_answer_does_not_wait_for_a_later_call_without_one(make_worker: WorkerFactory) -> None:
    """The thread that runs the last waiting call writes the answers waiting, even when that call
    has no answer of its own (here a fire-and-forget call)."""
    server = make_worker("drain-server", max_handler_threads=1)
    voids: list[Any] = []

    def answered_or_void(data: Any) -> Any:
        if data["void"]:
            voids.append(data)
            return None
        wait_for(lambda: server._invoker.pool.waiting() > 0, what="the fire-and-forget call to wait")
        return {"n": data["n"]}

    server.register_function("py::answered_or_void", answered_or_void)
    caller = make_worker("drain-caller")
    wait_for(lambda: _registered(caller, "py::answered_or_void"), what="py::answered_or_void")

    async def answered_then_void() -> Any:
        answered = asyncio.ensure_future(
            caller.trigger_async({"function_id": "py::answered_or_void", "payload": {"n": 0, "void": False}})
        )
        await asyncio.sleep(0)  # sent first
        await caller.trigger_async(
            {"function_id": "py::answered_or_void", "payload": {"n": 1, "void": True}, "action": {"type": "void"}}
        )
        return await asyncio.wait_for(answered, 5)

    assert asyncio.run(answered_then_void()) == {"n": 0}
    assert voids == [{"n": 1, "void": True}]


def test_sync_answers_larger_than_the_socket_takes_arrive_whole(make_worker: WorkerFactory) -> None:
    """Threads' answers that the socket takes only in part finish through the loop, ahead of anything
    written later, so no frame lands inside another and no answer is lost (the engine would close a
    socket whose frames were interleaved)."""
    server = make_worker("partial-server")
    n = 16

    def big(data: Any) -> Any:
        return {"n": data["n"], "blob": chr(65 + data["n"]) * 600_000}

    server.register_function("py::big", big)
    caller = make_worker("partial-caller")
    wait_for(lambda: _registered(caller, "py::big"), what="py::big")
    session = server._connection.session
    assert session is not None
    # A small send buffer: a 600 kB answer never fits at once.
    sock = session.ws.transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
    counts = _count_direct_writes(session)

    async def flood() -> list[Any]:
        calls = [caller.trigger_async({"function_id": "py::big", "payload": {"n": i}}) for i in range(n)]
        return await asyncio.gather(*calls)

    for _ in range(3):
        results = asyncio.run(flood())
        assert [r["n"] for r in results] == list(range(n))
        for r in results:
            assert r["blob"] == chr(65 + r["n"]) * 600_000, f"answer {r['n']} arrived damaged"
    assert counts["leftover"] > 0, "no answer was taken in part: the test did not reach the loop's hand-over"
    assert server._connection.session is session, "the server's socket was replaced"
    assert caller.trigger({"function_id": "py::big", "payload": {"n": 1}})["blob"] == "B" * 600_000


@pytest.mark.parametrize("event_loop", EVENT_LOOPS)
def test_a_loop_write_behind_a_threads_partial_answer_leaves_after_it(
    make_worker: WorkerFactory, event_loop: str
) -> None:
    """The socket takes part of a thread's answer; before the rest is handed to the transport, the
    loop writes a frame of its own (as it does `async def` answers and log batches): it leaves after
    the rest, so both arrive whole, on either loop (the engine closes a socket whose frames interleave)."""
    server = make_worker("behind-server", event_loop=event_loop)
    noted: list[Any] = []
    wrote_behind = threading.Event()

    def big(data: Any) -> Any:
        server._loop.call_soon_threadsafe(write_behind_the_leftover)
        return {"blob": "B" * 2_000_000}

    server.register_function("py::big", big)
    server.register_function("py::note", noted.append)
    caller = make_worker("behind-caller")
    wait_for(lambda: _registered(caller, "py::big") and _registered(caller, "py::note"), what="functions")
    session = server._connection.session
    assert session is not None
    writer = session._thread_writer
    assert writer is not None

    def write_behind_the_leftover() -> None:
        # On the loop, held until the socket took big's answer in part: the thread's hand-over of the
        # rest is queued behind this callback, so this frame is written while the rest still waits.
        deadline = time.monotonic() + 10
        while writer._leftover is None and time.monotonic() < deadline:
            time.sleep(0.001)
        note = {"type": "invokefunction", "function_id": "py::note", "data": {"n": 1}, "action": {"type": "void"}}
        if writer._leftover is not None and session.write_now(json.dumps(note)):
            wrote_behind.set()

    # A small send buffer: a 2 MB answer never fits at once.
    session.ws.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)

    assert caller.trigger({"function_id": "py::big", "payload": {}, "timeout_ms": 10_000}) == {"blob": "B" * 2_000_000}
    assert wrote_behind.is_set(), "the loop wrote no frame while a partial answer waited: the test missed its path"
    wait_for(lambda: noted == [{"n": 1}], timeout=5, what="the frame written behind the partial answer to arrive")
    assert server._connection.session is session, "the server's socket was replaced"


@pytest.mark.parametrize("is_async", [False, True])
def test_a_result_that_is_not_utf8_is_an_error_and_costs_no_other_answer(
    make_worker: WorkerFactory, is_async: bool
) -> None:
    """A lone surrogate ("\\ud800" in a str) serializes to JSON but not to UTF-8: the caller gets
    invocation_failed, and the worker answers its other calls as before (the writer that met it
    used to die: a handler thread with its batch of answers, or the loop's writer for good)."""
    server = make_worker(f"surrogate-server-{int(is_async)}")

    def lone(data: Any) -> Any:
        return {"s": "\ud800"}

    async def lone_async(data: Any) -> Any:
        return {"s": "\ud800"}

    server.register_function("py::lone", lone_async if is_async else lone)
    server.register_function("py::echo", lambda data: data)
    caller = make_worker(f"surrogate-caller-{int(is_async)}")
    wait_for(lambda: _registered(caller, "py::echo") and _registered(caller, "py::lone"), what="functions")
    for _ in range(3):
        with pytest.raises(InvocationError) as info:
            caller.trigger({"function_id": "py::lone", "payload": {}, "timeout_ms": 3000})
        assert info.value.code == "invocation_failed", info.value
        assert "py::lone" in info.value.message
        assert caller.trigger({"function_id": "py::echo", "payload": {"n": 1}, "timeout_ms": 3000}) == {"n": 1}
    with pytest.raises(InvocationError) as info:  # and the same string as a payload is refused before sending
        caller.trigger({"function_id": "py::echo", "payload": {"s": "\ud800"}, "timeout_ms": 3000})
    assert info.value.code == "invalid_payload", info.value
    pool = server._invoker.pool
    wait_for(lambda: pool._running == 0, timeout=3, what="the pool's running count back to 0")
    assert all(thread.is_alive() for thread in pool._workers), "a handler thread died"


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("is_async", [False, True])
def test_a_result_nested_too_deep_to_encode_is_an_error_and_costs_no_other_answer(
    make_worker: WorkerFactory, is_async: bool
) -> None:
    """json.dumps raises RecursionError (not TypeError or ValueError) on a value nested deeper than
    Python's recursion limit: the answer was never written and the caller waited for its timeout."""
    server = make_worker(f"deep-server-{int(is_async)}")
    deep = _nested(100_000)

    def nested(data: Any) -> Any:
        return deep

    async def nested_async(data: Any) -> Any:
        return deep

    server.register_function("py::deep", nested_async if is_async else nested)
    server.register_function("py::echo", lambda data: data)
    caller = make_worker(f"deep-caller-{int(is_async)}")
    wait_for(lambda: _registered(caller, "py::echo") and _registered(caller, "py::deep"), what="functions")
    for _ in range(3):
        started = time.monotonic()
        with pytest.raises(InvocationError) as info:
            caller.trigger({"function_id": "py::deep", "payload": {}, "timeout_ms": 5000})
        assert info.value.code == "invocation_failed", info.value
        assert "py::deep" in info.value.message, info.value.message
        assert "nest" in info.value.message, info.value.message
        assert time.monotonic() - started < 2, "the caller waited for its timeout"
        assert caller.trigger({"function_id": "py::echo", "payload": {"n": 1}, "timeout_ms": 3000}) == {"n": 1}
    with pytest.raises(InvocationError) as info:  # and the same value as a payload is refused before sending
        caller.trigger({"function_id": "py::echo", "payload": {"v": deep}, "timeout_ms": 3000})
    assert info.value.code == "invalid_payload", info.value
    pool = server._invoker.pool
    wait_for(lambda: pool._running == 0, timeout=3, what="the pool's running count back to 0")
    assert all(thread.is_alive() for thread in pool._workers), "a handler thread died"


def test_an_answer_waits_at_most_a_few_ms_for_others_while_calls_keep_the_thread_busy(
    make_worker: WorkerFactory,
) -> None:
    """A handler thread keeps its answers until no call waits or THREAD_BATCH of them wait, and the
    stall check sends them only when threads make no progress for 1 ms: calls of just under 1 ms
    each, queued behind each other, held the first answer until 32 were done (here ~30 ms)."""
    server = make_worker("busy-answers-server", max_handler_threads=1)

    def spin(data: Any) -> Any:
        if data["n"] == 0:  # the first call returns once the others wait behind it
            wait_for(lambda: server._invoker.pool.waiting() >= n - 1, timeout=5, what="the other calls to wait")
        until = time.perf_counter() + 0.0008  # busy, so the thread keeps making progress
        while time.perf_counter() < until:
            # Lets the GIL go: the caller (a worker of this process, and the test's own loop) sees
            # an answer when it arrives, not when the spinning thread is made to hand the GIL over.
            time.sleep(0)
        return data["n"]

    n = 31
    server.register_function("py::spin", spin)
    caller = make_worker("busy-answers-caller")
    wait_for(lambda: _registered(caller, "py::spin"), what="py::spin")

    async def calls() -> tuple[float, float]:
        started = time.monotonic()
        arrived: dict[int, float] = {}

        async def one(i: int) -> None:
            assert await caller.trigger_async({"function_id": "py::spin", "payload": {"n": i}}) == i
            arrived[i] = time.monotonic() - started

        await asyncio.gather(*(one(i) for i in range(n)))
        return arrived[0], max(arrived.values())

    # The calls after the first take (n - 1) * 0.8 ms: the first answer leaves at their start, not
    # with the last ones. (A machine that holds the thread up only makes answers leave sooner.)
    first, last = asyncio.run(calls())
    gap = last - first
    assert gap > (n - 1) * 0.0008 / 2, f"the first answer arrived only {gap * 1000:.1f} ms before the last"


def test_a_failed_write_of_answers_costs_only_those_answers(make_worker: WorkerFactory) -> None:
    """If writing a batch of answers raises something unforeseen, that batch is lost (its callers get
    `timeout`) and logged, but the worker's later answers still go out: the writer is not left
    marked as running for good."""
    server = make_worker("write-fault-server")

    async def echo(data: Any) -> Any:
        return data

    server.register_function("py::echo", echo)
    caller = make_worker("write-fault-caller")
    wait_for(lambda: _registered(caller, "py::echo"), what="py::echo")
    session = server._connection.session
    assert session is not None
    real_send_texts = session.send_texts
    failures = [RuntimeError("injected: the write failed")]

    async def failing_once(texts: Sequence[str]) -> None:
        if failures:
            raise failures.pop()
        await real_send_texts(texts)

    session.write_now = lambda text: False  # type: ignore[method-assign]  # every answer through the outbox's writer
    session.send_texts = failing_once  # type: ignore[method-assign]
    with pytest.raises(InvocationError) as lost:
        caller.trigger({"function_id": "py::echo", "payload": {"n": 1}, "timeout_ms": 500})
    assert lost.value.code == "timeout"
    assert not failures, "the injected failure was not reached"
    assert caller.trigger({"function_id": "py::echo", "payload": {"n": 2}, "timeout_ms": 2000}) == {"n": 2}
