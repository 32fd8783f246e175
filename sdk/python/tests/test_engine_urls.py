"""Several engine URLs (a cluster): the worker connects to one and moves on when it goes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from svc_sdk import InvalidArgumentError, register_worker
from svc_sdk.reconnect import parse_engine_urls

from .conftest import Engine, fast_options, wait_for


def test_parse_engine_urls() -> None:
    assert parse_engine_urls("ws://a:1") == ["ws://a:1"]
    assert parse_engine_urls(" ws://a:1 , ws://b:2,") == ["ws://a:1", "ws://b:2"]
    assert parse_engine_urls(["ws://a:1", "ws://b:2,ws://c:3"]) == ["ws://a:1", "ws://b:2", "ws://c:3"]
    with pytest.raises(ValueError, match="no engine URL"):
        parse_engine_urls(" , ")


def test_a_url_that_is_not_ws_is_refused_by_register_worker() -> None:
    # Before, websockets refused it in the connection's thread: a traceback, and a process that
    # exited 0 without ever connecting.
    expected = r"cannot connect to the engine at 'localhost:49134': .*scheme isn't ws or wss.*ws://localhost:49134"
    with pytest.raises(InvalidArgumentError, match=expected) as e:
        register_worker("localhost:49134", fast_options("schemeless"))
    assert e.value.code == "invalid_argument"
    with pytest.raises(InvalidArgumentError, match="'http://a:1'"):
        register_worker("ws://b:2,http://a:1", fast_options("httpish"))


@pytest.fixture
def second_engine(tmp_path: Path) -> Iterator[Engine]:
    (tmp_path / "second").mkdir()
    eng = Engine(tmp_path / "second")
    eng.start()
    yield eng
    eng.stop()


def test_worker_moves_to_the_next_engine(engine: Engine, second_engine: Engine) -> None:
    # The first URL names a port nobody listens on: the worker skips it.
    dead = "ws://127.0.0.1:1"
    worker = register_worker(f"{dead},{engine.url},{second_engine.url}", fast_options("rover"))
    try:
        worker.register_function("py::where", lambda data: {"ok": True})
        assert worker.wait_until_connected(15)
        assert worker._connection.url == engine.url
        assert worker.trigger({"function_id": "py::where", "payload": {}}) == {"ok": True}
        engine.kill()
        # Moves on to the second engine (the dead URL is tried again only after it) and replays.
        wait_for(lambda: worker.connected and worker._connection.url == second_engine.url, timeout=15, what="the move")
        wait_for(
            lambda: "py::where" in str(worker.trigger({"function_id": "engine::functions::list", "payload": {}})),
            what="py::where on the second engine",
        )
        assert worker.trigger({"function_id": "py::where", "payload": {}}) == {"ok": True}
    finally:
        worker.shutdown()
