"""A file that says whether this worker is ready, for orchestrators' exec probes.

`svc deploy kubernetes` sets $SVC_READY_FILE and probes it (docs/deploy.md): `ready <name>` while
the engine has accepted the connection and the worker's functions are registered, `not ready:
<state>` otherwise. Written from the worker's loop and touched every REFRESH_S while ready, so a
probe that also checks its age fails for a loop that no longer runs. A file and not a port: nothing
listens, so nothing outside the pod can reach it. The TypeScript SDK writes the same (ready-file.ts).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets

log = logging.getLogger("svc_sdk")

#: While ready the file is touched this often (seconds).
REFRESH_S = 5.0


def ready_file_from_env() -> str | None:
    """$SVC_READY_FILE; blank reads as unset."""
    path = os.environ.get("SVC_READY_FILE", "")
    return path if path.strip() else None


class ReadyFile:
    def __init__(self, path: str, worker_name: str) -> None:
        self.path = path
        self._worker_name = worker_name
        self._ready = False
        self._failed = False
        self.update(False, "disconnected")

    def update(self, ready: bool, state: str = "connected") -> None:
        """The worker is (not) ready now; `state` says what it is doing instead."""
        self._ready = ready
        self._write(f"ready {self._worker_name}\n" if ready else f"not ready: {state}\n")

    def stopped(self, refused: bool) -> None:
        """The worker stopped: the file goes, unless the engine refused the worker for good; then its
        process lives on without a worker, and a missing file would send the probe to the engine."""
        if refused:
            self.update(False, "closed")
        else:
            self.remove()

    def remove(self) -> None:
        """The worker is closed: the file goes (a restarted process writes it anew)."""
        self._ready = False
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            self._fail(exc)

    async def run(self) -> None:
        """On the worker's loop: touch the file while ready."""
        while True:
            await asyncio.sleep(REFRESH_S)
            if self._ready:
                try:
                    os.utime(self.path)
                except OSError as exc:
                    self._fail(exc)

    def _write(self, text: str) -> None:
        # Whole or not at all: a probe never reads half a line (written aside, then renamed over).
        # The file aside has a name nobody can guess and is created here (O_EXCL, which follows no
        # link), so a link someone left in a shared directory such as /tmp is never written through.
        aside = f"{self.path}.{secrets.token_hex(8)}.tmp"
        created = False
        try:
            fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
            created = True
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(aside, self.path)
        except OSError as exc:
            if created:
                with contextlib.suppress(OSError):
                    os.unlink(aside)
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        # Logged once: a path that cannot be written stays so; the worker works on without the file.
        if not self._failed:
            self._failed = True
            log.warning("svc: cannot write the ready file %s (SVC_READY_FILE): %s", self.path, exc)
