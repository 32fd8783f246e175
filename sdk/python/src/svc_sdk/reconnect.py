"""Reconnecting to the engine: which engine to try next, how long to wait first, and when to stop.

What decides it: whether the last socket got past the handshake, the reconnect options, and the
engine's refusals (close 4401 `unauthorized`: retry slowly, a token may be added and the engine
restarted; 4410 `stale_worker`: another engine run's secret, never accepted again, so stop).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence

from websockets.exceptions import InvalidURI
from websockets.uri import parse_uri

from .errors import ErrorCode, InvalidArgumentError, SvcError
from .options import ReconnectOptions
from .protocol import STALE_WORKER_CLOSE
from .redact import redact_address

log = logging.getLogger("svc_sdk")

#: Attempts counted after a refusal (`unauthorized`): the backoff is then at its cap at once.
REFUSED_ATTEMPTS = 64


def parse_engine_urls(url: str | Sequence[str]) -> list[str]:
    """Engine addresses: one URL, a comma-separated list (as $SVC_URL may hold), or a sequence.

    Several are the engines of one cluster (docs/cluster.md): the connection moves on to the next
    one whenever the current one closes or cannot be reached.
    """
    parts = url.split(",") if isinstance(url, str) else [p for u in url for p in u.split(",")]
    urls = [u.strip() for u in parts if u.strip()]
    if not urls:
        raise ValueError(f"no engine URL given (got {url!r})")
    for u in urls:
        # websockets refuses such a URL inside the connection's thread, where its traceback ended
        # the thread and left a process that exited 0 without ever connecting: refuse it here, in
        # register_worker, as the TypeScript SDK refuses a malformed URL.
        try:
            parse_uri(u)
        except InvalidURI as exc:
            raise InvalidArgumentError(
                f"cannot connect to the engine at {redact_address(u)!r}: {exc.msg}"
                " (an engine URL looks like ws://localhost:49134; check $SVC_URL or the url given to register_worker)"
            ) from None
    return urls


def backoff_delay(options: ReconnectOptions, attempt: int) -> float:
    """Seconds to wait before reconnect attempt number `attempt` (1-based).

    initial_delay_ms * factor**(attempt - 1), capped at max_delay_ms, less a random share of at most
    `jitter`: jitter only shortens a delay, so the cap holds and workers that lost the engine
    together still come back spread out, at the cap too. The TypeScript SDK's backoffDelay computes
    the same (it counts attempts from 0).
    """
    base = min(
        options.max_delay_ms,
        options.initial_delay_ms * options.factor ** min(max(0, attempt - 1), REFUSED_ATTEMPTS),
    )
    return base * random.uniform(1 - options.jitter, 1) / 1000


class Reconnects:
    """The engines to connect to, the attempts since the last accepted socket, and the last refusal."""

    def __init__(self, url: str | Sequence[str], options: ReconnectOptions) -> None:
        self.urls = parse_engine_urls(url)
        self._index = 0
        self._options = options
        self._attempt = 0
        #: Why the engine refused this worker for good (`stale_worker`: another engine run's secret).
        self.stale: str | None = None
        #: Why the engine last refused a connection (`unauthorized`, `stale_worker`), until one is accepted.
        self.refusal: SvcError | None = None
        self.refused = asyncio.Event()
        #: The message of the engine's `error` frame that precedes its refusal's close.
        self.refusal_message: str | None = None

    @property
    def url(self) -> str:
        """The engine address in use (of those given, the one connected to or being tried)."""
        return self.urls[self._index]

    def accepted(self) -> None:
        """A socket got past the handshake: the refusal is over."""
        self.refusal = None
        self.refused.clear()

    def refuse(self, code: int, close_reason: str) -> None:
        """The engine refused this connection (close 4401 `unauthorized`, 4410 `stale_worker`)."""
        why = self.refusal_message or close_reason.removeprefix("unauthorized: ").removeprefix("stale_worker: ")
        self.refusal_message = None
        shown = redact_address(self.url)
        if code == STALE_WORKER_CLOSE:
            self.stale = why or "stale_worker"
            self.refusal = SvcError(ErrorCode.STALE_WORKER, f"The engine at {shown} refused this worker: {self.stale}")
        else:
            message = f"The engine at {shown} refused this connection: {why or 'unauthorized'}"
            self.refusal = SvcError(ErrorCode.UNAUTHORIZED, message)
        self.refused.set()

    def next_delay(self, was_ready: bool, reason: str) -> float | None:
        """After a socket ended (`reason`): seconds to wait before trying the next engine, or None to stop."""
        if was_ready:
            self._attempt = 0  # this socket completed its handshake: start backoff from scratch
        if self.stale is not None:
            # No engine will ever accept this run secret again: the engine that started us is gone.
            log.error("svc: %s", self.refusal.message if self.refusal else self.stale)
            return None
        if self.refusal is not None:
            # Refused for its token: retrying at once cannot help; keep trying slowly, as a token
            # may be added to the engine's config and the engine restarted.
            log.error("svc: %s", self.refusal.message)
            self._attempt = max(self._attempt, REFUSED_ATTEMPTS)
        # With several engines (a cluster), try the next one: the one that just closed or
        # could not be reached may be gone for good.
        self._index = (self._index + 1) % len(self.urls)
        self._attempt += 1
        limit = self._options.max_attempts
        if limit is not None and self._attempt > limit:
            log.error(
                "svc: giving up on the engine at %s after %d attempts (%s)",
                redact_address(self.url),
                limit,
                redact_address(reason),
            )
            return None
        delay = backoff_delay(self._options, self._attempt)
        log.warning("svc: %s; reconnecting to %s in %.1f s", redact_address(reason), redact_address(self.url), delay)
        return delay
