"""Bad arguments are reported before anything is sent, with the codes the TypeScript SDK uses for
the same mistakes (test/sdk/arguments.test.ts): `invalid_function_id` for a function id,
`invalid_argument` for any other argument of the wrong kind, `duplicate_function`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from svc_sdk import InvalidArgumentError, InvalidFunctionIdError, InvocationError, SvcError, Worker, register_worker

from .conftest import fast_options


@pytest.fixture
def offline() -> Iterator[Worker]:
    """A worker whose engine never answers: every check below happens before the connection matters."""
    w = register_worker("ws://127.0.0.1:1", fast_options("arguments"))
    yield w
    w.shutdown()


class Provider:
    def register_trigger(self, trigger: Any) -> None:
        pass

    def unregister_trigger(self, trigger: Any) -> None:
        pass


def test_register_function(offline: Worker) -> None:
    with pytest.raises(InvalidArgumentError, match="handler must be callable, got 42") as info:
        offline.register_function("args::h", 42)  # type: ignore[arg-type]
    assert info.value.code == "invalid_argument"
    assert isinstance(info.value, TypeError)
    assert isinstance(info.value, ValueError)
    offline.register_function("args::once", lambda data: None)
    with pytest.raises(SvcError, match="args::once is already registered") as dup:
        offline.register_function("args::once", lambda data: None)
    assert dup.value.code == "duplicate_function"
    offline.unregister_function("args::once")
    offline.register_function("args::once", lambda data: None)  # unregistered: may be registered again
    with pytest.raises(InvalidFunctionIdError) as bad_id:
        offline.register_function(7, lambda data: None)  # type: ignore[arg-type]
    assert bad_id.value.code == "invalid_function_id"


def test_trigger(offline: Worker) -> None:
    def code_of(request: Any) -> tuple[str, str]:
        with pytest.raises(InvocationError) as info:
            offline.trigger(request)
        return info.value.code, info.value.message

    assert code_of(None)[0] == "invalid_argument"
    assert code_of({})[0] == "invalid_function_id"
    assert code_of({"function_id": ""})[0] == "invalid_function_id"
    for timeout in (0, -5, float("nan"), float("inf"), "100", True):
        code, message = code_of({"function_id": "a::b", "timeout_ms": timeout})
        assert code == "invalid_argument", timeout
        assert "timeout_ms must be a positive number" in message
    code, message = code_of({"function_id": "a::b", "action": {"type": "enqueue"}})
    assert code == "invalid_argument"
    assert "action must be" in message
    code, message = code_of({"function_id": "a::b", "binding_id": ""})
    assert code == "invalid_argument"
    assert "binding_id must be a non-empty string" in message


def test_register_trigger_and_trigger_type(offline: Worker) -> None:
    with pytest.raises(InvalidArgumentError, match="'type' must be a non-empty string") as info:
        offline.register_trigger({"type": "", "function_id": "a::b"})
    assert info.value.code == "invalid_argument"
    with pytest.raises(InvalidArgumentError, match="takes a dict"):
        offline.register_trigger(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidFunctionIdError, match="'function_id' must be a non-empty string"):
        offline.register_trigger({"type": "http", "function_id": ""})
    with pytest.raises(InvalidArgumentError, match="id must be a non-empty string"):
        offline.register_trigger_type({"id": ""}, Provider())
    with pytest.raises(InvalidArgumentError, match="register_trigger and unregister_trigger methods"):
        offline.register_trigger_type("t", object())  # type: ignore[arg-type]
