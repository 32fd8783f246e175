"""Logger lines reach stderr and the engine, with the worker name and the invocation they belong to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svc_sdk import Logger
from svc_sdk.connection import Session

from .conftest import WorkerFactory, wait_for


def test_log_lines_reach_the_engine(make_worker: WorkerFactory, capsys: pytest.CaptureFixture[str]) -> None:
    w = make_worker("logging-worker")
    logger = Logger()

    def handler(data: Any) -> Any:
        logger.info("adding numbers", {"a": data["a"]})
        logger.warn("careful")
        return data["a"]

    w.register_function("py::logs", handler)
    assert w.trigger({"function_id": "py::logs", "payload": {"a": 5}}) == 5
    logger.error("outside any handler", {"not json": {1, 2}})

    def lines() -> list[dict[str, Any]]:
        result = w.trigger({"function_id": "engine::logs::list", "payload": {"worker": "logging-worker"}})
        return [e for e in result["logs"] if e.get("source") == "worker"]

    wait_for(lambda: len(lines()) >= 3, what="three log lines at the engine")
    info, warn, error = lines()[:3]
    assert (info["level"], info["message"], info["data"]) == ("info", "adding numbers", {"a": 5})
    assert info["worker_name"] == "logging-worker"
    assert info["function_id"] == "py::logs"
    assert info.get("invocation_id")
    assert (warn["level"], warn["message"]) == ("warn", "careful")
    assert error["level"] == "error"
    assert error["function_id"] is None  # every listed line has every field (docs/protocol.md)
    assert isinstance(error["data"]["not json"], str)  # unencodable data is stringified, not dropped
    err = capsys.readouterr().err
    # The data as compact JSON, as the TypeScript SDK prints it (docs/console.md).
    assert 'INFO  [logging-worker] py::logs adding numbers {"a":5}' in err


def test_lines_are_batched_per_loop_iteration_and_arrive_in_order(
    make_worker: WorkerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    send_text = Session.send_text

    async def recording(self: Session, text: str) -> None:
        sent.append(text)
        await send_text(self, text)

    monkeypatch.setattr(Session, "send_text", recording)
    w = make_worker("batching-worker")
    logger = Logger(w)
    n = 100

    async def burst(data: Any) -> Any:  # runs on the worker's loop: its lines share one iteration
        for i in range(data["n"]):
            logger.info(f"burst {i}", {"i": i})
        return data["n"]

    def threaded(data: Any) -> Any:  # runs in a handler thread: lines leave as the loop picks them up
        for i in range(data["n"]):
            logger.debug(f"threaded {i}", {"i": i, "nested": {"ok": [i]}})
        return data["n"]

    w.register_function("py::burst", burst)
    w.register_function("py::threaded", threaded)
    assert w.trigger({"function_id": "py::burst", "payload": {"n": n}}) == n
    assert w.trigger({"function_id": "py::threaded", "payload": {"n": n}}) == n

    def stored(text: str) -> list[dict[str, Any]]:
        result = w.trigger(
            {"function_id": "engine::logs::list", "payload": {"worker": "batching-worker", "text": text, "limit": 1000}}
        )
        return [e for e in result["logs"] if e.get("source") == "worker"]

    wait_for(lambda: len(stored("burst ")) >= n and len(stored("threaded ")) >= n, what="every line at the engine")
    burst_lines = stored("burst ")
    assert [e["message"] for e in burst_lines] == [f"burst {i}" for i in range(n)]
    assert [e["data"] for e in burst_lines] == [{"i": i} for i in range(n)]
    assert {(e["level"], e["function_id"], e["invocation_id"]) for e in burst_lines} == {
        ("info", "py::burst", burst_lines[0]["invocation_id"])
    }
    threaded_lines = stored("threaded ")
    assert [e["message"] for e in threaded_lines] == [f"threaded {i}" for i in range(n)]
    assert threaded_lines[-1]["data"] == {"i": n - 1, "nested": {"ok": [n - 1]}}
    assert all(e["level"] == "debug" and e["function_id"] == "py::threaded" for e in threaded_lines)

    # On the wire: engine::log::batch calls only, never a frame per line; the async handler's 100
    # lines went in one call.
    assert not any('"engine::log::info"' in t or '"engine::log::debug"' in t for t in sent)
    batches = [json.loads(t)["data"]["lines"] for t in sent if '"engine::log::batch"' in t]
    burst_batches = [b for b in batches if any(str(row[1]).startswith("burst ") for row in b)]
    assert len(burst_batches) == 1
    assert len(burst_batches[0]) == n
    rows = [row for b in batches for row in b if str(row[1]).startswith(("burst ", "threaded "))]
    assert len(rows) == 2 * n
