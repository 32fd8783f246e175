"""`Logger`: log lines printed to stderr and sent to the engine, which stores them with the worker name.

Inside a handler, lines carry the function and invocation ids without being told (a context variable
set by the SDK around every handler call).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .context import current_invocation
from .protocol import LOG_FUNCTION_PREFIX, Frame
from .worker import Worker, current_worker


class Logger:
    """`Logger().info("message", {"optional": "data"})`; also `debug`, `warn` (alias `warning`), `error`.

    Sends through `worker` when given, else through the most recently registered worker. Before any
    worker is registered, or while disconnected, lines only go to stderr.
    """

    def __init__(self, worker: Worker | None = None) -> None:
        self._worker = worker

    def debug(self, message: str, data: Any = None) -> None:
        self._log("debug", message, data)

    def info(self, message: str, data: Any = None) -> None:
        self._log("info", message, data)

    def warn(self, message: str, data: Any = None) -> None:
        self._log("warn", message, data)

    warning = warn

    def error(self, message: str, data: Any = None) -> None:
        self._log("error", message, data)

    def _log(self, level: str, message: str, data: Any) -> None:
        worker = self._worker or current_worker()
        ctx = current_invocation()
        message = str(message)
        data = _json_safe(data)
        name = worker.worker_name if worker is not None else "-"
        where = f" {ctx.function_id}" if ctx is not None else ""
        tail = f" {json.dumps(data, ensure_ascii=False)}" if data is not None else ""
        print(f"{level.upper():5} [{name}]{where} {message}{tail}", file=sys.stderr, flush=True)
        if worker is None:
            return
        frame: Frame = {
            "type": "invokefunction",
            "function_id": LOG_FUNCTION_PREFIX + level,
            "data": {
                "message": message,
                "data": data,
                "function_id": ctx.function_id if ctx is not None else None,
                "invocation_id": ctx.invocation_id if ctx is not None else None,
                "traceparent": ctx.traceparent if ctx is not None else None,
            },
            "action": {"type": "void"},
        }
        worker._send_void(frame)


def _json_safe(data: Any) -> Any:
    """Log data must never make logging fail: anything json cannot encode becomes its str()."""
    if data is None or isinstance(data, str | int | float | bool):
        return data
    try:
        return json.loads(json.dumps(data, default=str))
    except (TypeError, ValueError):
        return repr(data)
