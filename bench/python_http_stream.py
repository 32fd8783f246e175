"""The Python worker of `node dist/bench/http-stream.js --worker py`: docs/http.md's Python upload and
download handlers on svc_sdk, bound to svc-http's streaming routes.

    python bench/python_http_stream.py <ws-url> <file>   -> prints READY once both routes are bound

POST /upload hashes its `request_body` channel and answers {sha256, bytes}; GET /download streams
<file> into its `response` channel in 256 KiB writes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from typing import Any

from svc_sdk import InitOptions, register_worker


def main() -> None:
    if len(sys.argv) != 3:
        sys.stderr.write("usage: python_http_stream.py <ws-url> <file>\n")
        sys.exit(2)
    url, path = sys.argv[1], sys.argv[2]
    worker = register_worker(url, InitOptions(worker_name="bench-python-http-stream"))

    async def upload(req: dict[str, Any]) -> dict[str, Any]:
        digest, size = hashlib.sha256(), 0
        async for chunk in worker.open_reader(req["request_body"]):
            digest.update(chunk)
            size += len(chunk)
        return {"status_code": 200, "body": {"sha256": digest.hexdigest(), "bytes": size}}

    async def download(req: dict[str, Any]) -> None:
        out = worker.open_writer(req["response"])
        headers = {"content-type": "application/octet-stream"}
        await out.send_text(json.dumps({"type": "set_headers", "headers": headers}))
        # The file is read off the event loop, so other calls keep running while the disk works.
        with await asyncio.to_thread(open, path, "rb") as f:
            while chunk := await asyncio.to_thread(f.read, 256 * 1024):
                await out.write(chunk)
        await out.close()

    worker.register_function("bench::upload", upload)
    worker.register_function("bench::download", download)
    for function_id, api_path, method in (
        ("bench::upload", "/upload", "POST"),
        ("bench::download", "/download", "GET"),
    ):
        config = {"api_path": api_path, "http_method": method, "stream": True}
        worker.register_trigger({"type": "http", "function_id": function_id, "config": config}).wait()
    print("READY", flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
