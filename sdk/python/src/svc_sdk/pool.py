"""Threads for plain (sync) handlers, created once per worker and grown lazily up to a limit.

Why not a stock ThreadPoolExecutor: once a script's last line has run, the interpreter starts
shutting down and stock executors refuse new work ("cannot schedule new futures after interpreter
shutdown"). A worker script's real life starts exactly then: it registered its functions and now
serves them until interrupted. This pool has no such cut-off, and it is also the loop's default
executor, which asyncio uses to resolve host names when reconnecting.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

log = logging.getLogger("svc_sdk")

#: (future, or None for run_soon; function; args; kwargs)
_Job = tuple[Future[Any] | None, Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class HandlerPool(ThreadPoolExecutor):
    # Subclassing only so asyncio accepts it as a default executor; no stock machinery is used.
    def __init__(self, max_threads: int, name: str) -> None:
        super().__init__(max_workers=max_threads, thread_name_prefix=name)
        self._max = max_threads
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
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

    def _put(self, job: _Job) -> None:
        self._jobs.put(job)
        with self._lock:
            # Start a thread only when every existing one is busy: bursts grow the pool, calm reuses it.
            if self._idle < self._jobs.qsize() and len(self._workers) < self._max:
                thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._workers)}", daemon=True)
                self._workers.append(thread)
                thread.start()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = list(self._workers)
        if cancel_futures:
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None and job[0] is not None:
                    job[0].cancel()
        for _ in workers:
            self._jobs.put(None)
        if wait:
            for thread in workers:
                if thread is not threading.current_thread():
                    thread.join()

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            job = self._jobs.get()
            with self._lock:
                self._idle -= 1
            if job is None:
                return
            future, fn, args, kwargs = job
            if future is None:
                try:
                    fn(*args)
                except BaseException:
                    log.exception("svc: error in a handler thread")
                continue
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
