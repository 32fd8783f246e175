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

from svc_sdk import InvocationError, register_worker

from .conftest import FIXTURES, Engine, fast_options, python_env, wait_for
from .iii_sdks import III_SDK_VERSIONS, iii_python


class IiiWorker:
    """fixtures/iii_matrix_worker.py in the venv of one iii-sdk release; its JSON lines, read as they come."""

    def __init__(self, version: str, url: str, *args: str, script: str = "iii_matrix_worker.py") -> None:
        self.version = version
        env = python_env()
        # 0.22.1 sends telemetry to $III_URL (default ws://localhost:49134), not to the worker's
        # address; an iii program on another port sets it (docs/iii-compatibility.md).
        env["III_URL"] = url
        self.proc = subprocess.Popen(
            [str(iii_python(version)), str(FIXTURES / script), url, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
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


@pytest.fixture(scope="module")
def state_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """One engine with svc-state, shared by every release's state and payload cases (a scope each)."""
    engine = Engine(tmp_path_factory.mktemp("state"))
    engine.extra_config = "workers:\n  - name: svc-state\n    builtin: svc-state\n"
    engine.start()
    wait_for(lambda: engine.cli("trigger", "state::list_groups").returncode == 0, timeout=30, what="svc-state to serve")
    yield engine
    engine.stop()


def test_state_shapes_and_events_pass_the_sdks_own_models(iii_version: str, state_engine: Engine) -> None:
    """state::list is a flat array of values; events are state:created|updated|deleted (validated by
    iii.state.StateEventData); deleting an absent key answers null and fires state:deleted."""
    scope = f"matrix-{iii_version}"
    worker = IiiWorker(iii_version, state_engine.url, scope)
    try:

        def bound() -> bool:
            proc = state_engine.cli("trigger", "engine::registered-triggers::list", timeout=10)
            return proc.returncode == 0 and "matrix::on_state" in proc.stdout

        wait_for(bound, timeout=30, what="the iii worker's state trigger to be bound")
        proc = state_engine.cli("trigger", "matrix::state", f"scope={scope}")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == {
            "list": [{"n": 1}, 2],
            "deleted": 2,
            "missing": None,
            "model": "StateDeleteResult",
        }
        events = [worker.next_line() for _ in range(4)]
        refused = [e for e in events if e["kind"] != "state_event"]
        assert not refused, f"iii-sdk {iii_version} refused: {refused}"
        # Fired in write order; the SDK runs each handler in a task of its own, so print order may differ.
        seen = sorted(
            (
                (e["event"]["event_type"], e["event"]["key"], e["event"]["old_value"], e["event"]["new_value"])
                for e in events
            ),
            key=json.dumps,
        )
        assert seen == sorted(
            [
                ("state:created", "a", None, {"n": 1}),
                ("state:created", "b", None, 2),
                ("state:deleted", "b", 2, None),
                ("state:deleted", "never-set", None, None),
            ],
            key=json.dumps,
        )
    finally:
        worker.stop()


def test_state_update_is_best_effort_with_literal_paths(iii_version: str, state_engine: Engine) -> None:
    """state::update as iii defines it, with ops built from the SDK's models: a failing op is skipped
    and listed in `errors` (validated by UpdateOpError), and a string path names one first-level field."""
    scope = f"matrix-update-{iii_version}"
    worker = IiiWorker(iii_version, state_engine.url, scope)
    try:
        echo_answers(state_engine, iii_version)
        proc = state_engine.cli("trigger", "matrix::state_update", f"scope={scope}")
        assert proc.returncode == 0, proc.stderr
        want = {"n": 3, "name": "ada", "a.b": True, "nested": {"x": {"y": 1}}, "log": "z"}
        assert json.loads(proc.stdout) == {"new_value": want, "errors": [[2, "type_error"]], "stored": want}
    finally:
        worker.stop()


@pytest.mark.parametrize("version", [v for v in III_SDK_VERSIONS if v != "0.22.1"])
def test_a_12_mib_payload_round_trips(version: str, state_engine: Engine) -> None:
    """iii-sdk 0.24+ sends frames up to 16 MiB; so does svc by default. (0.22.1 cannot receive frames
    over 1 MiB, its websockets default: docs/iii-compatibility.md.)"""
    iii_python(version)
    worker = IiiWorker(version, state_engine.url)
    ours = register_worker(state_engine.url, fast_options("svc-12mib"))
    try:
        assert ours.wait_until_connected(10)
        big = "x" * (12 * 1024 * 1024)

        def echoed() -> Any:
            return ours.trigger({"function_id": "matrix::echo", "payload": {"big": big}, "timeout_ms": 20_000})

        wait_for(lambda: "matrix::echo" in json.dumps(ours.trigger({"function_id": "engine::functions::list"})), 20)
        result = echoed()
        assert result["sdk"] == version
        assert result["echo"]["big"] == big
    finally:
        ours.shutdown()
        worker.stop()


def test_iii_spans_join_one_trace_tree(iii_version: str, state_engine: Engine) -> None:
    """The SDK's own span of a call it serves (sent as OTLP over /otel) is kept by the engine: svc-sdk
    → iii → svc-sdk is one trace tree, the iii span between the engine's span of its call and the call
    it made."""
    worker = IiiWorker(iii_version, state_engine.url)
    inner = f"svc::double-{iii_version}"
    ours = register_worker(state_engine.url, fast_options(f"svc-spans-{iii_version}"))
    ours.register_function(inner, lambda data: {"n": data["n"] * 2})
    try:
        assert ours.wait_until_connected(10)
        echo_answers(state_engine, iii_version)
        result = ours.trigger({"function_id": "matrix::nested", "payload": {"function_id": inner, "payload": {"n": 4}}})
        assert result == {"n": 8}
        traces = ours.trigger({"function_id": "engine::traces::list", "payload": {"function_id": inner}})
        trace_id = traces["traces"][0]["trace_id"]

        def spans() -> list[dict[str, Any]]:
            got = ours.trigger({"function_id": "engine::traces::get", "payload": {"trace_id": trace_id}})
            listed: list[dict[str, Any]] = got["spans"]
            return listed

        wait_for(lambda: len(spans()) >= 3, timeout=20, what=f"the spans of iii-sdk {iii_version} in the trace")
        tree = spans()
        by_id = {s["span_id"]: s for s in tree}
        [call] = [s for s in tree if s["function_id"] == "matrix::nested"]
        [nested] = [s for s in tree if s["function_id"] == inner]
        assert call["parent_span_id"] is None
        assert call["depth"] == 0
        # Up from the nested call: only iii spans between it and the engine's span of matrix::nested.
        chain: list[str] = []
        parent = nested["parent_span_id"]
        while parent is not None and parent != call["span_id"]:
            assert parent in by_id, f"parent {parent} of {chain or inner} is in the trace: {tree}"
            chain.append(by_id[parent]["function_id"])
            parent = by_id[parent]["parent_span_id"]
        assert parent == call["span_id"], tree
        assert chain, f"an iii span sits between the call and its nested call: {tree}"
        assert all(s["status"] == "ok" for s in tree), tree
    finally:
        ours.shutdown()
        worker.stop()


def test_engine_trigger_types_fire_for_iii_bindings(iii_version: str, state_engine: Engine) -> None:
    """iii's EngineTriggers, bound with the SDK's constants: engine::functions-available fires
    functions_changed with the function list (checked every 5 s, as iii), and log fires iii's
    OtelLogEvent for lines at or above the bound level."""
    worker = IiiWorker(iii_version, state_engine.url, "--engine-triggers")
    name = f"svc-engine-triggers-{iii_version}"
    ours = register_worker(state_engine.url, fast_options(name))
    try:
        assert ours.wait_until_connected(10)
        echo_answers(state_engine, iii_version)

        def bound() -> bool:
            listed = ours.trigger({"function_id": "engine::registered-triggers::list"})["triggers"]
            active = {t["function_id"] for t in listed if t["status"] == "active"}
            return {"matrix::on_functions", "matrix::on_log"} <= active

        wait_for(bound, timeout=20, what="the engine trigger bindings to be active")
        fid = f"svc::appeared-{iii_version}"
        ours.register_function(fid, lambda data: None)
        text = f"loud line for iii-sdk {iii_version}"
        lines = [["info", "quiet"], ["warn", text, {"n": 1}]]
        ours.trigger({"function_id": "engine::log::batch", "payload": {"lines": lines}})
        seen: dict[str, dict[str, Any]] = {}
        while "functions_event" not in seen or "log_event" not in seen:
            line = worker.next_line(timeout=20)
            event = line.get("event", {})
            if line["kind"] == "functions_event" and fid in json.dumps(event):
                seen["functions_event"] = event
            if line["kind"] == "log_event":
                assert event["body"] != "quiet", "below the bound level: not fired"
                if event["body"] == text:
                    seen["log_event"] = event
        assert seen["functions_event"]["event"] == "functions_changed"
        log = seen["log_event"]
        assert (log["severity_text"], log["severity_number"], log["service_name"]) == ("WARN", 13, name)
        assert log["attributes"]["log.data"] == {"n": 1}
    finally:
        ours.shutdown()
        worker.stop()


def test_logger_lines_reach_svc_logs(iii_version: str, state_engine: Engine) -> None:
    """iii's Logger sends its lines as OTLP logs over /otel; the engine keeps them, so `svc logs` shows them."""
    worker = IiiWorker(iii_version, state_engine.url)
    text = f"hello from iii-sdk {iii_version}"
    try:
        echo_answers(state_engine, iii_version)
        assert state_engine.cli("trigger", "matrix::log", f"text={text}").returncode == 0

        def logged() -> list[dict[str, Any]]:
            proc = state_engine.cli("logs", "--json", "--text", text, timeout=10)
            return [json.loads(line) for line in proc.stdout.splitlines()] if proc.returncode == 0 else []

        wait_for(lambda: len(logged()) > 0, timeout=30, what=f"the iii Logger line of {iii_version} in svc logs")
        [line] = logged()
        seen = (line["level"], line["message"], line["worker_name"], line["data"])
        assert seen == ("warn", text, "iii-matrix", {"n": 1})
    finally:
        worker.stop()


@pytest.mark.parametrize("version", [v for v in III_SDK_VERSIONS if v != "0.22.1"])
def test_namespaces_isolate_and_replicas_share(version: str, state_engine: Engine) -> None:
    """iii 0.23+ namespaces: unmodified iii workers in `alpha` (two copies: replicas) and `beta`, and an
    svc-sdk worker in `gamma`, each serving ns::who. A call reaches only the namespace it names;
    default has none; an iii worker's own calls stay in its namespace and still reach the engine's
    functions (state::set); the two copies in `alpha` both serve (no registrationrejected)."""
    alpha_1 = IiiWorker(version, state_engine.url, "alpha", "alpha-1", script="iii_namespace_worker.py")
    alpha_2 = IiiWorker(version, state_engine.url, "alpha", "alpha-2", script="iii_namespace_worker.py")
    beta = IiiWorker(version, state_engine.url, "beta", "beta-1", script="iii_namespace_worker.py")
    gamma = register_worker(state_engine.url, fast_options("svc-gamma", namespace="gamma"))
    gamma.register_function("ns::who", lambda _data: {"ns": "gamma", "worker": "svc-gamma"})
    caller = register_worker(state_engine.url, fast_options(f"ns-caller-{version}"))
    try:
        assert caller.wait_until_connected(10)

        def who(namespace: str) -> Any:
            return caller.trigger({"function_id": "ns::who", "namespace": namespace})

        def serving() -> bool:
            try:
                return bool(
                    who("beta")["ns"] == "beta" and who("gamma")["ns"] == "gamma" and who("alpha")["ns"] == "alpha"
                )
            except InvocationError:
                return False

        wait_for(serving, timeout=30, what=f"iii-sdk {version} workers in namespaces to serve")
        assert who("beta") == {"ns": "beta", "worker": "beta-1", "sdk": version}
        with pytest.raises(InvocationError) as nf:
            caller.trigger({"function_id": "ns::who"})
        assert nf.value.code == "function_not_found"
        assert "alpha" in nf.value.message
        assert "beta" in nf.value.message
        with pytest.raises(InvocationError) as unknown:
            who("nowhere")
        assert unknown.value.code == "function_not_found"
        # Replicas: both copies in alpha answer.
        workers = {who("alpha")["worker"] for _ in range(12)}
        assert workers == {"alpha-1", "alpha-2"}
        scope = f"ns-{version}"
        relayed = caller.trigger({"function_id": "ns::relay", "namespace": "beta", "payload": {"scope": scope}})
        assert relayed["who"]["ns"] == "beta"
        assert relayed["state"]["new_value"] == "beta"
        listed = caller.trigger({"function_id": "engine::functions::list", "payload": {"include_builtins": False}})
        spaces = sorted(f["namespace"] for f in listed["functions"] if f["function_id"] == "ns::who")
        assert spaces == ["alpha", "beta", "gamma"]
    finally:
        caller.shutdown()
        gamma.shutdown()
        for w in (alpha_1, alpha_2, beta):
            w.stop()
