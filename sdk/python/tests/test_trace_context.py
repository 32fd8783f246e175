"""W3C trace context through Python workers: a handler's calls carry its traceparent and baggage."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from websockets.asyncio.client import connect

from svc_sdk import current_invocation

from .conftest import Engine, WorkerFactory, wait_for

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
BAGGAGE = "tenant=acme,request.id=r-42"


def _seen() -> dict[str, Any]:
    ctx = current_invocation()
    assert ctx is not None
    return {"traceparent": ctx.traceparent, "baggage": ctx.baggage}


async def _call(url: str, function_id: str) -> Any:
    """A call as an iii or svc client sends it, with traceparent and baggage (a raw WebSocket client)."""
    async with connect(url) as ws:
        frame = {
            "type": "invokefunction",
            "function_id": function_id,
            "invocation_id": "c-1",
            "data": {},
            "traceparent": TRACEPARENT,
            "baggage": BAGGAGE,
        }
        await ws.send(json.dumps(frame))
        while True:
            msg = json.loads(await ws.recv())
            if msg.get("type") == "invocationresult" and msg.get("invocation_id") == "c-1":
                assert msg.get("error") is None, msg
                return msg["result"]


def test_nested_calls_carry_traceparent_and_baggage(engine: Engine, make_worker: WorkerFactory) -> None:
    inner = make_worker("inner-worker")
    inner.register_function("py::inner", lambda _data: _seen())
    outer = make_worker("outer-worker")

    def outer_fn(_data: Any) -> Any:
        return {"outer": _seen(), "inner": outer.trigger({"function_id": "py::inner", "payload": {}})}

    async def outer_async(_data: Any) -> Any:
        return {"outer": _seen(), "inner": await outer.trigger_async({"function_id": "py::inner", "payload": {}})}

    outer.register_function("py::outer", outer_fn)
    outer.register_function("py::outer_async", outer_async)
    fids = ["py::inner", "py::outer", "py::outer_async"]
    wait_for(lambda: _registered(outer, fids), what="functions to be registered")
    for fid in ("py::outer", "py::outer_async"):
        got = asyncio.run(_call(engine.url, fid))
        # Each hop gets the engine's span as its parent, in the caller's trace, with the baggage as sent.
        for hop in (got["outer"], got["inner"]):
            assert hop["baggage"] == BAGGAGE
            assert hop["traceparent"].split("-")[1] == TRACE_ID
        assert got["outer"]["traceparent"] != got["inner"]["traceparent"]


def _registered(w: Any, ids: list[str]) -> bool:
    listed = str(w.trigger({"function_id": "engine::functions::list", "payload": {}}))
    return all(f"'{i}'" in listed for i in ids)
