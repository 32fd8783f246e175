"""A Python worker reports its process to the engine (engine::workers::report): CPU, RSS, loop lag."""

from __future__ import annotations

import time
from typing import Any

import pytest

from svc_sdk import InitOptions

from .conftest import WorkerFactory, wait_for


def test_process_metrics_reach_the_engine(make_worker: WorkerFactory) -> None:
    w = make_worker("py-reporter", process_report_interval_ms=200)

    async def spin(data: Any) -> Any:
        # An async handler that never awaits holds the worker's loop: its lag shows in the report.
        # It spins for CPU time, not wall time: on a busy machine the two differ.
        end = time.process_time() + data["ms"] / 1000
        n = 0
        while time.process_time() < end:
            n += 1
        return n

    w.register_function("py::spin", spin)

    def report() -> dict[str, Any] | None:
        workers = w.trigger({"function_id": "engine::workers::list", "payload": {}})["workers"]
        mine = [x for x in workers if x["name"] == "py-reporter"]
        return mine[0]["process"] if mine else None

    wait_for(lambda: report() is not None, what="a process report at the engine")
    first = report()
    assert first is not None
    assert first["rss_bytes"] > 10 * 1024 * 1024
    assert first["cpu_user_seconds"] > 0
    assert first["interval_ms"] == 200
    assert first["heap_used_bytes"] is None

    w.trigger({"function_id": "py::spin", "payload": {"ms": 600}})

    def grew() -> bool:
        p = report()
        assert p is not None
        cpu = p["cpu_user_seconds"] + p["cpu_system_seconds"]
        before = first["cpu_user_seconds"] + first["cpu_system_seconds"]
        # The lag is sampled every 250 ms: a 600 ms block shows as at least 350 ms.
        return cpu >= before + 0.4 and (p["event_loop_lag_max_ms"] or 0) >= 300

    wait_for(grew, timeout=5, what="CPU and loop lag grown after a busy handler")


def test_process_reports_can_be_turned_off(make_worker: WorkerFactory) -> None:
    w = make_worker("py-quiet", process_report_interval_ms=0)
    time.sleep(0.5)
    workers = w.trigger({"function_id": "engine::workers::list", "payload": {}})["workers"]
    assert [x["process"] for x in workers if x["name"] == "py-quiet"] == [None]


def test_process_report_interval_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_PROCESS_REPORT_MS", "250")
    assert InitOptions(worker_name="w").process_report_interval_ms == 250
    monkeypatch.setenv("SVC_PROCESS_REPORT_MS", "soon")
    assert InitOptions(worker_name="w").process_report_interval_ms == 5000
    with pytest.raises(ValueError, match="process_report_interval_ms must be >= 0"):
        InitOptions(worker_name="w", process_report_interval_ms=-1)
