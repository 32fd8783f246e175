"""Every pinned iii-sdk release (tests/iii_sdks.py), unmodified and with telemetry on, against svc.

One engine per release and scenario group, reused between the cases that do not stop it; the venvs
are installed once per machine. docs/iii-compatibility.md lists what these check.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import FIXTURES, Engine, python_env, wait_for
from .iii_sdks import III_SDK_VERSIONS, iii_python


class IiiWorker:
    """fixtures/iii_matrix_worker.py in the venv of one iii-sdk release; its JSON lines, read as they come."""

    def __init__(self, version: str, url: str) -> None:
        self.version = version
        self.proc = subprocess.Popen(
            [str(iii_python(version)), str(FIXTURES / "iii_matrix_worker.py"), url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=python_env(),
        )
        first = self.next_line(timeout=40)
        if first.get("kind") != "ready":
            self.stop()
            pytest.fail(f"iii-sdk {version} worker did not start: {first}")

    def next_line(self, timeout: float = 10) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the fixture prints one line per event, flushed
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            pytest.fail(f"iii-sdk {self.version} worker ended: {err[-2000:]}")
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def stop(self) -> None:
        self.proc.kill()  # iii-sdk's own threads can outlive SIGTERM; nothing of ours to end cleanly
        self.proc.wait(10)


@pytest.fixture(params=III_SDK_VERSIONS)
def iii_version(request: pytest.FixtureRequest) -> str:
    version: str = request.param
    iii_python(version)  # installed before the engine starts, so no engine waits on pip
    return version


def echo_answers(engine: Engine, version: str, timeout: float = 30) -> None:
    """matrix::echo, called through `svc trigger`, answers from the iii worker within `timeout`."""

    def answered() -> bool:
        proc = engine.cli("trigger", "matrix::echo", "n=1", timeout=10)
        return proc.returncode == 0 and json.loads(proc.stdout) == {"echo": {"n": 1}, "sdk": version}

    wait_for(answered, timeout=timeout, what=f"matrix::echo of iii-sdk {version} to answer")


def test_reconnects_after_sigterm_and_after_kill(iii_version: str, tmp_path: Path) -> None:
    """A graceful stop closes with 1012, which every release reconnects after (0.22.1 does not after 1001)."""
    engine = Engine(tmp_path)
    engine.start()
    worker = IiiWorker(iii_version, engine.url)
    try:
        echo_answers(engine, iii_version)
        engine.restart()  # SIGTERM, then the same port again
        echo_answers(engine, iii_version)
        engine.kill()  # kill -9: the socket drops without a close frame
        engine.start()
        echo_answers(engine, iii_version)
    finally:
        worker.stop()
        engine.stop()


@pytest.fixture
def matrix_engine(tmp_path: Path) -> Iterator[Engine]:
    engine = Engine(tmp_path)
    engine.start()
    yield engine
    engine.stop()
