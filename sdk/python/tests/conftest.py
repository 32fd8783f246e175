"""Fixtures: a real svc engine on port 0 (restartable on the same port), and workers connected to it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from svc_sdk import InitOptions, ReconnectOptions, Worker, register_worker

REPO = Path(__file__).resolve().parents[3]
SVC_BIN = REPO / "bin" / "svc.js"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
READY = re.compile(r"svc engine ready on (ws://\S+)")


def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.fail("node is not on PATH: the engine under test is a Node program")
    return path


class Engine:
    """`svc --config` in a temp dir. `stop()` is SIGTERM (close 1012, "service restart", to every worker)."""

    def __init__(self, workdir: Path, engine_settings: str = "") -> None:
        self.workdir = workdir
        #: Extra lines under `engine:` in config.yaml, e.g. "  invocation_timeout_ms: 400\n".
        self.engine_settings = engine_settings
        self.port = 0
        self.url = ""
        self.proc: subprocess.Popen[str] | None = None
        self.output: list[str] = []
        #: Appended to config.yaml (e.g. a `workers:` block the engine starts).
        self.extra_config = ""
        #: The environment the engine starts with; None inherits the test's at start().
        self.env: dict[str, str] | None = None

    def start(self) -> None:
        if not (REPO / "dist" / "src" / "cli" / "commands").is_dir():
            pytest.fail(f"the engine is not built: run `npm run build` in {REPO}")
        config = self.workdir / "config.yaml"
        config.write_text(f"engine:\n  host: 127.0.0.1\n  port: {self.port}\n{self.engine_settings}{self.extra_config}")
        self.proc = subprocess.Popen(
            [node(), str(SVC_BIN), "--config", str(config)],
            cwd=self.workdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
        )
        deadline = time.monotonic() + 20
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.output.append(line)
            match = READY.search(line)
            if match:
                self.url = match.group(1)
                self.port = int(self.url.rsplit(":", 1)[1])
                # keep draining so the engine never blocks on a full pipe
                threading.Thread(target=self._drain, daemon=True).start()
                return
        self.stop()
        pytest.fail("engine did not start:\n" + "".join(self.output))

    def _drain(self) -> None:
        proc = self.proc
        if proc is None or proc.stdout is None:
            return
        for line in proc.stdout:
            self.output.append(line)

    def kill(self) -> None:
        """Die without closing anything: workers see their sockets drop, not a close frame."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        """Stop, then start again on the same port so workers reconnect to the same URL."""
        self.stop()
        self.start()

    def cli(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [node(), str(SVC_BIN), *args, "--address", self.url],
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _environment() -> dict[str, str]:
    """os.environ but PYTEST_CURRENT_TEST, which pytest changes for every test and phase."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


class _SpareEngine:
    """The next test's `engine`, started in the background while the current test runs.

    Starting `svc --config` takes about a second of CPU (node loading the engine), most of a short
    test's time; every test still gets an engine of its own that nothing else touched, started with
    the default config in a directory of its own. A spare started under another environment than
    the test's (a fixture's monkeypatch.setenv before `engine`) is not used: the test gets an
    engine started then, as before.
    """

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.engine: Engine | None = None
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        eng = Engine(self.factory.mktemp("engine"))
        eng.env = _environment()
        self.engine, self.error = eng, None

        def run() -> None:
            try:
                eng.start()
            except BaseException as error:  # pytest.fail is an OutcomeException, not an Exception
                self.error = error

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def take(self) -> Engine | None:
        """The spare, once ready, if it started under this environment; then the next one starts."""
        eng, thread = self.engine, self.thread
        self.engine = self.thread = None
        if eng is not None and thread is not None:
            thread.join()
            if self.error is not None or eng.env != _environment():
                eng.stop()
                eng = None
            else:
                eng.env = None  # a restart() in the test starts it under the test's environment, as before
        else:
            eng = None
        self.start()
        return eng

    def close(self) -> None:
        if self.thread is not None:
            self.thread.join()
        if self.engine is not None:
            self.engine.stop()


@pytest.fixture(scope="session")
def _spare_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_SpareEngine]:
    spare = _SpareEngine(tmp_path_factory)
    yield spare
    spare.close()


@pytest.fixture
def engine(tmp_path: Path, _spare_engine: _SpareEngine) -> Iterator[Engine]:
    eng = _spare_engine.take()
    if eng is None:
        eng = Engine(tmp_path)
        eng.start()
    yield eng
    eng.stop()


def fast_options(name: str, **overrides: object) -> InitOptions:
    """Test workers: no signal handlers (pytest owns the process), quick reconnects."""
    opts: dict[str, object] = {
        "worker_name": name,
        "handle_signals": False,
        "reconnect": ReconnectOptions(initial_delay_ms=100, max_delay_ms=500),
    }
    opts.update(overrides)
    return InitOptions(**opts)  # type: ignore[arg-type]


WorkerFactory = Callable[..., Worker]


@pytest.fixture
def make_worker(engine: Engine) -> Iterator[WorkerFactory]:
    """Connected workers, shut down after the test. make_worker("name", **InitOptions fields)."""
    made: list[Worker] = []

    def make(name: str, url: str | None = None, **overrides: object) -> Worker:
        worker = register_worker(url or engine.url, fast_options(name, **overrides))
        made.append(worker)
        assert worker.wait_until_connected(10), f"worker {name} did not connect to {engine.url}"
        return worker

    yield make
    for worker in made:
        worker.shutdown()


def wait_for(predicate: Callable[[], bool], timeout: float = 10, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def python_env() -> dict[str, str]:
    """Environment for child Python processes: unbuffered, and able to import svc_sdk."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env
