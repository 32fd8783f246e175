"""iii 0.25 observers (observe.v1) on svc: an unmodified PyPI iii-sdk 0.25.0 worker observes obs::src,
which svc's CLI calls, and its target obs::target prints what each activation brought
(fixtures/iii_observe_worker.py). The engine filters and fires (src/engine/observers.ts).

A line that never comes would block, so "did not fire" is shown by order: a call that must not fire
comes before one that must, and the next activation is the second's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import Engine
from .iii_sdks import III_SDK_LATEST, iii_python
from .test_iii_matrix import IiiWorker

Observers = list[tuple[dict[str, Any], dict[str, Any]]]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    iii_python(III_SDK_LATEST)
    e = Engine(tmp_path_factory.mktemp("observe"))
    e.start()
    yield e
    e.stop()


@pytest.fixture
def observe(engine: Engine) -> Iterator[Any]:
    workers: list[IiiWorker] = []

    def start(observers: Observers) -> tuple[IiiWorker, dict[str, str]]:
        worker = IiiWorker(III_SDK_LATEST, engine.url, json.dumps(observers), script="iii_observe_worker.py")
        workers.append(worker)
        states: dict[str, str] = next_kind(worker, "observers")["states"]
        return worker, states

    yield start
    for w in workers:
        w.stop()
        HELD.pop(w, None)


def call(engine: Engine, *args: str) -> Any:
    proc = engine.cli("trigger", "obs::src", *args, timeout=15)
    return json.loads(proc.stdout) if proc.returncode == 0 else proc.stderr


def pick(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: d.get(k) for k in keys}


# Keyed by the worker itself, not id(worker): an id is reused once its object is freed, and a later
# test's worker then got the lines an earlier test's worker had left (seen on Python 3.13).
HELD: dict[IiiWorker, list[dict[str, Any]]] = {}


def next_kind(worker: IiiWorker, kind: str) -> dict[str, Any]:
    """The next line of `kind`; lines of other kinds read meanwhile are kept for their own turn."""
    held = HELD.setdefault(worker, [])
    for i, line in enumerate(held):
        if line["kind"] == kind:
            return held.pop(i)
    while True:
        line = worker.next_line()
        if line["kind"] == kind:
            return line
        held.append(line)


def test_an_observer_fires_with_the_invocation_it_saw(engine: Engine, observe: Any) -> None:
    worker, states = observe([({"function_id": "obs::src", "filters": {"input.n": {"$gte": 500}}}, {"id": "big"})])
    assert states == {"big": "active"}
    assert call(engine, "n=5") == {"doubled": 10}  # filtered out
    assert call(engine, "n=700") == {"doubled": 1400}
    fired = next_kind(worker, "fired")
    data = fired["data"]
    assert pick(data, "input", "output", "observer_id", "function_id", "status", "namespace") == {
        "input": {"n": 700},
        "output": {"doubled": 1400},
        "observer_id": "big",
        "function_id": "obs::src",
        "status": "success",
        "namespace": "default",
    }
    assert isinstance(data["invocation_id"], str)
    assert "caller" in data
    assert "error" not in data  # not in the default capture
    assert "metadata" not in data
    assert fired["activation"] == {"observer_id": "big", "activation_id": data["activation_id"]}
    assert fired["depth"] == 1


def test_filters_on_output_on_error_deliver_and_unobserve(engine: Engine, observe: Any) -> None:
    worker, states = observe(
        [
            (
                {"function_id": "obs::src", "filters": {"output.doubled": {"$lt": 10}}, "deliver": "input"},
                {"id": "small"},
            ),
            ({"function_id": "obs::src", "on": "error", "capture": ["input", "error"]}, {"id": "failed"}),
            ({"function_id": "obs::src"}, {"id": "gone"}),
            ({"function_id": "obs::src", "filters": {"input.n": 5}}, {"id": "bad-filter"}),
        ]
    )
    assert states == {"small": "active", "failed": "active", "gone": "active", "bad-filter": "invalid_filter"}
    call(engine, "n=50")  # output 100: only "gone" would take it, and it was unobserved
    call(engine, "n=2")
    assert next_kind(worker, "fired")["data"] == {"n": 2}  # deliver: input
    assert "asked to fail" in call(engine, "n=1", "fail=true")
    failed = next_kind(worker, "fired")["data"]
    assert pick(failed, "observer_id", "status", "input") == {
        "observer_id": "failed",
        "status": "error",
        "input": {"n": 1, "fail": True},
    }
    assert "asked to fail" in json.dumps(failed["error"])
    assert set(failed) & {"output", "caller"} == set()


def test_max_fires_and_expiry_end_the_observer(engine: Engine, observe: Any) -> None:
    worker, states = observe(
        [
            ({"function_id": "obs::src", "filters": {"input.n": {"$eq": 1}}}, {"id": "twice", "max_fires": 2}),
            ({"function_id": "obs::src", "filters": {"input.n": {"$eq": 2}}}, {"id": "brief", "expires_in_ms": 1500}),
            ({"function_id": "obs::src", "filters": {"input.n": {"$eq": 3}}}, {"id": "marker"}),
        ]
    )
    assert set(states.values()) == {"active"}
    for _ in range(2):
        call(engine, "n=1")
        assert next_kind(worker, "fired")["data"]["observer_id"] == "twice"
    # Both end, in whichever order the clock and the calls make.
    ends = {
        line["id"]: (line["state"], line["reason"]["code"]) for line in (next_kind(worker, "state") for _ in range(2))
    }
    assert ends == {"twice": ("disposed", "observer_max_fires"), "brief": ("disposed", "observer_expired")}
    call(engine, "n=1")
    call(engine, "n=2")
    call(engine, "n=3")
    assert next_kind(worker, "fired")["data"]["observer_id"] == "marker"
