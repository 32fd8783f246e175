"""The `hello` handshake against an engine that does not answer `hello` (iii's drops the frame): the
worker connects at once when `workerregistered` does not advertise `svc.hello`, not at
connect_timeout_ms. (Against the svc engine, which advertises it, every other test waits for the answer.)"""

from __future__ import annotations

import json
import time

from websockets.asyncio.server import ServerConnection

from svc_sdk import register_worker

from .conftest import fast_options, wait_for
from .peer import ScriptedPeer


class IiiLikeEngine(ScriptedPeer):
    """`workerregistered` at connect with iii's own features; every frame read and dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: list[str] = []

    async def handle(self, ws: ServerConnection) -> None:
        await ws.send(json.dumps({"type": "workerregistered", "worker_id": "w-1", "features": ["observe.v1"]}))
        async for text in ws:
            self.kinds.append(json.loads(text)["type"])


def test_an_engine_that_drops_hello_does_not_hold_up_the_connection() -> None:
    peer = IiiLikeEngine()
    peer.start()
    w = register_worker(peer.url, fast_options("iii-engine", connect_timeout_ms=20_000))
    try:
        started = time.monotonic()
        w.register_function("py::f", lambda data: data)
        wait_for(lambda: "registerfunction" in peer.kinds, timeout=10, what="the registration to be sent")
        assert time.monotonic() - started < 5, "the handshake waited for a hello answer that never comes"
        assert w.connected
        assert w.worker_id == "w-1"
        assert peer.kinds[0] == "hello"
    finally:
        w.shutdown()
        peer.stop()
