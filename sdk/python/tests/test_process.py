"""A worker script as a user runs it: it stays up after its last line, and stops cleanly on a signal."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from svc_sdk.options import EVENT_LOOPS

from .conftest import Engine, WorkerFactory, python_env, wait_for

SCRIPT = """
import sys
from svc_sdk import register_worker, InitOptions, Logger

worker = register_worker(sys.argv[1], InitOptions(worker_name="script-worker"))
worker.register_function("script::ping", lambda data: "pong")
Logger().info("registered")
if len(sys.argv) > 2:
    raise RuntimeError("crash after registering")
"""


def _sigint_as_in_a_terminal() -> None:
    """Runs in the child before exec. A test run started in the background (`cmd &` in a script, as CI
    runners may do) has SIGINT ignored, and children inherit that; the SDK rightly leaves an ignored
    SIGINT alone, so the worker would not see the Ctrl-C these tests send. Give it the disposition
    a worker started from a terminal has."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(tmp_path: Path, engine: Engine, *extra: str) -> subprocess.Popen[str]:
    script = tmp_path / "worker.py"
    script.write_text(SCRIPT)
    return subprocess.Popen(
        [sys.executable, str(script), engine.url, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=python_env(),
        preexec_fn=_sigint_as_in_a_terminal,
    )


def _functions(w: object) -> str:
    return str(w.trigger({"function_id": "engine::functions::list", "payload": {}}))  # type: ignore[attr-defined]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_worker_stays_up_then_stops_cleanly_on_signal(
    tmp_path: Path, engine: Engine, make_worker: WorkerFactory, sig: signal.Signals
) -> None:
    proc = _start(tmp_path, engine)
    caller = make_worker("observer")
    wait_for(lambda: "script::ping" in _functions(caller), what="the script's function")
    assert proc.poll() is None, "the worker exited after its last line"
    assert caller.trigger({"function_id": "script::ping", "payload": {}}) == "pong"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    wait_for(lambda: "script::ping" not in _functions(caller), what="the engine to drop the function")


def test_uncaught_exception_in_the_script_ends_the_worker(tmp_path: Path, engine: Engine) -> None:
    proc = _start(tmp_path, engine, "crash")
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 1
    assert "RuntimeError: crash after registering" in err


@pytest.mark.parametrize("event_loop", EVENT_LOOPS)
def test_script_worker_reconnects_by_host_name_after_its_last_line(
    tmp_path: Path, engine: Engine, make_worker: WorkerFactory, event_loop: str
) -> None:
    # asyncio's own loop resolves host names in its default executor: this must still work once the
    # interpreter is past the script's end (stock executors refuse work then). uvloop resolves them
    # in libuv's threads, so only the asyncio run tests the executor.
    script = tmp_path / "worker.py"
    script.write_text(SCRIPT)
    url = engine.url.replace("127.0.0.1", "localhost")
    proc = subprocess.Popen(
        [sys.executable, str(script), url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**python_env(), "SVC_EVENT_LOOP": event_loop},
        preexec_fn=_sigint_as_in_a_terminal,
    )
    try:
        caller = make_worker("observer")
        wait_for(lambda: "script::ping" in _functions(caller), what="the script's function")
        engine.restart()
        wait_for(lambda: caller.connected, timeout=15, what="the observer to reconnect")
        wait_for(lambda: "script::ping" in _functions(caller), timeout=15, what="the script to reconnect")
        assert caller.trigger({"function_id": "script::ping", "payload": {}}) == "pong"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)
    assert proc.returncode == 0
