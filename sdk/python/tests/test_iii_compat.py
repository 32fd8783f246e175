"""An unmodified worker on the published iii-sdk (PyPI) works with our engine and our SDK.

The iii-sdk (the newest pinned release, tests/iii_sdks.py) runs in a venv of its own. Every pinned
release against each scenario: test_iii_matrix.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import FIXTURES, Engine, WorkerFactory, python_env, wait_for
from .iii_sdks import iii_python


@pytest.fixture
def iii_worker(engine: Engine) -> Iterator[subprocess.Popen[str]]:
    yield from run_iii_fixture(engine, "iii_worker.py")


def run_iii_fixture(engine: Engine, script: str) -> Iterator[subprocess.Popen[str]]:
    """Run tests/fixtures/<script> on the published iii-sdk against `engine` until the test ends."""
    python = iii_python()
    env = python_env()
    env["OTEL_ENABLED"] = "false"  # iii's telemetry socket is not part of the protocol under test
    proc = subprocess.Popen(
        [str(python), str(FIXTURES / script), engine.url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        pytest.fail(f"the iii-sdk worker did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
    yield proc
    proc.kill()  # iii-sdk's own threads can outlive SIGTERM; nothing of ours to shut down cleanly here
    proc.wait(10)


def test_iii_sdk_worker_is_called_by_the_cli_and_calls_svc_sdk(
    engine: Engine, make_worker: WorkerFactory, iii_worker: subprocess.Popen[str]
) -> None:
    ours = make_worker("svc-side")
    ours.register_function("py::name", lambda data: {"name": f"user-{data['id']}"})

    def listed() -> bool:
        return "iii::greet" in json.dumps(ours.trigger({"function_id": "engine::functions::list", "payload": {}}))

    wait_for(listed, timeout=20, what="iii::greet to be registered by the iii-sdk worker")
    # svc trigger (CLI) -> iii-sdk worker -> svc-sdk worker
    proc = engine.cli("trigger", "iii::greet", "id=7")
    assert proc.returncode == 0, proc.stderr
    result: Any = json.loads(proc.stdout)
    assert result == {"greeting": "hello user-7", "sdk": "iii"}
    # and from our SDK directly
    assert ours.trigger({"function_id": "iii::greet", "payload": {"id": 8}}) == {
        "greeting": "hello user-8",
        "sdk": "iii",
    }


def test_iii_sdk_enqueue_against_svc_queue(tmp_path: Path) -> None:
    """TriggerAction.Enqueue from the published iii-sdk answers a messageReceiptId, and the job runs."""
    eng = Engine(tmp_path)
    eng.extra_config = "workers:\n  - name: svc-queue\n    builtin: svc-queue\n    config: {queues: {jobs: {}}}\n"
    eng.start()
    python = iii_python()
    env = python_env()
    env["OTEL_ENABLED"] = "false"
    proc: subprocess.Popen[str] | None = None
    try:
        # svc-queue is started by the engine: wait until it serves before the iii worker enqueues.
        def serving() -> bool:
            out = eng.cli("trigger", "queue::list")
            return out.returncode == 0

        wait_for(serving, timeout=30, what="svc-queue to serve")
        proc = subprocess.Popen(
            [str(python), str(FIXTURES / "iii_queue_worker.py"), eng.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        lines = [proc.stdout.readline().split(), proc.stdout.readline().split()]
        receipt = next((line[1] for line in lines if line and line[0] == "receipt"), None)
        ran = next((line for line in lines if line and line[0] == "ran"), None)
        assert receipt is not None, f"iii worker printed {lines}"
        assert ran is not None, f"iii worker printed {lines}"
        assert ran == ["ran", receipt, "1", "5"], "the job ran once, with its message id and attempt in the metadata"
    finally:
        if proc is not None:
            proc.kill()
            proc.wait(10)
        eng.stop()
