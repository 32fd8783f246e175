"""Logger lines reach stderr and the engine, with the worker name and the invocation they belong to."""

from __future__ import annotations

from typing import Any

import pytest

from svc_sdk import Logger

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
    assert "function_id" not in error
    assert isinstance(error["data"]["not json"], str)  # unencodable data is stringified, not dropped
    err = capsys.readouterr().err
    assert "INFO  [logging-worker] py::logs adding numbers" in err
