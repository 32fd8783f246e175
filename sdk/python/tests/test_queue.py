"""svc-queue from the Python SDK: TriggerAction.Enqueue, the attempt in current_invocation().metadata, publish."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from svc_sdk import InvocationError, TriggerAction, current_invocation, publish

from .conftest import Engine, WorkerFactory, wait_for

QUEUE_CONFIG = """workers:
  - name: svc-queue
    builtin: svc-queue
    config:
      queues:
        jobs: {max_attempts: 2, backoff_ms: 50}
"""


def serving(engine_url: str, make_worker: WorkerFactory) -> None:
    probe = make_worker("queue-probe", url=engine_url)

    def up() -> bool:
        try:
            probe.trigger({"function_id": "queue::list", "payload": {}, "timeout_ms": 1000})
            return True
        except InvocationError:
            return False

    wait_for(up, timeout=30, what="svc-queue (started by the engine) to serve")


@pytest.fixture
def queue_engine(tmp_path: Path) -> Iterator[Engine]:
    (tmp_path / "queue").mkdir()
    eng = Engine(tmp_path / "queue")
    eng.extra_config = QUEUE_CONFIG
    eng.start()
    yield eng
    eng.stop()


def test_enqueue_runs_the_job_with_its_attempt_in_metadata(queue_engine: Engine, make_worker: WorkerFactory) -> None:
    serving(queue_engine.url, make_worker)
    seen: list[Any] = []
    attempts: list[int] = []

    def job(data: Any) -> None:
        ctx = current_invocation()
        assert ctx is not None
        attempts.append(ctx.metadata["attempt"])
        if ctx.metadata["attempt"] == 1:
            raise RuntimeError("first run fails")
        seen.append((data, ctx.metadata))

    worker = make_worker("py-jobs", url=queue_engine.url)
    worker.register_function("py::job", job)
    action = TriggerAction.Enqueue(queue="jobs")
    receipt = worker.trigger({"function_id": "py::job", "payload": {"n": 1}, "action": action, "metadata": {"t": 1}})
    assert isinstance(receipt["messageReceiptId"], str)
    wait_for(lambda: len(seen) == 1, what="the job to run again after its first run failed")
    data, metadata = seen[0]
    assert data == {"n": 1}
    assert metadata["message_id"] == receipt["messageReceiptId"]
    assert metadata["metadata"] == {"t": 1}
    assert attempts == [1, 2]
    with pytest.raises(InvocationError) as err:
        worker.trigger({"function_id": "py::job", "payload": {}, "action": TriggerAction.Enqueue(queue="nope")})
    assert err.value.code == "enqueue_error"
    assert worker.trigger({"function_id": "py::job", "payload": {}, "action": TriggerAction.Void()}) is None


def test_publish_reaches_a_durable_subscriber(queue_engine: Engine, make_worker: WorkerFactory) -> None:
    serving(queue_engine.url, make_worker)
    got: list[Any] = []
    sub = make_worker("py-sub", url=queue_engine.url)
    sub.register_function("py::on_order", lambda data: got.append(data))
    assert (
        sub.register_trigger(
            {"type": "durable:subscriber", "function_id": "py::on_order", "config": {"topic": "orders"}}
        ).wait(10)
        == "active"
    )
    result = publish(sub, "orders", {"id": 3})
    assert result["copies"] == 1
    assert result["topic"] == "orders"
    wait_for(lambda: got == [{"id": 3}], what="the subscriber to get its copy")
    # Without data: the subscriber gets {}, as a call without payload does (docs/queues.md).
    assert publish(sub, "orders")["copies"] == 1
    wait_for(lambda: got == [{"id": 3}, {}], what="the subscriber to get the copy without data")
