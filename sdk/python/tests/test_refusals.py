"""What the TypeScript SDK does too (test/sdk/lifecycle.test.ts): a connection the engine refuses
for its token (`unauthorized`, close 4401) fails calls at once, is kept trying at the backoff's cap,
and is `worker.refusal`; a call that cannot reach the engine within its deadline is `connection_lost`."""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection

from svc_sdk import InvocationError, ReconnectOptions, register_worker

from .conftest import Engine, fast_options, wait_for
from .peer import ScriptedPeer

ADMIN = "admin-secret-0123456789"


@pytest.fixture
def token_engine(tmp_path: Path) -> Iterator[Engine]:
    eng = Engine(tmp_path, f"  auth:\n    tokens:\n      - name: admin\n        token: {ADMIN}\n        admin: true\n")
    eng.start()
    yield eng
    eng.stop()


def test_unauthorized_fails_calls_at_once_and_retries_at_the_cap(
    token_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="svc_sdk")
    reconnect = ReconnectOptions(initial_delay_ms=10, max_delay_ms=600)
    w = register_worker(token_engine.url, fast_options("no-token", reconnect=reconnect))
    try:
        wait_for(lambda: w.refusal is not None, what="the refusal")
        assert w.refusal is not None
        assert w.refusal.code == "unauthorized"
        assert "requires a token" in w.refusal.message
        assert not w.connected
        started = time.monotonic()
        with pytest.raises(InvocationError) as info:
            w.trigger({"function_id": "engine::health::check", "timeout_ms": 10_000})
        assert info.value.code == "unauthorized"
        assert time.monotonic() - started < 1, "at once, not at the deadline"
        # The next attempts wait the cap (600 ms less at most 30 %), not the initial 10 ms.
        time.sleep(1.5)
        refusals = [r for r in caplog.records if "refused this connection" in r.getMessage()]
        assert 2 <= len(refusals) <= 5, f"{len(refusals)} refusals in about 1.5 s"
        gaps = [b.created - a.created for a, b in itertools.pairwise(refusals)]
        assert all(gap >= 0.35 for gap in gaps), gaps
    finally:
        w.shutdown()
    # With the token the same engine accepts it, and nothing of the refusal remains.
    ok = register_worker(token_engine.url, fast_options("with-token", token=ADMIN))
    try:
        assert ok.wait_until_connected(10)
        assert ok.refusal is None
        assert ok.trigger({"function_id": "engine::health::check", "payload": {}})["status"] == "ok"
    finally:
        ok.shutdown()


def test_no_engine_within_the_deadline_is_connection_lost() -> None:
    w = register_worker("ws://127.0.0.1:1", fast_options("nowhere"))
    try:
        started = time.monotonic()
        with pytest.raises(InvocationError) as info:
            w.trigger({"function_id": "a::b", "timeout_ms": 300})
        assert info.value.code == "connection_lost"
        assert "Could not connect to the engine at ws://127.0.0.1:1 within 300 ms" in info.value.message
        assert time.monotonic() - started < 3
    finally:
        w.shutdown()


class TwoRefusals(ScriptedPeer):
    """Refuses the first connection as the engine does (an `error` frame, then close 4401) and every
    later one with the close alone, as an authenticating proxy in front of the engine may: no real
    engine can, as each of its refusals sends its frame."""

    def __init__(self) -> None:
        super().__init__()
        self.connections = 0

    async def handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        if self.connections == 1:
            error = {"code": "unauthorized", "message": "first refusal: the token presented is not valid"}
            await ws.send(json.dumps({"type": "error", "error": error}))
            await ws.close(4401, "unauthorized: first refusal")
        else:
            await ws.close(4401, "unauthorized: second refusal, by the proxy")


def test_a_refusal_without_an_error_frame_says_its_own_reason(caplog: pytest.LogCaptureFixture) -> None:
    """The message of a refusal's `error` frame is used for that refusal only (reconnect.py resets it)."""
    caplog.set_level(logging.ERROR, logger="svc_sdk")
    peer = TwoRefusals()
    peer.start()
    reconnect = ReconnectOptions(initial_delay_ms=10, max_delay_ms=100)
    w = register_worker(peer.url, fast_options("refused-twice", reconnect=reconnect))

    def refusals() -> list[str]:
        return [r.getMessage() for r in caplog.records if "refused this connection" in r.getMessage()]

    try:
        wait_for(lambda: len(refusals()) >= 2, what="two refusals")
        first, second = refusals()[:2]
        assert first.endswith("refused this connection: first refusal: the token presented is not valid"), first
        stuck = f"the first refusal's message stuck: {second}"
        assert second.endswith("refused this connection: second refusal, by the proxy"), stuck
    finally:
        w.shutdown()
        peer.stop()
