"""An unmodified iii-sdk (PyPI, the newest pinned release) HTTP worker streams through svc-http with
`streaming: all`, as on iii: its payload's `request_body` and `response` refs become iii-sdk's
ChannelReader/ChannelWriter; it reads the upload, sends set_status/set_headers text frames, then
the body (tests/fixtures/iii_http_stream_worker.py)."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Engine
from .test_http_streaming import _free_port, _status, sse_events
from .test_iii_compat import run_iii_fixture


@pytest.fixture
def http_engine_all(tmp_path: Path) -> Iterator[tuple[Engine, int]]:
    port = _free_port()
    (tmp_path / "http").mkdir()
    eng = Engine(tmp_path / "http")
    eng.extra_config = (
        "workers:\n  - name: svc-http\n    builtin: svc-http\n"
        f"    config: {{port: {port}, request_log: false, streaming: all}}\n"
    )
    eng.start()
    yield eng, port
    eng.stop()


@pytest.fixture
def iii_http_worker(http_engine_all: tuple[Engine, int]) -> Iterator[subprocess.Popen[str]]:
    yield from run_iii_fixture(http_engine_all[0], "iii_http_stream_worker.py")


def _wait_served(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _status(port, "GET", "/iii/plain") == 200 and _status(port, "GET", "/iii/ticks") == 200:
            return
        time.sleep(0.2)
    pytest.fail("svc-http did not serve the iii-sdk worker's routes within 30 s")


def test_iii_sdk_http_handlers_stream_through_svc_http(
    http_engine_all: tuple[Engine, int], iii_http_worker: subprocess.Popen[str]
) -> None:
    _, port = http_engine_all
    _wait_served(port)

    # Upload read from request_body, answered with set_status/set_headers and body chunks.
    body = os.urandom(3 * 1024 * 1024 + 7)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/iii/echo", body=body, headers={"content-type": "application/octet-stream"})
    response = conn.getresponse()
    assert response.status == 201
    assert response.getheader("content-type") == "application/octet-stream"
    assert response.getheader("x-sha256") == hashlib.sha256(body).hexdigest()
    assert response.getheader("transfer-encoding") == "chunked"
    echoed = response.read()
    conn.close()
    assert hashlib.sha256(echoed).hexdigest() == hashlib.sha256(body).hexdigest()

    # Server-sent events reach the client as they are written, 50 ms apart.
    events, arrivals = sse_events(port, "/iii/ticks")
    assert events == [f"data: {i}" for i in range(10)]
    assert len(arrivals) >= 5, arrivals
    assert arrivals[-1] - arrivals[0] >= 0.2, arrivals

    # A handler returning an envelope answers as on any route.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/iii/plain")
    response = conn.getresponse()
    assert response.status == 200
    assert json.loads(response.read()) == {"plain": True, "method": "GET"}
    conn.close()

    # iii_helpers' HttpResponse model, which iii-sdk sends by its alias (statusCode), keeps its status.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/iii/model")
    response = conn.getresponse()
    assert response.status == 202
    assert response.getheader("x-model") == "yes"
    assert json.loads(response.read()) == {"model": True}
    conn.close()
