"""Threads for plain (sync) handlers, created once per worker and grown lazily up to a limit.

Why not a stock ThreadPoolExecutor: once a script's last line has run, the interpreter starts
shutting down and stock executors refuse new work ("cannot schedule new futures after interpreter
shutdown"). A worker script's real life starts exactly then: it registered its functions and now
serves them until interrupted. This pool has no such cut-off, and it is also the loop's default
executor, which asyncio's own loop uses to resolve host names when reconnecting (uvloop resolves
them in libuv's threads).

Why it wakes few threads: with the GIL only one thread runs Python at a time, so for quick handlers
(the quickstart's `math::add`) one thread working through a read's calls is fastest, and every other
woken thread only contends for the GIL (issue 21, bench/RESULTS.md). A job therefore waits for a
thread already running jobs, unless none is, or they have made no progress for `STALL_SECONDS` (a
handler that sleeps, blocks on I/O or waits in a nested call): then more threads are woken,
doubling the running ones each time, up to `max_threads`. The thread woken is the one idle the
shortest time.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

log = logging.getLogger("svc_sdk")

#: (future, or None for run_soon; function; args; kwargs)
_Job = tuple[Future[Any] | None, Callable[..., Any], tuple[Any, ...], dict[str, Any]]

#: Running threads that took or finished no job for this long are taken to be blocked.
STALL_SECONDS = 0.001
#: The longest gap between checks while threads stay blocked and no job waits.
MAX_CHECK_SECONDS = 0.1


class HandlerPool(ThreadPoolExecutor):
    # Subclassing only so asyncio accepts it as a default executor; no stock machinery is used.
    def __init__(self, max_threads: int, name: str, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(max_workers=max_threads, thread_name_prefix=name)
        self._max = max_threads
        self._name = name
        #: The loop whose thread hands jobs in; its timer checks for blocked threads. Jobs handed in
        #: from any other thread wake a thread at once.
        self._loop = loop
        #: Called on the loop when running threads are found blocked (the worker sends the answers
        #: they finished before blocking, which they would otherwise send at the end of their run).
        self.on_stall: Callable[[], None] | None = None
        #: Called in a pool thread that finished a job and found no other waiting (the worker writes
        #: the answers its threads finished meanwhile).
        self.on_drained: Callable[[], None] | None = None
        self._jobs: deque[_Job] = deque()
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._idle_locks: list[threading.Lock] = []  # of threads waiting for a job, the last idle last
        self._waking = 0  # woken or started, not yet holding a job
        self._running = 0  # threads running a job
        self._progress = time.monotonic()  # when a thread last took or finished a job
        self._timer: asyncio.TimerHandle | None = None
        self._check_delay = 0.0  # the delay of the armed check (0: none armed)
        self._last_delay = 0.0
        self._closed = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        if self._closed:
            future.cancel()
            return future
        self._put((future, fn, args, kwargs))
        return future

    def run_soon(self, fn: Callable[[T], None], arg: T) -> None:
        """Run `fn(arg)` in a pool thread, with no Future: `fn` handles its own errors and result."""
        if not self._closed:
            self._put((None, fn, (arg,), {}))

    def waiting(self) -> int:
        """Jobs not yet taken by a thread (read without the lock: a hint)."""
        return len(self._jobs)

    def _put(self, job: _Job) -> None:
        on_loop = self._loop is not None and asyncio._get_running_loop() is self._loop
        with self._lock:
            self._jobs.append(job)
            if not on_loop or self._running + self._waking == 0 or self._stalled():
                self._start_one()
            if on_loop and self._check_delay != STALL_SECONDS:
                self._arm(STALL_SECONDS)

    def _arm(self, delay: float) -> None:
        """With the lock held, on the loop: check for blocked threads after `delay` (replacing a later check)."""
        if self._timer is not None:
            self._timer.cancel()
        self._check_delay = delay
        self._timer = self._loop.call_later(delay, self._check)  # type: ignore[union-attr]

    def _stalled(self) -> bool:
        return time.monotonic() - self._progress >= STALL_SECONDS

    def _start_one(self) -> None:
        """With the lock held: wake an idle thread, or start one while under the limit."""
        if self._idle_locks:
            # The thread idle the shortest time: its stack and data are the likeliest still in cache.
            self._idle_locks.pop().release()
        elif len(self._workers) < self._max:
            thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._workers)}", daemon=True)
            self._workers.append(thread)
            thread.start()
        else:
            return
        self._waking += 1
        self._progress = time.monotonic()  # a thread on its way counts as progress: no stall for a while

    def _check(self) -> None:
        """On the loop, while jobs wait or threads run: wake more threads if the running ones are blocked.

        Runs every STALL_SECONDS while work flows; while threads stay blocked with no job waiting,
        ever less often (up to MAX_CHECK_SECONDS), as a handler may block for minutes.
        """
        with self._lock:
            self._timer = None
            self._check_delay = 0.0
            if self._closed:
                return
            stalled = self._stalled()
            if stalled:
                for _ in range(min(len(self._jobs), max(1, self._running))):
                    self._start_one()  # doubles the running threads, at most one per waiting job
            if self._jobs or (self._running and not stalled):
                self._arm(STALL_SECONDS)
            elif self._running:
                self._arm(min(MAX_CHECK_SECONDS, max(STALL_SECONDS, self._last_delay * 2)))
            self._last_delay = self._check_delay
        if stalled and self.on_stall is not None:
            self.on_stall()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = list(self._workers)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            cancelled = list(self._jobs) if cancel_futures else []
            if cancel_futures:
                self._jobs.clear()
            while self._idle_locks:
                self._waking += 1
                self._idle_locks.pop().release()
        for future, *_ in cancelled:
            if future is not None:
                future.cancel()
        if wait:
            for thread in workers:
                if thread is not threading.current_thread():
                    thread.join()

    def _work(self) -> None:
        lock = self._lock
        idle = threading.Lock()  # this thread waits for work by acquiring it a second time
        idle.acquire()
        lock.acquire()
        self._waking -= 1
        while True:
            if not self._jobs:
                if self._closed:
                    lock.release()
                    return
                self._idle_locks.append(idle)
                lock.release()
                idle.acquire()  # released by _start_one, which took it off _idle_locks
                lock.acquire()
                self._waking -= 1
                continue
            future, fn, args, kwargs = self._jobs.popleft()
            self._running += 1
            self._progress = time.monotonic()
            lock.release()
            try:
                self._run(future, fn, args, kwargs)
            finally:
                if not self._jobs and self.on_drained is not None:
                    try:
                        self.on_drained()
                    except BaseException:  # the thread must live on and count itself out of _running
                        log.exception("svc: error writing answers from a handler thread")
                lock.acquire()
                self._running -= 1
                self._progress = time.monotonic()

    @staticmethod
    def _run(future: Future[Any] | None, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if future is None:
            try:
                fn(*args)
            except BaseException:
                log.exception("svc: error in a handler thread")
            return
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(result)
