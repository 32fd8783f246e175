"""Losing the engine: calls in flight fail fast, the worker reconnects and replays what it registered."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection

from svc_sdk import InvocationError, register_worker

from .conftest import Engine, WorkerFactory, fast_options, wait_for
from .peer import ScriptedPeer


def test_engine_killed_and_restarted(engine: Engine, make_worker: WorkerFactory) -> None:
    server = make_worker("survivor")
    server.register_function("py::ping", lambda data: {"pong": data})
    server.register_function("py::slow", lambda data: time.sleep(20))
    binding = server.register_trigger({"type": "test-type", "function_id": "py::ping", "config": {"k": 1}})
    assert binding.wait(5) == "parked"  # no provider for test-type: the engine keeps it for later
    caller = make_worker("caller")
    wait_for(lambda: "py::slow" in str(_functions(caller)), what="py::slow")
    old_ids = (server.worker_id, caller.worker_id)

    outcome: dict[str, Any] = {}

    def slow_call() -> None:
        try:
            caller.trigger({"function_id": "py::slow", "payload": {}, "timeout_ms": 20_000})
        except InvocationError as exc:
            outcome["error"] = exc
            outcome["at"] = time.monotonic()

    thread = threading.Thread(target=slow_call)
    thread.start()
    time.sleep(0.3)  # the call is in flight
    engine.kill()
    stopped_at = time.monotonic()
    thread.join(10)
    error = outcome["error"]
    assert error.code == "connection_lost"
    assert "py::slow" in error.message
    assert outcome["at"] - stopped_at < 2, "the call in flight did not fail at once"
    wait_for(lambda: not server.connected, what="the server worker to notice")

    engine.start()  # same port
    wait_for(lambda: server.connected and caller.connected, timeout=15, what="both workers to reconnect")
    assert (server.worker_id, caller.worker_id) != old_ids
    wait_for(lambda: "py::ping" in str(_functions(caller)), what="py::ping to be replayed")
    assert caller.trigger({"function_id": "py::ping", "payload": 1}) == {"pong": 1}
    assert binding.wait(5) == "parked"
    bindings = caller.trigger({"function_id": "engine::registered-triggers::list", "payload": {}})
    assert binding.id in json.dumps(bindings)


def test_calls_made_while_disconnected_wait_for_the_engine(engine: Engine, make_worker: WorkerFactory) -> None:
    w = make_worker("patient")
    w.register_function("py::ping", lambda data: "pong")
    wait_for(lambda: "py::ping" in str(_functions(w)), what="py::ping")
    engine.stop()
    wait_for(lambda: not w.connected, what="the worker to notice")
    threading.Timer(0.5, engine.start).start()
    assert w.trigger({"function_id": "py::ping", "payload": {}, "timeout_ms": 15_000}) == "pong"


def _functions(worker: Any) -> Any:
    return worker.trigger({"function_id": "engine::functions::list", "payload": {}})


class ScriptedEngine(ScriptedPeer):
    """A minimal peer that answers the handshake, records frames, and closes the first socket cleanly
    with `close_code` once the worker has replayed its registrations. Used where the real engine has
    no way to be told to close a socket with a given code."""

    def __init__(self, close_code: int) -> None:
        super().__init__()
        self.close_code = close_code
        self.connections: list[list[dict[str, Any]]] = []

    async def handle(self, ws: ServerConnection) -> None:
        n = len(self.connections) + 1
        frames: list[dict[str, Any]] = []
        self.connections.append(frames)
        # An svc engine: it answers `hello` (below) and says so.
        registered: dict[str, Any] = {"type": "workerregistered", "worker_id": f"w{n}", "reattach_token": f"t{n}"}
        registered["features"] = ["svc.hello"]
        await ws.send(json.dumps(registered))
        async for text in ws:
            frame = json.loads(text)
            frames.append(frame)
            if frame["type"] == "hello":
                engine = {"name": "scripted", "version": "0", "max_frame_bytes": 1 << 20, "invocation_timeout_ms": 5000}
                await ws.send(json.dumps({"type": "hello", "protocol": 1, "features": ["ack"], "engine": engine}))
            elif frame["type"] == "registertrigger":
                await ws.send(
                    json.dumps(
                        {
                            "type": "triggerregistrationresult",
                            "id": frame["id"],
                            "trigger_type": frame["trigger_type"],
                            "function_id": frame["function_id"],
                            "status": "active",
                        }
                    )
                )
                if n == 1:
                    await ws.close(self.close_code, "bye")


@pytest.fixture(params=[1000, 1001])
def scripted(request: pytest.FixtureRequest) -> Iterator[ScriptedEngine]:
    peer = ScriptedEngine(request.param)
    peer.start()
    yield peer
    peer.stop()


def test_clean_close_reconnects_with_reattach_and_replay(scripted: ScriptedEngine) -> None:
    w = register_worker(scripted.url, fast_options("replayer"))
    try:
        w.register_function("py::f", lambda data: data)
        trigger = w.register_trigger({"type": "cron", "function_id": "py::f", "config": {"expression": "* * * * * *"}})
        wait_for(lambda: len(scripted.connections) >= 2 and w.connected, what="a reconnect after a clean close")
        assert trigger.wait(5) == "active"
        first, second = scripted.connections[0], scripted.connections[1]
        assert first[0] == {"type": "hello", "protocol": 1, "features": ["cancel", "ack"], "role": "worker"}
        assert not any(f["type"] == "reattach" for f in first)
        wait_for(lambda: any(f["type"] == "registertrigger" for f in second), what="the replay")
        kinds = [f["type"] for f in second]
        assert kinds[:3] == ["hello", "reattach", "invokefunction"]
        assert second[1] == {"type": "reattach", "previous_worker_id": "w1", "reattach_token": "t1"}
        announce = second[2]
        assert announce["function_id"] == "engine::workers::register"
        assert announce["action"] == {"type": "void"}
        assert "invocation_id" not in announce
        assert announce["data"]["name"] == "replayer"
        assert announce["data"]["runtime"] == "python"
        replayed = {f["type"]: f for f in second[3:]}
        assert replayed["registerfunction"]["id"] == "py::f"
        first_trigger = next(f for f in first if f["type"] == "registertrigger")
        assert replayed["registertrigger"] == first_trigger  # same id: the engine can tell it is the same binding
        assert kinds.index("registerfunction") < kinds.index("registertrigger")
    finally:
        w.shutdown()
