"""Python and TypeScript workers call each other through the engine, both ways."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from svc_sdk import InvocationError

from .conftest import FIXTURES, REPO, Engine, WorkerFactory, node


@pytest.fixture
def ts_worker(engine: Engine) -> Iterator[subprocess.Popen[str]]:
    if not (REPO / "node_modules" / "svc-sdk" / "dist").is_dir():
        pytest.fail(f"the TypeScript SDK is not built: run `npm run build` in {REPO}")
    proc = subprocess.Popen(
        [node(), str(FIXTURES / "ts_worker.mjs"), engine.url, "ts-fixture"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        pytest.fail(f"the TypeScript worker did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
    yield proc
    proc.terminate()
    proc.wait(10)


def test_python_calls_typescript_and_back(make_worker: WorkerFactory, ts_worker: subprocess.Popen[str]) -> None:
    w = make_worker("py-side")

    def double(data: Any) -> Any:
        return {"doubled": data["n"] * 2, "runtime": "python"}

    def fails(data: Any) -> Any:
        raise RuntimeError("python says no")

    w.register_function("py::double", double)
    w.register_function("py::fails", fails)
    # Python -> TypeScript
    assert w.trigger({"function_id": "ts::upper", "payload": {"text": "héllo"}}) == {"text": "HÉLLO", "runtime": "node"}
    # Python -> TypeScript -> Python
    via_ts = w.trigger({"function_id": "ts::call", "payload": {"function_id": "py::double", "payload": {"n": 21}}})
    assert via_ts == {"doubled": 42, "runtime": "python"}
    # errors keep their code and message across both SDKs
    with pytest.raises(InvocationError) as info:
        w.trigger({"function_id": "ts::call", "payload": {"function_id": "py::fails", "payload": {}}})
    assert info.value.code == "invocation_failed"
    assert "python says no" in info.value.message
