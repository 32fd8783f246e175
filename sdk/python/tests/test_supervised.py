"""A worker the engine started never outlives that engine, nor serves another one (issue 17, item 4).

The supervisor gives it stdin as a liveness pipe (SVC_LIVENESS_FD=0) and a run secret
(SVC_RUN_SECRET). End-of-file on the pipe, or the engine refusing the secret (`stale_worker`,
close 4410), means its engine is gone: the process exits.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from svc_sdk import register_worker

from .conftest import Engine, WorkerFactory, fast_options, python_env, wait_for

SCRIPT = """
import sys
from svc_sdk import register_worker, InitOptions

worker = register_worker(sys.argv[1], InitOptions(worker_name="supervised-worker"))
worker.register_function("supervised::ping", lambda data: "pong")
"""


def _start(tmp_path: Path, engine: Engine, **env: str) -> subprocess.Popen[str]:
    script = tmp_path / "worker.py"
    script.write_text(SCRIPT)
    return subprocess.Popen(
        [sys.executable, str(script), engine.url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**python_env(), **env},
    )


def _registered(caller: object) -> bool:
    return "supervised::ping" in str(caller.trigger({"function_id": "engine::functions::list", "payload": {}}))  # type: ignore[attr-defined]


def test_end_of_the_liveness_pipe_ends_the_process(tmp_path: Path, engine: Engine, make_worker: WorkerFactory) -> None:
    proc = _start(tmp_path, engine, SVC_LIVENESS_FD="0")
    caller = make_worker("observer")
    wait_for(lambda: _registered(caller), what="the worker's function")
    assert proc.stdin is not None
    started = time.monotonic()
    proc.stdin.close()  # what the kernel does when the engine process dies
    proc.wait(15)
    assert time.monotonic() - started < 12
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert "liveness pipe on stdin closed" in err, err
    assert "Traceback" not in err, err
    wait_for(lambda: not _registered(caller), what="the engine to drop the function")


def test_without_the_variable_stdin_is_not_watched(tmp_path: Path, engine: Engine, make_worker: WorkerFactory) -> None:
    proc = _start(tmp_path, engine)
    try:
        caller = make_worker("observer")
        wait_for(lambda: _registered(caller), what="the worker's function")
        assert proc.stdin is not None
        proc.stdin.close()
        time.sleep(1.5)
        assert proc.poll() is None, "a worker run by hand must not exit when its stdin closes"
    finally:
        proc.kill()
        proc.wait()


def test_a_run_secret_of_another_engine_run_ends_the_process(tmp_path: Path, engine: Engine) -> None:
    proc = _start(tmp_path, engine, SVC_RUN_SECRET="0123456789ab.secret-of-an-engine-that-is-gone")
    _, err = proc.communicate(timeout=15)
    assert "refused this worker: This connection presents the run secret of engine run 0123456789ab" in err, err
    assert "is not the engine run that started this worker" in err, err


def test_a_refused_run_secret_given_in_code_stops_the_worker_for_good(engine: Engine) -> None:
    worker = register_worker(engine.url, fast_options("stale", run_secret="0123456789ab.not-this-run"))
    try:
        assert worker._stopped.wait(10), "the worker kept reconnecting"
        assert not worker.connected
        assert worker._connection.stale is not None
        assert "engine run 0123456789ab" in worker._connection.stale
    finally:
        worker.shutdown()
