"""`Logger`: log lines printed to stderr and sent to the engine, which stores them with the worker name.

Inside a handler, lines carry the function and invocation ids without being told (a context variable
set by the SDK around every handler call). The lines of one event-loop iteration of the worker go
to the engine together, in one `engine::log::batch` call (see log_batches.py).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from .context import current_invocation
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
        # Compact, as the TypeScript SDK prints it: one worker's lines read like another's.
        tail = f" {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}" if data is not None else ""
        print(f"{level.upper():5} [{name}]{where} {message}{tail}", file=sys.stderr, flush=True)
        if worker is None:
            return
        # A row of engine::log::batch: [level, message, data, function_id, invocation_id, trace_id].
        if ctx is None:
            row: list[Any] = [level, message] if data is None else [level, message, data]
        else:
            row = [level, message, data, ctx.function_id, ctx.invocation_id, _trace_id(ctx.traceparent)]
        worker._queue_log_line(row)
        tracer = worker._invoker.tracer
        if tracer is not None:
            tracer.log(level, message, data, ctx.function_id if ctx else None, ctx.traceparent if ctx else None)


def _trace_id(traceparent: str | None) -> str | None:
    """The trace id of a W3C traceparent ("00-<32 hex trace id>-<span id>-<flags>"), which the engine stores."""
    if traceparent is None or len(traceparent) < 35 or traceparent[2] != "-":
        return None
    return traceparent[3:35]


def _json_safe(data: Any) -> Any:
    """Log data must never make logging fail: anything json cannot encode becomes its str().

    Returns a copy (the line is encoded later, with the others of its batch): a flat dict of plain
    values is copied as is, anything else goes through json once.
    """
    if data is None or isinstance(data, str | int | bool):
        return data
    if isinstance(data, float):
        return data if math.isfinite(data) else repr(data)
    if type(data) is dict and all(type(k) is str and _plain(v) for k, v in data.items()):
        return dict(data)
    try:
        return json.loads(json.dumps(data, default=str, allow_nan=False))
    except (TypeError, ValueError):
        return repr(data)


def _plain(v: Any) -> bool:
    t = type(v)
    return t is str or t is int or t is bool or v is None or (t is float and math.isfinite(v))
