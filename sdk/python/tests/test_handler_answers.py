"""Answers of plain `def` handlers that cannot go out as they are, and what that must not cost."""

from __future__ import annotations

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
