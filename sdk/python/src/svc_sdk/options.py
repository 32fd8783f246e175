"""Options for `register_worker`: worker identity, timeouts, limits and reconnect behaviour."""

from __future__ import annotations

import importlib.util
import os
import socket
from dataclasses import dataclass, field

from .protocol import DEFAULT_ENGINE_URL, DEFAULT_MAX_FRAME_BYTES, DEFAULT_PROCESS_REPORT_MS
from .ready_file import ready_file_from_env


def default_url() -> str:
    """The engine address: `$SVC_URL` when set, else ws://localhost:49134."""
    return os.environ.get("SVC_URL") or DEFAULT_ENGINE_URL


def default_namespace() -> str | None:
    """$SVC_NAMESPACE; blank reads as unset (a shell's `NS=`), and unset is the default namespace."""
    value = os.environ.get("SVC_NAMESPACE")
    return value if value is not None and value.strip() else None


EVENT_LOOPS = ("uvloop", "asyncio")


def uvloop_installed() -> bool:
    """Found without importing it (runtime.py imports it when a worker's loop is made)."""
    return importlib.util.find_spec("uvloop") is not None


def default_event_loop() -> str:
    """$SVC_EVENT_LOOP when set, else uvloop where it is installed (a dependency where it has wheels)."""
    chosen = os.environ.get("SVC_EVENT_LOOP", "").strip()
    if chosen:
        return chosen
    return "uvloop" if uvloop_installed() else "asyncio"


def default_worker_name() -> str:
    return os.environ.get("SVC_WORKER_NAME") or f"{socket.gethostname()}:{os.getpid()}"


def _report_interval_from_env() -> int:
    """$SVC_PROCESS_REPORT_MS when it is a whole number of ms (0: no reports), else the default."""
    v = os.environ.get("SVC_PROCESS_REPORT_MS", "")
    return int(v) if v.isdigit() and len(v) <= 9 else DEFAULT_PROCESS_REPORT_MS


@dataclass(frozen=True)
class ReconnectOptions:
    """Backoff after any close, clean ones (1000/1001) included: initial * factor**n, capped, with jitter.

    The counter resets once a connection completes its handshake; reconnecting never stops before
    `shutdown()` unless `max_attempts` is set. After an `unauthorized` refusal the next attempts wait
    `max_delay_ms`. The defaults are the TypeScript SDK's (DEFAULT_RECONNECT).
    """

    initial_delay_ms: int = 200
    max_delay_ms: int = 30_000
    factor: float = 2.0
    #: Each delay is multiplied by a random value in [1 - jitter, 1].
    jitter: float = 0.3
    #: Consecutive failed attempts before giving up; None retries forever.
    max_attempts: int | None = None

    def __post_init__(self) -> None:
        if self.initial_delay_ms <= 0 or self.max_delay_ms < self.initial_delay_ms:
            raise ValueError(
                f"ReconnectOptions: need 0 < initial_delay_ms <= max_delay_ms, "
                f"got {self.initial_delay_ms} and {self.max_delay_ms}"
            )
        if self.factor < 1:
            raise ValueError(f"ReconnectOptions.factor must be >= 1, got {self.factor}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"ReconnectOptions.jitter must be in [0, 1), got {self.jitter}")


@dataclass(frozen=True)
class InitOptions:
    """How a worker connects and behaves. Every field has a sensible default."""

    #: Name shown in the console and attached to log lines. Default: $SVC_WORKER_NAME or hostname:pid.
    worker_name: str = field(default_factory=default_worker_name)
    #: The namespace (iii 0.23+) this worker's functions are registered in, and its calls resolve in
    #: unless they name another. Default: $SVC_NAMESPACE (blank reads as unset), else `default`.
    namespace: str | None = field(default_factory=default_namespace)
    description: str | None = None
    #: Default deadline of `trigger()` calls; None uses the engine's configured default (30 s).
    invocation_timeout_ms: int | None = None
    #: Opening the WebSocket and the `hello` exchange must finish within this time.
    connect_timeout_ms: int = 10_000
    #: Largest frame sent or received (the engine's default limit). Larger payloads fail locally
    #: with `payload_too_large` instead of killing the connection.
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: Threads running plain (sync) handlers. Created once and lazily; a handler blocked in a nested
    #: `trigger()` holds one, so keep this above the nesting you expect under load.
    max_handler_threads: int = 64
    #: WebSocket keepalive ping interval; None disables it. A dead engine is noticed within 2x this.
    keepalive_interval_ms: int | None = 20_000
    reconnect: ReconnectOptions = field(default_factory=ReconnectOptions)
    #: How often the worker reports its process's CPU, memory and event loop lag to the engine
    #: (engine::workers::report; the console's Workers page and /metrics show them). Default:
    #: $SVC_PROCESS_REPORT_MS, else 5000. 0 turns it off.
    process_report_interval_ms: int = field(default_factory=lambda: _report_interval_from_env())
    #: The event loop the connection and `async def` handlers run on: "uvloop" (the default where it
    #: is installed: it comes with svc-sdk where PyPI has wheels of it, and answers calls faster,
    #: issue 21 in bench/RESULTS.md) or "asyncio" (the standard library's). Default: $SVC_EVENT_LOOP,
    #: else uvloop where installed, else asyncio.
    event_loop: str = field(default_factory=default_event_loop)
    #: Install SIGINT/SIGTERM handlers (main thread only) that close the connection cleanly.
    handle_signals: bool = True
    #: Sent as `Authorization: Bearer ...` when the engine requires tokens. Default: $SVC_TOKEN.
    token: str | None = field(default_factory=lambda: os.environ.get("SVC_TOKEN") or None)
    #: The secret the engine gave this process when it started it, sent as `x-svc-run-secret`: only
    #: that engine run accepts it. Refused (`stale_worker`, close 4410), the worker stops for good;
    #: when it is $SVC_RUN_SECRET the process exits too (its engine is gone; see supervised.py).
    run_secret: str | None = field(default_factory=lambda: os.environ.get("SVC_RUN_SECRET") or None)
    #: Export this worker's own spans and Logger lines with OpenTelemetry over OTLP (the `svc-sdk[otel]`
    #: extra; docs/observability.md). None: on when OTEL_TRACES_EXPORTER lists `otlp` (and
    #: OTEL_SDK_DISABLED is not `true`), else off, when nothing of OpenTelemetry is imported.
    otel: bool | None = None
    #: A file that says whether this worker is ready (connected, its functions registered), for an
    #: orchestrator's exec probe: `ready <name>` or `not ready: <state>`, touched every 5 s while
    #: ready, removed when the worker stops (kept, `not ready: closed`, when refused for good);
    #: ready_file.py, docs/deploy.md. Default: $SVC_READY_FILE.
    ready_file: str | None = field(default_factory=ready_file_from_env)

    def __post_init__(self) -> None:
        if not self.worker_name:
            raise ValueError("InitOptions.worker_name must be a non-empty string")
        if self.namespace is not None and (not isinstance(self.namespace, str) or not self.namespace.strip()):
            raise ValueError(
                f"InitOptions.namespace must be a non-blank string, got {self.namespace!r}; "
                "leave it unset for the default namespace"
            )
        if self.invocation_timeout_ms is not None and self.invocation_timeout_ms <= 0:
            raise ValueError(f"InitOptions.invocation_timeout_ms must be > 0, got {self.invocation_timeout_ms}")
        if self.max_frame_bytes < 1024:
            raise ValueError(f"InitOptions.max_frame_bytes must be >= 1024, got {self.max_frame_bytes}")
        if self.process_report_interval_ms < 0:
            raise ValueError(
                f"InitOptions.process_report_interval_ms must be >= 0, got {self.process_report_interval_ms}"
            )
        if self.event_loop not in EVENT_LOOPS:
            raise ValueError(
                f"InitOptions.event_loop must be 'uvloop' or 'asyncio', got {self.event_loop!r}"
                " (the default comes from $SVC_EVENT_LOOP)"
            )
        if self.event_loop == "uvloop" and not uvloop_installed():
            raise ValueError(
                "InitOptions.event_loop is 'uvloop' but uvloop is not installed here (pip install uvloop);"
                " set it, or $SVC_EVENT_LOOP, to 'asyncio'"
            )
        if self.max_handler_threads < 1:
            raise ValueError(f"InitOptions.max_handler_threads must be >= 1, got {self.max_handler_threads}")
