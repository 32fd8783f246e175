"""svc-sdk's own spans and Logger lines over OTLP (otel_export.py), against a real OpenTelemetry Collector.

A Python client calls a TypeScript worker (export on by OTEL_TRACES_EXPORTER=otlp), which calls a
Python worker: one trace holds the engine's spans and both SDKs' CLIENT and SERVER spans, linked.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from svc_sdk import Logger
from svc_sdk.otel_export import otel_enabled

from .conftest import FIXTURES, REPO, Engine, WorkerFactory, node, python_env, wait_for


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Collector:
    """svc-otelcol (scripts/build-otelcol.sh) with an OTLP/HTTP receiver, printing what it gets (debug, detailed)."""

    def __init__(self, workdir: Path) -> None:
        built = subprocess.run(["bash", str(REPO / "scripts" / "build-otelcol.sh")], capture_output=True, text=True)
        if built.returncode != 0:
            pytest.fail(f"could not build svc-otelcol:\n{built.stderr}")
        port = _free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        config = workdir / "otelcol.yaml"
        config.write_text(
            "receivers:\n  otlp:\n    protocols:\n"
            f'      http: {{ endpoint: "127.0.0.1:{port}" }}\n'
            "exporters:\n  debug: { verbosity: detailed }\n"
            "service:\n  telemetry: { metrics: { level: none } }\n  pipelines:\n"
            "    traces: { receivers: [otlp], exporters: [debug] }\n"
            "    logs: { receivers: [otlp], exporters: [debug] }\n"
        )
        self.out_path = workdir / "otelcol.out"
        self._out = self.out_path.open("w")
        self.proc = subprocess.Popen(
            [built.stdout.strip().splitlines()[-1], "--config", f"file:{config}"], stdout=self._out, stderr=self._out
        )
        wait_for(lambda: "Everything is ready" in self.output(), 20, "svc-otelcol to start")

    def output(self) -> str:
        return self.out_path.read_text()

    def spans(self) -> list[dict[str, str]]:
        out = []
        for resource in self.output().split("ResourceSpans #")[1:]:
            head, *blocks = re.split(r"\nSpan #\d+\n", resource)
            service = m.group(1) if (m := re.search(r"-> service\.name: Str\(([^)]*)\)", head)) else ""
            for block in blocks:
                m = re.search(r"Trace ID\s*: (\w*)\s+Parent ID\s*: (\w*)\s+ID\s*: (\w*)\s+Name\s*: (.*)", block)
                if m:
                    kind = k.group(1) if (k := re.search(r"Kind\s*: (\w+)", block)) else ""
                    span = {"trace": m[1], "parent": m[2], "id": m[3], "name": m[4].strip()}
                    out.append({**span, "service": service, "kind": kind})
        return out

    def logs(self) -> list[dict[str, str]]:
        out = []
        for resource in self.output().split("ResourceLog #")[1:]:
            head, *blocks = re.split(r"\nLogRecord #\d+\n", resource)
            service = m.group(1) if (m := re.search(r"-> service\.name: Str\(([^)]*)\)", head)) else ""
            for block in blocks:
                body = m.group(1) if (m := re.search(r"Body: \w+\((.*)\)", block)) else ""
                trace = m.group(1) if (m := re.search(r"Trace ID: (\w*)", block)) else ""
                span = m.group(1) if (m := re.search(r"Span ID: (\w*)", block)) else ""
                out.append({"body": body, "trace": trace, "span": span, "service": service})
        return out

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self._out.close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    with tempfile.TemporaryDirectory() as d:
        c = Collector(Path(d))
        yield c
        c.stop()


@pytest.fixture
def otel_env(collector: Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    # The exporters read their endpoint from the environment, as the OpenTelemetry spec says.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    monkeypatch.setenv("OTEL_BLRP_SCHEDULE_DELAY", "100")


def test_python_typescript_python_chain_is_one_trace(
    tmp_path: Path, collector: Collector, otel_env: None, make_worker: WorkerFactory, engine: Engine
) -> None:
    # The engine exports its own spans to the same collector (restarted with engine.telemetry).
    engine.stop()
    engine.engine_settings = (
        f"  telemetry:\n    endpoint: {collector.endpoint}\n    service_name: svc-engine-py\n"
        "    export_interval_ms: 100\n    logs: false\n    metrics: false\n"
    )
    engine.port = 0
    engine.start()
    leaf = make_worker("py-leaf", otel=True)
    logger = Logger(leaf)

    def leaf_fn(data: Any) -> Any:
        logger.warn("leaf ran", {"n": 1})
        return {"ok": True}

    leaf.register_function("py::leaf", leaf_fn)
    client = make_worker("py-client", otel=True)
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "otlp"}
    ts = subprocess.Popen(
        [node(), str(FIXTURES / "ts_worker.mjs"), engine.url, "ts-otel"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert ts.stdout is not None
        assert ts.stdout.readline().strip() == "ready"
        wait_for(lambda: _answers(client), 10, "py::leaf to be registered")
        assert client.trigger({"function_id": "ts::call", "payload": {"function_id": "py::leaf", "payload": {}}}) == {
            "ok": True
        }
        wait_for(lambda: any(s["service"] == "py-client" and s["name"] == "ts::call" for s in collector.spans()), 10)
        root = next(s for s in collector.spans() if s["service"] == "py-client" and s["name"] == "ts::call")

        def trace() -> list[dict[str, str]]:
            return [s for s in collector.spans() if s["trace"] == root["trace"]]

        wait_for(lambda: len(trace()) == 6, 10, "the six spans of the trace")

        def one(service: str, name: str) -> dict[str, str]:
            found = [s for s in trace() if s["service"] == service and s["name"] == name]
            assert len(found) == 1, (service, name, trace())
            return found[0]

        # py CLIENT → engine ts::call → ts SERVER → ts CLIENT → engine py::leaf → py SERVER
        eng_call, ts_server = one("svc-engine-py", "ts::call"), one("ts-otel", "ts::call")
        ts_client, eng_leaf = one("ts-otel", "py::leaf"), one("svc-engine-py", "py::leaf")
        py_server = one("py-leaf", "py::leaf")
        assert (root["parent"], root["kind"]) == ("", "Client")
        assert eng_call["parent"] == root["id"]
        assert (ts_server["parent"], ts_server["kind"]) == (eng_call["id"], "Server")
        assert (ts_client["parent"], ts_client["kind"]) == (ts_server["id"], "Client")
        assert eng_leaf["parent"] == ts_client["id"]
        assert (py_server["parent"], py_server["kind"]) == (eng_leaf["id"], "Server")

        # The leaf's Logger line, exported by the Python worker, under its SERVER span.
        def lines() -> list[dict[str, str]]:
            return [x for x in collector.logs() if x["service"] == "py-leaf" and x["trace"] == root["trace"]]

        wait_for(lambda: len(lines()) == 1, 10, "the leaf's log line")
        assert (lines()[0]["body"], lines()[0]["span"]) == ("leaf ran", py_server["id"])
    finally:
        ts.terminate()
        ts.wait(10)


def _answers(client: Any) -> bool:
    try:
        client.trigger({"function_id": "py::leaf", "payload": {}, "timeout_ms": 1000})
        return True
    except Exception:
        return False


_CHILD = """
import sys
from svc_sdk import InitOptions, register_worker
w = register_worker(sys.argv[1], InitOptions(worker_name="py-otel-off", handle_signals=False))
w.register_function("off::echo", lambda d: d)
assert w.wait_until_connected(10)
for _ in range(100):
    try:
        r = w.trigger({"function_id": "off::echo", "payload": {"n": 1}, "timeout_ms": 1000})
        break
    except Exception:
        pass
w.shutdown()
print(r, sorted({m.split(".")[0] + "." + m.split(".")[1] for m in sys.modules if m.startswith("opentelemetry.")}))
"""


def test_off_by_default_imports_nothing_of_opentelemetry(engine: Engine, collector: Collector) -> None:
    def run(extra: dict[str, str]) -> str:
        env = {k: v for k, v in python_env().items() if not k.startswith("OTEL_")}
        env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, **extra})
        done = subprocess.run([sys.executable, "-c", _CHILD, engine.url], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    assert run({}) == "{'n': 1} []"
    # The same check sees the packages when export is on (so the empty list means something).
    on = run({"OTEL_TRACES_EXPORTER": "otlp"})
    assert "opentelemetry.sdk" in on, on
    wait_for(lambda: any(s["service"] == "py-otel-off" for s in collector.spans()), 10, "the child's spans")


def test_otel_enabled() -> None:
    assert otel_enabled(None, {}) is False
    assert otel_enabled(None, {"OTEL_TRACES_EXPORTER": "otlp"}) is True
    assert otel_enabled(None, {"OTEL_TRACES_EXPORTER": "console, otlp"}) is True
    assert otel_enabled(None, {"OTEL_TRACES_EXPORTER": "none"}) is False
    assert otel_enabled(None, {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}) is False
    assert otel_enabled(False, {"OTEL_TRACES_EXPORTER": "otlp"}) is False
    assert otel_enabled(True, {}) is True
