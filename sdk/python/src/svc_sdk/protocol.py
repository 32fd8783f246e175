"""Constants and frame shapes of the svc wire protocol, as seen from a Python worker.

The authoritative contract is sdk/typescript/src/protocol.ts and docs/protocol.md; this module
mirrors the parts a worker needs. Frames are plain dicts keyed by a lowercase `type`.
"""

from __future__ import annotations

import json
import unicodedata
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
    #: Deadline for this call; the engine answers `timeout` when it passes. Default:
    #: InitOptions.invocation_timeout_ms, else the engine's engine.invocation_timeout_ms.
    timeout_ms: int
    #: A trigger type's provider calling for one of its bindings (a fire, a condition): the
    #: binding's id (`TriggerInstance["id"]`). The engine then authorizes the call with the rights
    #: of the worker that registered the binding, not this worker's.
    binding_id: str
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
    #: Functions a worker must be allowed to call to bind this type (a binding that lets its owner
    #: observe data needs the rights of the function that reads it); the engine refuses others.
    binding_requires_call: list[str]


TriggerStatus = Literal["pending", "active", "parked", "error", "unregistered"]


def encode(frame: Frame) -> str:
    """Serialize one frame. Raises TypeError/ValueError when the frame holds non-JSON values."""
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def utf8_size(text: str) -> int:
    """Size of `text` on the wire (callers skip this when len(text) * 4 is already under the limit)."""
    return len(text.encode("utf-8"))


#: Longest function id the engine accepts.
FUNCTION_ID_MAX_LENGTH: Final = 256
_BIDI_CONTROLS: Final = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ZERO_WIDTH: Final = frozenset("\u200b\u200c\u200d\u2060\ufeff")


def function_id_problem(function_id: str) -> str | None:
    """Why `function_id` is not a valid id ("contains U+200B (a zero-width character) at index 7"), or None.

    The engine's rule (sdk/typescript/src/function-id.ts): 1 to 256 characters (UTF-16 code units),
    none of them a control character, whitespace, an invisible formatting character (zero-width,
    bidirectional) or an unpaired surrogate, so that no id prints like another or drives a terminal.
    """
    if not function_id:
        return "is empty"
    if len(function_id.encode("utf-16-le", "surrogatepass")) // 2 > FUNCTION_ID_MAX_LENGTH:
        return f"is longer than {FUNCTION_ID_MAX_LENGTH} characters"
    index = 0  # in UTF-16 code units, as the engine counts
    for char in function_id:
        category = unicodedata.category(char)
        kind = None
        if category == "Cc":
            kind = "a control character"
        elif char in _BIDI_CONTROLS:
            kind = "a bidirectional control"
        elif char in _ZERO_WIDTH:
            kind = "a zero-width character"
        elif category == "Cs":
            kind = "an unpaired surrogate (not valid Unicode)"
        elif category == "Cf":
            kind = "an invisible formatting character"
        elif category in ("Zs", "Zl", "Zp") or char.isspace():
            kind = "whitespace"
        if kind is not None:
            return f"contains U+{ord(char):04X} ({kind}) at index {index}"
        index += 2 if ord(char) > 0xFFFF else 1
    return None
