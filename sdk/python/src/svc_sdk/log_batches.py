"""Logger lines on their way to the engine, sent together in `engine::log::batch` calls.

Any thread queues a line; the lines queued in one loop iteration leave together in one call (a frame
per line costs the engine a routed call's work each). Lines are dropped while disconnected: the
worker's stderr has them all.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ._background import spawn
from .connection import Session
from .errors import ErrorCode, SvcError
from .protocol import LOG_BATCH_FUNCTION, Frame
from .runtime import LoopThread

log = logging.getLogger("svc_sdk")


class LogBatcher:
    """The lines not sent yet (rows of `engine::log::batch`): any thread appends, the loop sends."""

    def __init__(self, runtime: LoopThread, session: Callable[[], Session | None]) -> None:
        self._runtime = runtime
        self._loop = runtime.loop
        #: The session registrations were replayed on (the worker's), None while there is none.
        self._session = session
        self._lock = threading.Lock()
        self._rows: list[list[Any]] = []
        self._flush_scheduled = False

    def queue(self, row: list[Any]) -> None:
        """Send a Logger line, from any thread, with the others of this loop iteration."""
        with self._lock:
            self._rows.append(row)
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        try:
            if self._runtime.on_loop_thread:
                self._loop.call_soon(self._flush)
            else:
                self._loop.call_soon_threadsafe(self._flush)
        except RuntimeError:  # the loop is closed: nothing will send them
            with self._lock:
                self._rows = []
                self._flush_scheduled = False

    def _flush(self) -> None:
        with self._lock:
            rows = self._rows
            self._rows = []
            self._flush_scheduled = False
        session = self._session()
        if not rows or session is None or session.closed:
            return
        spawn(self._send(session, rows))

    async def _send(self, session: Session, rows: list[list[Any]]) -> None:
        for text in log_batches(session, rows):
            try:
                await session.send_text(text)
            except SvcError as exc:
                if exc.code != ErrorCode.CONNECTION_LOST:
                    log.error("svc: could not send log lines: %s", exc)
                return


def log_batches(session: Session, rows: list[list[Any]]) -> list[str]:
    """`rows` as `engine::log::batch` frames: one, or halves while over the frame limit (a single
    line over it is dropped, with an error logged)."""
    frame: Frame = {
        "type": "invokefunction",
        "function_id": LOG_BATCH_FUNCTION,
        "data": {"lines": rows},
        "action": {"type": "void"},
    }
    try:
        return [session.encode_checked(frame)]
    except SvcError as exc:
        if len(rows) > 1:
            half = len(rows) // 2
            return log_batches(session, rows[:half]) + log_batches(session, rows[half:])
        log.error("svc: dropped a log line: %s", exc)
    except (TypeError, ValueError) as exc:  # Logger makes data JSON-safe; kept as a last resort
        log.error("svc: dropped %d log lines: %s", len(rows), exc)
    return []
