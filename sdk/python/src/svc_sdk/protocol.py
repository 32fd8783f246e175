"""Constants and frame shapes of the svc wire protocol, as seen from a Python worker.

The authoritative contract is the TypeScript SDK's protocol module (sdk/typescript/src/protocol/,
`svc-sdk/protocol`) and docs/protocol.md; this module mirrors the parts a worker needs, with the
same values (tests/test_protocol_constants.py compares them). Frames are plain dicts keyed by a
lowercase `type`.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Final, Literal, NotRequired, Required, TypedDict

PROTOCOL_VERSION: Final = 1
DEFAULT_ENGINE_PORT: Final = 49134
DEFAULT_ENGINE_URL: Final = f"ws://localhost:{DEFAULT_ENGINE_PORT}"
#: Largest frame the engine accepts by default; the SDK refuses to send larger ones.
DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
#: The deadline of a call that sets none (config.yaml `engine.invocation_timeout_ms`).
DEFAULT_INVOCATION_TIMEOUT_MS: Final = 30_000
#: Deepest nesting of arrays and objects a frame may have, its own object counted (docs/protocol.md).
MAX_FRAME_DEPTH: Final = 128
#: svc extensions this SDK asks for in `hello`.
FEATURES: Final = ("cancel", "ack")
#: In `workerregistered.features`: this engine answers `hello` (docs/protocol.md); an iii engine drops it.
ANSWERS_HELLO_FEATURE: Final = "svc.hello"
#: Every message `type` of the protocol (iii 0.22's set and svc's extensions `hello` and `cancel`).
MESSAGE_TYPES: Final = (
    "workerregistered",
    "reattach",
    "registerfunction",
    "unregisterfunction",
    "invokefunction",
    "invocationresult",
    "registertriggertype",
    "unregistertriggertype",
    "registertrigger",
    "unregistertrigger",
    "triggerregistrationresult",
    "registerservice",
    "registrationrejected",
    "ping",
    "pong",
    "error",
    "hello",
    "cancel",
    "observe",
    "unobserve",
)

#: WebSocket close code of the engine's `unauthorized` refusal (no token, or an unknown one).
UNAUTHORIZED_CLOSE: Final = 4401
#: WebSocket close code of the engine's `stale_worker` refusal (another engine run's secret).
STALE_WORKER_CLOSE: Final = 4410
#: WebSocket close code of a graceful engine stop (1012, "service restart"): peers reconnect.
ENGINE_RESTART_CLOSE: Final = 1012
#: Upgrade request header carrying the run secret the engine gave a process it started.
RUN_SECRET_HEADER: Final = "x-svc-run-secret"

REGISTER_WORKER_FUNCTION: Final = "engine::workers::register"
#: The namespace of a worker or call that names none (iii 0.23+).
DEFAULT_NAMESPACE: Final = "default"
LOG_FUNCTION_PREFIX: Final = "engine::log::"
#: Logger lines, several per call: {"lines": [[level, message, data, function_id, invocation_id, trace_id], ...]}.
LOG_BATCH_FUNCTION: Final = "engine::log::batch"
#: The worker's process metrics, every few seconds: {"process": {"cpu_user_seconds", "rss_bytes", ...}}.
REPORT_WORKER_FUNCTION: Final = "engine::workers::report"
#: How often the SDKs send REPORT_WORKER_FUNCTION by default, ms.
DEFAULT_PROCESS_REPORT_MS: Final = 5000

#: The leading keys of a call frame as the SDKs write it (frame-layout.ts in the TypeScript SDK): the
#: engine passes the payload of a frame that begins so on to the callee as text, without
#: serialising it again. `invocation_id`, `timeout_ms` and `binding_id` are left out when unset.
INVOKE_KEY_ORDER: Final = ("type", "function_id", "invocation_id", "timeout_ms", "binding_id", "data")
#: The leading keys of a result frame (handlers.encode_reply writes them so).
RESULT_KEY_ORDER: Final = ("type", "invocation_id", "function_id", "result")

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
    #: The namespace the function is looked up in (iii 0.23+). Default: InitOptions.namespace.
    namespace: str


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
    #: "one" (default): each binding goes to one provider of the type, the others stand by;
    #: "all": every provider gets every binding (replicas that each serve a share).
    binding_mode: Literal["one", "all"]


TriggerStatus = Literal["pending", "active", "parked", "error", "unregistered"]


def invoke_frame(
    function_id: str,
    invocation_id: str | None,
    timeout_ms: int | None,
    binding_id: str | None,
    data: Any,
    action: dict[str, Any] | None,
    metadata: Any,
    traceparent: str | None,
    baggage: str | None = None,
    namespace: str | None = None,
) -> Frame:
    """A call frame in INVOKE_KEY_ORDER (dicts keep insertion order, and json.dumps writes it)."""
    frame: Frame = {"type": "invokefunction", "function_id": function_id}
    if invocation_id is not None:
        frame["invocation_id"] = invocation_id
    if timeout_ms is not None:
        frame["timeout_ms"] = timeout_ms
    if binding_id is not None:
        frame["binding_id"] = binding_id
    frame["data"] = data
    if action is not None:
        frame["action"] = action
    if metadata is not None:
        frame["metadata"] = metadata
    if traceparent:
        frame["traceparent"] = traceparent
    if baggage:
        frame["baggage"] = baggage
    # After data: passed on with the payload. Absent means `default`.
    if namespace is not None and namespace != DEFAULT_NAMESPACE:
        frame["namespace"] = namespace
    return frame


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

    The engine's rule (sdk/typescript/src/protocol/function-id.ts): 1 to 256 characters (UTF-16 code units),
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
