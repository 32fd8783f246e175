"""A token or password in the engine address never reaches logs or error messages."""

from __future__ import annotations

import logging

import pytest

from svc_sdk import InvocationError, redact_address, register_worker

from .conftest import Engine, fast_options, wait_for

SECRET = "py-secret-token-0123456789"


def test_redact_address() -> None:
    cases = {
        "ws://127.0.0.1:49134": "ws://127.0.0.1:49134",
        f"ws://h:1/?token={SECRET}": "ws://h:1/?token=***",
        "ws://h:1?token=abc&x=1": "ws://h:1?token=***&x=1",
        "ws://h:1/?x=1&access_token=abc#f": "ws://h:1/?x=1&access_token=***#f",
        "ws://h:1/?api_key=a&password=p&secret=s": "ws://h:1/?api_key=***&password=***&secret=***",
        "ws://h:1/?token=": "ws://h:1/?token=",
        "ws://user:pa55@h:1/": "ws://user:***@h:1/",
        "redis://:pa55@h:6379/0": "redis://:***@h:6379/0",
        "ws://user@h:1/": "ws://user@h:1/",
        "ws://a:1/?token=one,ws://b:2/?token=two": "ws://a:1/?token=***,ws://b:2/?token=***",
    }
    for given, shown in cases.items():
        assert redact_address(given) == shown, given


def test_a_token_in_the_address_is_not_logged_or_reported(engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="svc_sdk")
    # An engine that is not there: the reconnect warnings and the call's error.
    gone = register_worker(f"ws://127.0.0.1:1/?token={SECRET}", fast_options("gone"))
    try:
        with pytest.raises(InvocationError) as err:
            gone.trigger({"function_id": "engine::health::check", "payload": {}, "timeout_ms": 600})
        assert SECRET not in err.value.message
        assert "token=***" in err.value.message
    finally:
        gone.shutdown()
    # An engine that is: the connected line.
    there = register_worker(f"{engine.url}/?token={SECRET}", fast_options("there"))
    try:
        wait_for(lambda: there.connected, what="the worker to connect")
    finally:
        there.shutdown()
    logged = caplog.text
    assert "reconnecting to ws://127.0.0.1:1/?token=***" in logged
    assert f"connected to {engine.url}/?token=***" in logged
    assert SECRET not in logged
