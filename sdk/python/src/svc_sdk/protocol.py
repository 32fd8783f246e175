"""Constants and frame shapes of the svc wire protocol, as seen from a Python worker.

The authoritative contract is sdk/typescript/src/protocol.ts and docs/protocol.md; this module
mirrors the parts a worker needs. Frames are plain dicts keyed by a lowercase `type`.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal, NotRequired, Required, TypedDict

PROTOCOL_VERSION: Final = 1
DEFAULT_ENGINE_PORT: Final = 49134
DEFAULT_ENGINE_URL: Final = f"ws://localhost:{DEFAULT_ENGINE_PORT}"
#: Largest frame the engine accepts by default (DEFAULT_MAX_FRAME_BYTES in protocol.ts).
DEFAULT_MAX_FRAME_BYTES: Final = 8 * 1024 * 1024
DEFAULT_INVOCATION_TIMEOUT_MS: Final = 30_000
#: svc extensions this SDK asks for in `hello`.
FEATURES: Final = ("cancel", "ack")

REGISTER_WORKER_FUNCTION: Final = "engine::workers::register"
LOG_FUNCTION_PREFIX: Final = "engine::log::"
#: Logger lines, several per call: {"lines": [[level, message, data, function_id, invocation_id, trace_id], ...]}.
LOG_BATCH_FUNCTION: Final = "engine::log::batch"

Frame = dict[str, Any]


class ErrorBody(TypedDict):
    code: str
    message: str
    stacktrace: NotRequired[str]


class TriggerRequest(TypedDict, total=False):
    """Argument of `trigger()`: which function to call, with what, and how."""

    function_id: Required[str]
    payload: Any
    #: `TriggerAction.Void()` for fire-and-forget, `TriggerAction.Enqueue(queue=name)` to enqueue.
    action: dict[str, Any]
    #: Deadline for this call; the engine answers `timeout` when it passes. Default: InitOptions.
    timeout_ms: int
    #: JSON sent beside the payload; the callee's handler finds it in `current_invocation().metadata`.
    metadata: Any


class TriggerConfig(TypedDict, total=False):
    """Argument of `register_trigger()`: bind `function_id` to an event source of type `type`."""

    type: Required[str]
    function_id: Required[str]
    config: Any
    metadata: dict[str, Any]


class TriggerTypeInfo(TypedDict, total=False):
    """Argument of `register_trigger_type()`."""

    id: Required[str]
    description: str
    trigger_request_format: Any
    call_request_format: Any


TriggerStatus = Literal["pending", "active", "parked", "error", "unregistered"]


def encode(frame: Frame) -> str:
    """Serialize one frame. Raises TypeError/ValueError when the frame holds non-JSON values."""
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def utf8_size(text: str) -> int:
    """Size of `text` on the wire (callers skip this when len(text) * 4 is already under the limit)."""
    return len(text.encode("utf-8"))
