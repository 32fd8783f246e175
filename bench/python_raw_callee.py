"""The Python callee a user would write without an SDK, for bench/python-worker.ts: one `websockets`
connection, one JSON message per call each way (the Python twin of bench/raw-callee.ts).

    python bench/python_raw_callee.py <ws-url> <function-id>   -> prints READY once a call of its own
                                                                  function went through the server

It registers the function and answers every `invokefunction` ({a, b}) with an `invocationresult`
({c: a + b}); bench/relay.ts routes it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

from websockets.asyncio.client import connect


async def serve(url: str, function_id: str) -> None:
    async with connect(url, compression=None, max_size=None) as ws:
        await ws.send(json.dumps({"type": "registerfunction", "id": function_id}))
        # A call of its own function through the server proves the registration arrived.
        probe_id = f"ready-probe-{os.getpid()}"
        probe = {
            "type": "invokefunction",
            "invocation_id": probe_id,
            "function_id": function_id,
            "data": {"a": 1, "b": 2},
        }
        await ws.send(json.dumps(probe))
        async for raw in ws:
            m = json.loads(raw)
            kind = m.get("type")
            if kind == "invokefunction":
                d = m["data"]
                answer = {
                    "type": "invocationresult",
                    "invocation_id": m["invocation_id"],
                    "function_id": m["function_id"],
                    "result": {"c": d["a"] + d["b"]},
                }
                await ws.send(json.dumps(answer))
            elif kind == "invocationresult" and m.get("invocation_id") == probe_id:
                if m.get("result") != {"c": 3}:
                    sys.exit(f"python_raw_callee: {function_id} returned {m!r}")
                print("READY", flush=True)


def main() -> None:
    if len(sys.argv) != 3:
        sys.stderr.write("usage: python_raw_callee.py <ws-url> <function-id>\n")
        sys.exit(2)
    loop = asyncio.new_event_loop()
    task = loop.create_task(serve(sys.argv[1], sys.argv[2]))
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        loop.run_until_complete(task)
    except asyncio.CancelledError:
        pass


if __name__ == "__main__":
    main()
