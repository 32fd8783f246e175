"""math-worker: the Python half of the svc quickstart.

    math::add    {a, b} -> {c} where c = a + b (a and b default to 0), plus running_total (the sum
                 of every c so far, kept in svc-state) while the state block below is on.

Run by `svc worker add ./workers/math-worker`, or by hand:
    python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/python math_worker.py
The engine address comes from SVC_URL (default ws://localhost:49134).
"""

from __future__ import annotations

import os
from typing import Any

from svc_sdk import InitOptions, Logger, SvcError, register_worker

# ==================================== State block switch ====================================
# True:  math::add also adds c to a running total in svc-state (scope "math", key
#        "running_total") and returns it as running_total. Needs `svc worker add svc-state`.
# False: math::add returns {c} only and never calls svc-state.
# SVC_QUICKSTART_STATE=0 or =1 in the environment overrides this value for one run.
USE_STATE = True
# ============================================================================================

SVC_URL = os.environ.get("SVC_URL") or "ws://localhost:49134"


def env_switch(name: str, fallback: bool) -> bool:
    """A 0/1 (false/true, off/on) environment switch; `fallback` when unset or empty."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return fallback
    if raw in ("0", "false", "off", "no"):
        return False
    if raw in ("1", "true", "on", "yes"):
        return True
    raise SystemExit(f"{name} must be 0 or 1 (or true/false, on/off), got {os.environ[name]!r}")


state_enabled = env_switch("SVC_QUICKSTART_STATE", USE_STATE)
worker = register_worker(SVC_URL, InitOptions(worker_name="math-worker"))
logger = Logger()


def number(payload: dict[str, Any], name: str) -> int | float:
    value = payload.get(name, 0)
    if value is None:
        return 0
    # bool is an int in Python, but true + 1 is not what anyone means.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SvcError("invalid_payload", f"math::add: {name} must be a number, got {value!r}")
    return value


def add(data: Any) -> dict[str, Any]:
    payload = {} if data is None else data
    if not isinstance(payload, dict):
        raise SvcError("invalid_payload", f"math::add takes an object {{a, b}}, got {data!r}")
    a, b = number(payload, "a"), number(payload, "b")
    logger.info(f"adding a={a} and b={b}", {"a": a, "b": b})
    c = a + b
    result: dict[str, Any] = {"c": c}
    if state_enabled:
        # One atomic increment in svc-state, never a read followed by a write: concurrent calls
        # (on other threads, other replicas, other machines) all count exactly once.
        change = worker.trigger(
            {
                "function_id": "state::update",
                "payload": {"scope": "math", "key": "running_total", "ops": [{"type": "increment", "by": c}]},
            }
        )
        result["running_total"] = change["new_value"]
    return result


worker.register_function(
    "math::add",
    add,
    description="Adds a and b (default 0): {c}, plus running_total while the state block is on.",
)
logger.info(
    f"math-worker: registered math::add (state block {'on' if state_enabled else 'off'}) with the engine at {SVC_URL}"
)
# register_worker keeps the process running (and reconnecting) until Ctrl-C or SIGTERM.
