"""svc-http streaming routes served by a Python worker (issue 22 part 2), as docs/http.md shows them:
an SSE endpoint whose events arrive one by one, an upload hashed from `request_body`, and a
download streamed from a file. (200 MB each way: `node dist/bench/http-stream.js --worker py`,
bench/RESULTS.md.)"""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from svc_sdk import Worker

from .conftest import Engine, WorkerFactory, wait_for


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def http_engine(tmp_path: Path) -> Iterator[tuple[Engine, int]]:
    port = _free_port()
    (tmp_path / "http").mkdir()
    eng = Engine(tmp_path / "http")
    eng.extra_config = (
        f"workers:\n  - name: svc-http\n    builtin: svc-http\n    config: {{port: {port}, request_log: false}}\n"
    )
    eng.start()
    yield eng, port
    eng.stop()


def _serve(worker: Worker, download_path: Path) -> None:
    async def events(req: dict[str, Any]) -> None:
        out = worker.open_writer(req["response"])
        headers = {"content-type": "text/event-stream"}
        await out.send_text(json.dumps({"type": "set_headers", "headers": headers}))
        for i in range(100):
            await out.write(f"data: event {i}\n\n")
            await asyncio.sleep(0.01)
        await out.close()
        return None

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
        with await asyncio.to_thread(open, download_path, "rb") as f:
            while chunk := await asyncio.to_thread(f.read, 256 * 1024):
                await out.write(chunk)
        await out.close()
        return None

    worker.register_function("py::events", events)
    worker.register_function("py::upload", upload)
    worker.register_function("py::download", download)
    routes = (("py::events", "/events", "GET"), ("py::upload", "/upload", "POST"), ("py::download", "/download", "GET"))
    for function_id, path, method in routes:
        config = {"api_path": path, "http_method": method, "stream": True}
        worker.register_trigger({"type": "http", "function_id": function_id, "config": config})


def _status(port: int, method: str, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=b"" if method == "POST" else None)
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        conn.close()


def sse_events(port: int, path: str) -> tuple[list[str], list[float]]:
    """GET an SSE endpoint (checking 200 and text/event-stream): its events, and when each read of
    the body returned, in seconds since the request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    started = time.monotonic()
    conn.request("GET", path)
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("content-type") == "text/event-stream"
    arrivals: list[float] = []
    text = b""
    while chunk := response.read1(65536):
        arrivals.append(time.monotonic() - started)
        text += chunk
    conn.close()
    return [e for e in text.decode().split("\n\n") if e], arrivals


def test_python_sse_upload_and_download_through_svc_http(
    http_engine: tuple[Engine, int], make_worker: WorkerFactory, tmp_path: Path
) -> None:
    eng, port = http_engine
    download = os.urandom(8 * 1024 * 1024 + 3)
    (tmp_path / "big.bin").write_bytes(download)
    _serve(make_worker("py-http-stream", url=eng.url), tmp_path / "big.bin")
    wait_for(lambda: _status(port, "GET", "/events") == 200, timeout=30, what="svc-http to serve /events")
    wait_for(lambda: _status(port, "PUT", "/download") == 405, timeout=30, what="svc-http to bind /download")

    events, arrivals = sse_events(port, "/events")
    assert len(events) == 100
    assert events[0] == "data: event 0"
    assert events[99] == "data: event 99"
    # Sent 10 ms apart: many reads spread over the second of sending, not one answer at the end.
    assert len(arrivals) >= 20, arrivals
    assert arrivals[-1] - arrivals[0] >= 0.5, arrivals

    body = os.urandom(20 * 1024 * 1024 + 5)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/upload", body=body, headers={"content-type": "application/octet-stream"})
    response = conn.getresponse()
    assert response.status == 200
    assert json.loads(response.read()) == {"sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}
    conn.close()

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/download")
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("content-type") == "application/octet-stream"
    assert response.getheader("transfer-encoding") == "chunked"
    got = response.read()
    conn.close()
    assert len(got) == len(download)
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(download).hexdigest()
