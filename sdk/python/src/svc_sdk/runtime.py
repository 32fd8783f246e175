"""The background thread a worker's connection lives on, and how the process ends.

`register_worker` returns at once; the connection runs on its own event loop in a non-daemon
thread, so a worker script that just registers functions and reaches its end stays alive. Ctrl-C
(SIGINT) or SIGTERM then close the connection cleanly and let the process exit. An uncaught
exception in the main script also shuts the worker down instead of leaving a half-set-up process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from types import FrameType, TracebackType
from typing import Any

log = logging.getLogger("svc_sdk")


def new_event_loop(kind: str) -> asyncio.AbstractEventLoop:
    """A loop of the kind InitOptions.event_loop names ("uvloop" or "asyncio"; options.py checks it)."""
    if kind == "uvloop":
        try:
            import uvloop  # only here: an "asyncio" worker never imports it
        except ImportError as exc:  # found but broken (e.g. a venv copied from another machine)
            raise ImportError(
                f"svc: uvloop, the worker's default event loop, is installed but cannot be imported ({exc});"
                " reinstall it, or set InitOptions.event_loop or $SVC_EVENT_LOOP to 'asyncio'"
            ) from exc

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


class LoopThread:
    def __init__(self, name: str, event_loop: str) -> None:
        self.loop = new_event_loop(event_loop)
        self.thread = threading.Thread(target=self._main, name=name, daemon=False)
        self._coro: Coroutine[Any, Any, None] | None = None

    def start(self, coro: Coroutine[Any, Any, None]) -> None:
        self._coro = coro
        self.thread.start()

    @property
    def on_loop_thread(self) -> bool:
        return threading.current_thread() is self.thread

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        assert self._coro is not None
        try:
            self.loop.run_until_complete(self._coro)
            # Let handler tasks that are cancelled at shutdown finish unwinding.
            pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()


_shutdown_hooks: list[Callable[[], None]] = []
_installed_signals = False
_installed_excepthook = False
_signalled = False


def on_process_exit(hook: Callable[[], None], handle_signals: bool) -> None:
    """Run `hook` (thread-safe, non-blocking) on SIGINT/SIGTERM and on an uncaught main-thread exception."""
    _shutdown_hooks.append(hook)
    _install_excepthook()
    if handle_signals:
        _install_signal_handlers()


def forget(hook: Callable[[], None]) -> None:
    if hook in _shutdown_hooks:
        _shutdown_hooks.remove(hook)


def _run_hooks() -> None:
    for hook in list(_shutdown_hooks):
        try:
            hook()
        except Exception:
            log.exception("svc: error while shutting down")


def _install_signal_handlers() -> None:
    global _installed_signals
    if _installed_signals or threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread
    _installed_signals = True
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)
        if previous is signal.SIG_IGN or previous is None:
            continue
        signal.signal(sig, _make_handler(previous))


def _make_handler(previous: Callable[[int, FrameType | None], Any] | int) -> Callable[[int, FrameType | None], None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        global _signalled
        if _signalled:
            os._exit(128 + signum)  # a second Ctrl-C while closing: the user wants out now
        _signalled = True
        _run_hooks()
        # While the main script still runs, it sees the signal as it would without us. Once it has
        # finished, the interpreter only waits for our thread, which the hooks have told to end.
        if threading.main_thread().is_alive():
            if callable(previous):
                previous(signum, frame)
            elif signum == signal.SIGINT:
                raise KeyboardInterrupt
            else:
                raise SystemExit(128 + signum)

    return handler


def _install_excepthook() -> None:
    global _installed_excepthook
    if _installed_excepthook:
        return
    _installed_excepthook = True
    previous = sys.excepthook

    def excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        previous(kind, value, tb)
        _run_hooks()

    sys.excepthook = excepthook
