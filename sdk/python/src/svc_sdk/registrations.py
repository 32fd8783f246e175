"""What `register_function`, `register_trigger` and `register_trigger_type` are given, checked and
made into what the worker keeps and replays on every reconnect (each with its registration frame).

Each refusal names the method and the offending value; nothing here touches the connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from .errors import InvalidArgumentError, InvalidFunctionIdError
from .handlers import Handler, RegisteredFunction, is_async_callable
from .protocol import Frame, TriggerConfig, TriggerTypeInfo, function_id_problem
from .triggers import ProvidedType, Trigger, TriggerTypeHandler


def new_function(
    function_id: str,
    handler: Handler,
    description: str | None,
    request_format: Any,
    response_format: Any,
    metadata: dict[str, Any] | None,
) -> RegisteredFunction:
    """Raises InvalidFunctionIdError (`invalid_function_id`) or InvalidArgumentError (a handler
    that is not callable)."""
    if not isinstance(function_id, str):
        raise InvalidFunctionIdError(f"register_function: function_id must be a non-empty string, got {function_id!r}")
    problem = function_id_problem(function_id)
    if problem is not None:
        raise InvalidFunctionIdError(f"register_function: function id {function_id[:200]!r} {problem}")
    if not callable(handler):
        raise InvalidArgumentError(f"register_function({function_id!r}): handler must be callable, got {handler!r}")
    frame: Frame = {"type": "registerfunction", "id": function_id}
    for key, value in (
        ("description", description),
        ("request_format", request_format),
        ("response_format", response_format),
        ("metadata", metadata),
    ):
        if value is not None:
            frame[key] = value
    return RegisteredFunction(function_id, handler, is_async_callable(handler), frame)


def new_trigger(trigger: TriggerConfig, drop: Callable[[Trigger], None]) -> Trigger:
    """A binding with a fresh id; `drop` is what its `unregister()` calls."""
    if not isinstance(trigger, dict):
        raise InvalidArgumentError(f"register_trigger takes a dict, got {type(trigger).__name__}")
    trigger_type, function_id = trigger.get("type"), trigger.get("function_id")
    if not isinstance(trigger_type, str) or not trigger_type:
        raise InvalidArgumentError(f"register_trigger: 'type' must be a non-empty string, got {trigger_type!r}")
    if not isinstance(function_id, str) or not function_id:
        raise InvalidFunctionIdError(f"register_trigger: 'function_id' must be a non-empty string, got {function_id!r}")
    return Trigger(
        str(uuid.uuid4()), trigger_type, function_id, trigger.get("config", {}), trigger.get("metadata"), drop
    )


def new_trigger_type(info: TriggerTypeInfo | str, handler: TriggerTypeHandler) -> ProvidedType:
    """A trigger type this worker provides; its id is `frame["id"]`."""
    if not isinstance(info, str | dict):
        raise InvalidArgumentError(f"register_trigger_type takes an id or a dict, got {type(info).__name__}")
    spec: dict[str, Any] = {"id": info} if isinstance(info, str) else dict(info)
    type_id = spec.get("id")
    if not isinstance(type_id, str) or not type_id:
        raise InvalidArgumentError(f"register_trigger_type: id must be a non-empty string, got {type_id!r}")
    if not callable(getattr(handler, "register_trigger", None)) or not callable(
        getattr(handler, "unregister_trigger", None)
    ):
        raise InvalidArgumentError(
            f"register_trigger_type({type_id!r}): the handler must have register_trigger and "
            f"unregister_trigger methods, got {handler!r}"
        )
    return ProvidedType({"type": "registertriggertype", "description": "", **spec}, handler)
