"""The Python SDK's protocol constants are the TypeScript SDK's (svc-sdk/protocol, the contract).

The TypeScript values are read from the built svc-sdk (`npm run build`) by node; each is compared
with its Python counterpart. The frames this SDK writes follow the layout the engine's fast path
relies on (INVOKE_KEY_ORDER, RESULT_KEY_ORDER), checked on the wire against a scripted peer.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection

from svc_sdk import (
    DEFAULT_ENGINE_URL,
    DEFAULT_MAX_FRAME_BYTES,
    ErrorCode,
    InitOptions,
    ReconnectOptions,
    calls,
    protocol,
    register_worker,
    supervised,
)

from .conftest import REPO, fast_options, node, wait_for
from .peer import ScriptedPeer

TS_DUMP = """
const p = await import('svc-sdk/protocol');
const sdk = await import('svc-sdk');
const internal = await import('svc-sdk/internal');
process.stdout.write(JSON.stringify({
  PROTOCOL_VERSION: p.PROTOCOL_VERSION,
  DEFAULT_ENGINE_PORT: p.DEFAULT_ENGINE_PORT,
  DEFAULT_ENGINE_URL: p.DEFAULT_ENGINE_URL,
  DEFAULT_MAX_FRAME_BYTES: p.DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_INVOCATION_TIMEOUT_MS: p.DEFAULT_INVOCATION_TIMEOUT_MS,
  MAX_FRAME_DEPTH: p.MAX_FRAME_DEPTH,
  FEATURES: p.FEATURES,
  ANSWERS_HELLO_FEATURE: p.ANSWERS_HELLO_FEATURE,
  MESSAGE_TYPES: p.MESSAGE_TYPES,
  UNAUTHORIZED_CLOSE: p.UNAUTHORIZED_CLOSE,
  STALE_WORKER_CLOSE: p.STALE_WORKER_CLOSE,
  ENGINE_RESTART_CLOSE: p.ENGINE_RESTART_CLOSE,
  RUN_SECRET_HEADER: p.RUN_SECRET_HEADER,
  REGISTER_WORKER_FUNCTION: p.REGISTER_WORKER_FUNCTION,
  LOG_BATCH_FUNCTION: p.LOG_BATCH_FUNCTION,
  REPORT_WORKER_FUNCTION: p.REPORT_WORKER_FUNCTION,
  DEFAULT_PROCESS_REPORT_MS: p.DEFAULT_PROCESS_REPORT_MS,
  FUNCTION_ID_MAX_LENGTH: p.FUNCTION_ID_MAX_LENGTH,
  INVOKE_KEY_ORDER: p.INVOKE_KEY_ORDER,
  RESULT_KEY_ORDER: p.RESULT_KEY_ORDER,
  ErrorCode: Object.values(p.ErrorCode),
  DEFAULT_RECONNECT: sdk.DEFAULT_RECONNECT,
  SAFETY_MARGIN_MS: internal.SAFETY_MARGIN_MS,
  RUN_SECRET_ENV: internal.RUN_SECRET_ENV,
  LIVENESS_FD_ENV: internal.LIVENESS_FD_ENV,
  ENGINE_GONE_EXIT_MS: internal.ENGINE_GONE_EXIT_MS,
}));
"""


@pytest.fixture(scope="module")
def ts() -> dict[str, Any]:
    sdk = REPO / "node_modules" / "svc-sdk" / "dist" / "protocol" / "index.js"
    if not sdk.is_file():
        pytest.fail(f"svc-sdk is not built: run `npm run build` in {REPO}")
    out = subprocess.run(
        [node(), "--input-type=module", "-e", TS_DUMP], cwd=REPO, capture_output=True, text=True, timeout=30, check=True
    )
    values: dict[str, Any] = json.loads(out.stdout)
    return values


def test_protocol_constants_match(ts: dict[str, Any]) -> None:
    python = {
        "PROTOCOL_VERSION": protocol.PROTOCOL_VERSION,
        "DEFAULT_ENGINE_PORT": protocol.DEFAULT_ENGINE_PORT,
        "DEFAULT_ENGINE_URL": DEFAULT_ENGINE_URL,
        "DEFAULT_MAX_FRAME_BYTES": DEFAULT_MAX_FRAME_BYTES,
        "DEFAULT_INVOCATION_TIMEOUT_MS": protocol.DEFAULT_INVOCATION_TIMEOUT_MS,
        "MAX_FRAME_DEPTH": protocol.MAX_FRAME_DEPTH,
        "FEATURES": list(protocol.FEATURES),
        "ANSWERS_HELLO_FEATURE": protocol.ANSWERS_HELLO_FEATURE,
        "UNAUTHORIZED_CLOSE": protocol.UNAUTHORIZED_CLOSE,
        "STALE_WORKER_CLOSE": protocol.STALE_WORKER_CLOSE,
        "ENGINE_RESTART_CLOSE": protocol.ENGINE_RESTART_CLOSE,
        "RUN_SECRET_HEADER": protocol.RUN_SECRET_HEADER,
        "REGISTER_WORKER_FUNCTION": protocol.REGISTER_WORKER_FUNCTION,
        "LOG_BATCH_FUNCTION": protocol.LOG_BATCH_FUNCTION,
        "REPORT_WORKER_FUNCTION": protocol.REPORT_WORKER_FUNCTION,
        "DEFAULT_PROCESS_REPORT_MS": protocol.DEFAULT_PROCESS_REPORT_MS,
        "FUNCTION_ID_MAX_LENGTH": protocol.FUNCTION_ID_MAX_LENGTH,
        "INVOKE_KEY_ORDER": list(protocol.INVOKE_KEY_ORDER),
        "RESULT_KEY_ORDER": list(protocol.RESULT_KEY_ORDER),
        "RUN_SECRET_ENV": supervised.RUN_SECRET_ENV,
        "LIVENESS_FD_ENV": supervised.LIVENESS_FD_ENV,
        "ENGINE_GONE_EXIT_MS": supervised.ENGINE_GONE_EXIT_S * 1000,
        "SAFETY_MARGIN_MS": calls.SAFETY_MARGIN_S * 1000,
    }
    for name, value in python.items():
        assert value == ts[name], f"{name}: Python {value!r}, TypeScript {ts[name]!r}"
    assert sorted(protocol.MESSAGE_TYPES) == sorted(ts["MESSAGE_TYPES"])


def test_error_codes_match(ts: dict[str, Any]) -> None:
    python = {v for k, v in vars(ErrorCode).items() if k.isupper()}
    assert python == set(ts["ErrorCode"])
    # Names are the values in capitals, so that ErrorCode.X reads the same in both SDKs' docs.
    assert all(k == v.upper() for k, v in vars(ErrorCode).items() if k.isupper())


def test_backoff_defaults_match(ts: dict[str, Any]) -> None:
    python = ReconnectOptions()
    expected = ts["DEFAULT_RECONNECT"]
    assert python.initial_delay_ms == expected["initialDelayMs"]
    assert python.max_delay_ms == expected["maxDelayMs"]
    assert python.factor == expected["factor"]
    assert python.jitter == expected["jitter"]
    assert InitOptions().keepalive_interval_ms == 20_000  # the TypeScript SDK's pingIntervalMs default


class CapturingPeer(ScriptedPeer):
    """Answers the handshake, records every text frame as sent, answers calls, and calls the worker."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[str] = []

    async def handle(self, ws: ServerConnection) -> None:
        await ws.send(json.dumps({"type": "workerregistered", "worker_id": "w1", "features": ["svc.hello"]}))
        async for text in ws:
            assert isinstance(text, str)
            self.frames.append(text)
            frame = json.loads(text)
            if frame["type"] == "hello":
                engine = {"name": "peer", "version": "0", "max_frame_bytes": 1 << 20, "invocation_timeout_ms": 5000}
                await ws.send(json.dumps({"type": "hello", "protocol": 1, "features": ["ack"], "engine": engine}))
            elif frame["type"] == "registerfunction":
                call = {"type": "invokefunction", "invocation_id": "e1", "function_id": frame["id"], "data": {"x": 1}}
                await ws.send(json.dumps(call))
            elif frame["type"] == "invokefunction" and frame.get("invocation_id"):
                answer = {"type": "invocationresult", "invocation_id": frame["invocation_id"], "result": 1}
                await ws.send(json.dumps(answer))


@pytest.fixture
def peer() -> Iterator[CapturingPeer]:
    p = CapturingPeer()
    p.start()
    yield p
    p.stop()


def test_frames_follow_the_layout(peer: CapturingPeer, ts: dict[str, Any]) -> None:
    w = register_worker(peer.url, fast_options("layout"))
    try:
        assert w.wait_until_connected(5)
        request = {
            "function_id": "a::b",
            "payload": {"p": 1},
            "timeout_ms": 2000,
            "binding_id": "b1",
            "metadata": {"m": 1},
            "action": {"type": "enqueue", "queue": "q"},
        }
        assert w.trigger(request) == 1  # type: ignore[arg-type]
        w.register_function("py::echo", lambda data: data)
        wait_for(lambda: any('"invocationresult"' in f for f in peer.frames), what="the answer to the peer's call")
    finally:
        w.shutdown()
    order = ts["INVOKE_KEY_ORDER"]
    call = next(json.loads(f) for f in peer.frames if '"a::b"' in f)
    assert list(call)[: len(order)] == order
    assert list(call)[len(order) :] == ["action", "metadata"]
    result = next(json.loads(f) for f in peer.frames if '"invocationresult"' in f)
    assert list(result) == ts["RESULT_KEY_ORDER"]
    assert result == {"type": "invocationresult", "invocation_id": "e1", "function_id": "py::echo", "result": {"x": 1}}
