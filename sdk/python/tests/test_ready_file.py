"""The ready file an orchestrator's exec probe reads (ready_file.py; the TypeScript SDK's twin is
test/sdk/ready-file.test.ts): `ready <name>` while connected, `not ready: ...` while the engine is
away, touched while ready, gone when the worker stops; a path that cannot be written is logged once
and the worker works on."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from svc_sdk import ready_file as ready_file_module
from svc_sdk import register_worker

from .conftest import Engine, fast_options, wait_for


def read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return "<none>"


def test_says_ready_while_connected_and_goes_with_the_worker(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ready_file_module, "REFRESH_S", 0.1)
    path = tmp_path / "ready"
    monkeypatch.setenv("SVC_READY_FILE", str(path))
    w = register_worker(engine.url, fast_options("ready-py"))
    try:
        w.register_function("ready::echo", lambda data: data)
        assert w.wait_until_connected(10)
        wait_for(lambda: read(path) == "ready ready-py\n", what="the ready line")
        # Touched while ready: an old time is replaced by a fresh one.
        os.utime(path, (1_000_000, 1_000_000))
        wait_for(lambda: path.stat().st_mtime > 1_000_000, what="the file touched")
        engine.kill()
        wait_for(lambda: read(path) == "not ready: reconnecting\n", what="not ready once the engine is gone")
        engine.start()
        wait_for(lambda: read(path) == "ready ready-py\n", timeout=15, what="ready again after the engine is back")
    finally:
        w.shutdown()
    assert not path.exists()
    assert not list(tmp_path.glob("ready.*.tmp")), "no file written aside is left"


def test_a_path_that_cannot_be_written_is_logged_once(
    engine: Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="svc_sdk")
    path = tmp_path / "missing-dir" / "ready"
    w = register_worker(engine.url, fast_options("ready-bad-path", ready_file=str(path)))
    try:
        w.register_function("ready::bad", lambda data: data)
        assert w.wait_until_connected(10)
        assert w.trigger({"function_id": "ready::bad", "payload": {"x": 1}}) == {"x": 1}
    finally:
        w.shutdown()
    warnings = [r.getMessage() for r in caplog.records if "ready file" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert str(path) in warnings[0]


def test_no_file_unless_asked(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVC_READY_FILE", raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    w = register_worker(engine.url, fast_options("no-ready-file"))
    try:
        assert w.wait_until_connected(10)
        assert w.options.ready_file is None
        assert list(cwd.iterdir()) == []
    finally:
        w.shutdown()


def test_a_link_left_where_the_worker_writes_aside_is_not_written_through(engine: Engine, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    path = shared / "ready"
    # The name the worker wrote aside under before (a shared /tmp): guessable from its pid.
    (shared / f"ready.{os.getpid()}.tmp").symlink_to(victim)
    w = register_worker(engine.url, fast_options("ready-link", ready_file=str(path)))
    try:
        assert w.wait_until_connected(10)
        wait_for(lambda: read(path) == "ready ready-link\n", what="the ready line")
    finally:
        w.shutdown()
    assert victim.read_text() == "precious\n", "the file the link points at is untouched"
    assert sorted(p.name for p in shared.iterdir()) == [f"ready.{os.getpid()}.tmp"], "only the link is left"


def test_a_worker_the_engine_refused_for_good_stays_not_ready(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "ready"
    # A run secret no engine run issued: the engine refuses it with stale_worker, which is final;
    # the process lives on without a worker, so the file must not vanish (the probe would ask the engine).
    w = register_worker(engine.url, fast_options("refused", ready_file=str(path), run_secret="bogus-run-secret"))
    try:
        wait_for(lambda: read(path) == "not ready: closed\n", what="not ready: closed")
    finally:
        w.shutdown()
