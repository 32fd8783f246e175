"""The Python callee of bench/python-worker.ts: an ordinary svc_sdk worker serving `math::add`.

    python bench/python_callee.py <ws-url> sync|async   -> prints READY once a call of its own
                                                          function went through the engine

`sync` registers a plain `def` (what the quickstart's math-worker and most users write: it runs in
the SDK's handler thread pool); `async` registers an `async def` (runs on the worker's event loop).
Both answer {a, b} with {c: a + b}, like bench/callee.ts.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from svc_sdk import InitOptions, register_worker


def add(data: dict[str, Any]) -> dict[str, Any]:
    return {"c": data["a"] + data["b"]}


async def add_async(data: dict[str, Any]) -> dict[str, Any]:
    return {"c": data["a"] + data["b"]}


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[2] not in ("sync", "async"):
        sys.stderr.write("usage: python_callee.py <ws-url> sync|async\n")
        sys.exit(2)
    url, mode = sys.argv[1], sys.argv[2]
    # handle_signals (default): SIGTERM closes the connection and exits 0.
    worker = register_worker(url, InitOptions(worker_name="bench-python-callee"))
    worker.register_function("math::add", add if mode == "sync" else add_async)
    if not worker.wait_until_connected(10):
        sys.exit("python_callee: not connected to the engine within 10 s")
    deadline = time.monotonic() + 10
    while True:
        try:
            result = worker.trigger({"function_id": "math::add", "payload": {"a": 1, "b": 2}, "timeout_ms": 1000})
            if result != {"c": 3}:
                sys.exit(f"python_callee: math::add returned {result!r}")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    print("READY", flush=True)


if __name__ == "__main__":
    main()
