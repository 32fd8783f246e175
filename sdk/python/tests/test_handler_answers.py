"""Answers of plain `def` handlers that cannot go out as they are, and what that must not cost."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from svc_sdk import InvocationError

from .conftest import WorkerFactory, wait_for


def _registered(worker: Any, function_id: str) -> bool:
    listing = worker.trigger({"function_id": "engine::functions::list", "payload": {}})
    return function_id in str(listing)


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
            pass
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
