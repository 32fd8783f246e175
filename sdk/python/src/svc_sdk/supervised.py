"""A worker the engine started must not outlive that engine, nor serve another one.

The supervisor tells the SDK so through the environment (the TypeScript SDK reads the same):

- ``SVC_RUN_SECRET``: this instance's secret, presented at connect (header ``x-svc-run-secret``).
  An engine that did not issue it, i.e. any other run than the one that started us, refuses the
  connection with close code 4410 (``stale_worker``): our engine is gone, so the process exits.
- ``SVC_LIVENESS_FD=0``: stdin is a pipe whose other end only the engine holds. It never carries
  data; end-of-file means the engine process is gone (killed with SIGKILL, crashed), and the
  process exits. stdin, not an extra descriptor, because every launcher passes stdin on, while
  ``subprocess`` closes every descriptor but 0-2 by default (``close_fds=True``).

"Exits" means: SIGTERM to this process, so that the SDK's signal handler (or the program's own)
shuts it down as when the supervisor stops it, and, should that not end the process, ``os._exit``
after ``ENGINE_GONE_EXIT_S``.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading

RUN_SECRET_ENV = "SVC_RUN_SECRET"
LIVENESS_FD_ENV = "SVC_LIVENESS_FD"
#: How long the SIGTERM handling has to end the process before the SDK exits it.
ENGINE_GONE_EXIT_S = 10.0

_lock = threading.Lock()
_gone = False
_watching = False


def engine_gone(why: str) -> None:
    """The engine that started this process is gone: say why, SIGTERM ourselves, force the exit later.

    Safe from any thread; runs once.
    """
    global _gone
    with _lock:
        if _gone:
            return
        _gone = True
    sys.stderr.write(f"svc-sdk: {why}; this process was started by that engine, so it exits\n")
    sys.stderr.flush()
    timer = threading.Timer(ENGINE_GONE_EXIT_S, os._exit, (1,))
    timer.daemon = True
    timer.start()
    os.kill(os.getpid(), signal.SIGTERM)


def watch_engine_liveness() -> None:
    """When ``SVC_LIVENESS_FD`` names stdin and stdin is a pipe or socket, call `engine_gone` at its end.

    Reads on a daemon thread (never keeps the process alive). Anything else on stdin (a terminal,
    /dev/null, a file) is not the engine's pipe: nothing is watched.
    """
    global _watching
    with _lock:
        if _watching or os.environ.get(LIVENESS_FD_ENV) != "0":
            return
        try:
            mode = os.fstat(0).st_mode
        except OSError:
            return
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            return
        _watching = True
    threading.Thread(target=_watch_stdin, name="svc-engine-liveness", daemon=True).start()


def _watch_stdin() -> None:
    try:
        while os.read(0, 4096):
            pass  # the engine never writes; whatever else was written is discarded
    except OSError:
        pass
    engine_gone("the engine that started this worker is gone (its liveness pipe on stdin closed)")
