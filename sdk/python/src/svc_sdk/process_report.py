"""The worker's process metrics, reported to the engine every few seconds (engine::workers::report).

CPU time (user, system), resident memory and the lag of the worker's event loop, which the
console's Workers page and the engine's /metrics show. The lag is measured by a timer on the loop
itself: every TICK_S it sleeps and notes how much later than asked it woke (a handler blocking the
loop, or a busy process, shows here). One small fire-and-forget frame per interval, off the call path.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any

from .protocol import REPORT_WORKER_FUNCTION, Frame

#: How often the loop's lag is sampled, seconds.
TICK_S = 0.25


def _rss_bytes() -> int:
    """Resident memory now: /proc on Linux; elsewhere the peak (getrusage), the best the OS offers."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource  # not on Windows

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)
    except (ImportError, OSError):
        return 0


def process_sample(interval_ms: int, lag_mean_ms: float | None, lag_max_ms: float | None) -> dict[str, Any]:
    times = os.times()
    return {
        "cpu_user_seconds": times.user,
        "cpu_system_seconds": times.system,
        "rss_bytes": _rss_bytes(),
        "heap_used_bytes": None,
        "heap_total_bytes": None,
        "event_loop_lag_mean_ms": lag_mean_ms,
        "event_loop_lag_max_ms": lag_max_ms,
        "interval_ms": interval_ms,
    }


class ProcessReporter:
    """Runs on the worker's loop: `run()` samples the lag and sends a report every `interval_ms`
    (0: never); `send(frame)` is the worker's fire-and-forget send (dropped while disconnected)."""

    def __init__(self, interval_ms: int, send: Callable[[Frame], None]) -> None:
        self.interval_ms = interval_ms
        self._send = send
        self._lags: list[float] = []

    def report(self) -> None:
        if self.interval_ms <= 0:
            return
        lags = self._lags
        self._lags = []
        mean = sum(lags) / len(lags) * 1000 if lags else None
        peak = max(lags) * 1000 if lags else None
        self._send(
            {
                "type": "invokefunction",
                "function_id": REPORT_WORKER_FUNCTION,
                "data": {"process": process_sample(self.interval_ms, mean, peak)},
                "action": {"type": "void"},
            }
        )

    async def run(self) -> None:
        if self.interval_ms <= 0:
            return
        loop = asyncio.get_running_loop()
        interval_s = self.interval_ms / 1000
        tick = min(TICK_S, interval_s)
        next_report = loop.time() + interval_s
        while True:
            asked = loop.time() + tick
            await asyncio.sleep(tick)
            now = loop.time()
            self._lags.append(max(0.0, now - asked))
            if now >= next_report:
                next_report = now + interval_s
                self.report()
