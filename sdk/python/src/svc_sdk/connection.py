"""The WebSocket to the engine: connect, handshake, read frames, and reconnect (reconnect.py) after every close.

A `Connection` knows nothing about functions or calls. Each open socket is a `Session`; the worker
gets `on_open` once the svc handshake (`hello`, then `reattach` on a reconnect) is done, every other
frame through `on_frame`, and `on_close` when the socket is gone. Everything runs on one event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from ._background import spawn
from ._version import __version__
from .errors import ErrorCode, SvcError
from .options import InitOptions
from .protocol import (
    ANSWERS_HELLO_FEATURE,
    FEATURES,
    PROTOCOL_VERSION,
    RUN_SECRET_HEADER,
    STALE_WORKER_CLOSE,
    UNAUTHORIZED_CLOSE,
    Frame,
    encode,
    utf8_size,
)
from .reconnect import Reconnects
from .redact import redact_address
from .thread_writer import ThreadWriter

log = logging.getLogger("svc_sdk")


class Session:
    """One open socket, what the engine told us on it, and sending on it."""

    def __init__(self, ws: ClientConnection, max_frame_bytes: int) -> None:
        self.ws = ws
        #: The smaller of InitOptions.max_frame_bytes and the engine's (from its `hello`).
        self.max_frame_bytes = max_frame_bytes
        self.option_max_frame_bytes = max_frame_bytes
        self.engine_max_frame_bytes: int | None = None
        self.features: frozenset[str] = frozenset()
        self.engine: dict[str, Any] = {}
        self.worker_id: str | None = None
        self.reattach_token: str | None = None
        self.closed = False
        self.hello: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: Writes from handler threads straight to the socket (None where that is not possible).
        self._thread_writer = ThreadWriter.attach(ws)

    def write_from_thread(self, texts: Sequence[str]) -> bool:
        """From a handler thread: write text frames to the socket in one write, if it takes writes now.

        False (nothing written) when that is not possible now: then the frames go through the loop
        (handlers.Outbox), which waits for the socket.
        """
        writer = self._thread_writer
        return writer is not None and not self.closed and writer.write(texts)

    def encode_checked(self, frame: Frame) -> str:
        """Serialize `frame`, refusing one the engine would reject for its size.

        Raises SvcError(payload_too_large), or TypeError/ValueError for values that are not JSON,
        or not UTF-8: a lone surrogate ("\\ud800") is JSON text but would fail the writer instead.
        A value nested deeper than Python's recursion limit is a ValueError too: json.dumps raises
        RecursionError there, which callers of this method would not catch (an answer never sent).
        """
        try:
            text = encode(frame)
        except RecursionError:
            raise ValueError(
                f"it nests arrays and objects deeper than Python can encode (recursion limit "
                f"{sys.getrecursionlimit()}); the engine takes at most 128 levels in a frame"
            ) from None
        # A character is at most 4 bytes in UTF-8: most frames skip the exact count.
        if len(text) * 4 > self.max_frame_bytes:
            size = utf8_size(text)  # raises UnicodeEncodeError (a ValueError) on a lone surrogate
            if size > self.max_frame_bytes:
                raise SvcError(ErrorCode.PAYLOAD_TOO_LARGE, self._too_large(frame, size))
        elif not text.isascii():  # isascii() is O(1); only non-ASCII text can hold a lone surrogate
            text.encode()  # raises UnicodeEncodeError (a ValueError) on one
        return text

    def _too_large(self, frame: Frame, size: int) -> str:
        """Why `frame` is not sent, naming what a user must know to act: the call (or which function's
        result), the size, the limit and the setting it comes from."""
        kind, function_id = frame.get("type"), frame.get("function_id")
        what = (
            f"Call of {function_id}"
            if kind == "invokefunction"
            else f"Result of {function_id}"
            if kind == "invocationresult"
            else f"A {kind} frame"
        )
        engine = self.engine_max_frame_bytes
        if engine is not None and engine <= self.option_max_frame_bytes:
            source = "the engine's max_frame_bytes, announced at connect"
        elif engine is not None:
            source = f"InitOptions.max_frame_bytes; the engine announced max_frame_bytes {engine} at connect"
        else:
            source = "InitOptions.max_frame_bytes"
        return f"{what}: frame of {size} bytes exceeds the limit of {self.max_frame_bytes} bytes ({source})"

    async def send(self, frame: Frame) -> None:
        await self.send_text(self.encode_checked(frame))

    async def send_texts(self, texts: Sequence[str]) -> None:
        """Send several frames with one socket write: a batch of answers costs one syscall, not one each.

        `ws.send` writes every frame on its own (and enters its send context per frame); here the
        frames are queued on the websockets protocol together and the bytes it has for the socket
        go out joined, inside one send context, which keeps its checks, flow control and closing.
        """
        if self.closed:
            raise SvcError(ErrorCode.CONNECTION_LOST, "The connection to the engine is closed")
        ws = self.ws
        try:
            async with ws.send_context():
                protocol = ws.protocol
                for text in texts:
                    protocol.send_text(text.encode())
                chunks = protocol.data_to_send()
                # An empty chunk means "half-close" and only follows a close frame, which cannot
                # be queued while the send context holds the connection open; kept as a guard.
                if all(chunks):
                    ws.transport.write(b"".join(chunks))
                else:
                    for chunk in chunks:
                        if chunk:
                            ws.transport.write(chunk)
        except ConnectionClosed as exc:
            raise SvcError(ErrorCode.CONNECTION_LOST, f"The connection to the engine closed ({exc})") from None

    def write_now(self, text: str) -> bool:
        """Write one frame at once, from the loop thread, if the socket takes it now.

        False (nothing written) when the connection is not open or bytes are already waiting for the
        socket: then the caller sends it with `send_texts`, which waits for the socket (flow control).
        """
        ws = self.ws
        if self.closed or ws.protocol.state is not State.OPEN or ws.transport.get_write_buffer_size() > 0:
            return False
        ws.protocol.send_text(text.encode())
        ws.send_data()
        return True

    async def send_text(self, text: str) -> None:
        if self.closed:
            raise SvcError(ErrorCode.CONNECTION_LOST, "The connection to the engine is closed")
        try:
            await self.ws.send(text)
        except ConnectionClosed as exc:
            raise SvcError(ErrorCode.CONNECTION_LOST, f"The connection to the engine closed ({exc})") from None


class ConnectionHandler(Protocol):
    async def on_open(self, session: Session) -> None: ...
    def on_frame(self, session: Session, frame: Frame) -> None: ...
    def on_close(self, session: Session, reason: str) -> None: ...


class Connection:
    def __init__(self, url: str | Sequence[str], options: InitOptions, handler: ConnectionHandler) -> None:
        self._reconnects = Reconnects(url, options.reconnect)
        self._options = options
        self._handler = handler
        self.session: Session | None = None  # set while open and past on_open
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        # Identity of the last socket, sent as `reattach` on the next one so the engine hands our
        # functions over to the new socket instead of racing the old one's cleanup.
        self._previous: tuple[str, str | None] | None = None
        self._connecting: asyncio.Future[ClientConnection] | None = None
        self._ws: ClientConnection | None = None  # the current socket, in any state

    @property
    def url(self) -> str:
        """The engine address in use (of those given, the one connected to or being tried)."""
        return self._reconnects.url

    @property
    def stale(self) -> str | None:
        """Why the engine refused this worker for good (`stale_worker`: another engine run's secret)."""
        return self._reconnects.stale

    @property
    def refusal(self) -> SvcError | None:
        """Why the engine last refused a connection (`unauthorized`, `stale_worker`), until one is accepted."""
        return self._reconnects.refusal

    @property
    def shown_url(self) -> str:
        """The address in use as logs and messages show it: without a token or password."""
        return redact_address(self.url)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def run(self) -> None:
        """Connect, serve, and reconnect after any close (reconnect.py: where, when), until `stop()`."""
        while not self._stop.is_set():
            was_ready, reason = await self._connect_and_serve()
            if self._stop.is_set():
                break
            delay = self._reconnects.next_delay(was_ready, reason)
            if delay is None:
                self._stop.set()
                break
            try:
                await asyncio.wait_for(self._stop.wait(), delay)
            except TimeoutError:
                pass

    async def stop(self) -> None:
        self._stop.set()
        if self._connecting is not None:
            self._connecting.cancel()
        if self._ws is not None:
            await self._ws.close(1000, "worker shutting down")

    async def wait_ready(self, timeout: float) -> Session:
        """The open session, waiting up to `timeout` seconds for one.

        Raises at once when the engine refused the last connection (SvcError `unauthorized`,
        `stale_worker`) or the worker stops (`shutting_down`); TimeoutError when none opened in time.
        """
        session = self._usable()
        if session is not None:
            return session
        ready = asyncio.ensure_future(self._ready.wait())
        stop = asyncio.ensure_future(self._stop.wait())
        refused = asyncio.ensure_future(self._reconnects.refused.wait())
        try:
            await asyncio.wait({ready, stop, refused}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
            stop.cancel()
            refused.cancel()
        session = self._usable()
        if session is not None:
            return session
        raise TimeoutError

    def _usable(self) -> Session | None:
        """The open session, or None while connecting; raises when waiting for one is pointless."""
        session = self.session
        if session is not None and not session.closed:
            return session
        if self._stop.is_set():
            # Stopped for good by a `stale_worker` refusal: say so, as the TypeScript SDK does.
            if self.stale is not None and self.refusal is not None:
                raise self.refusal
            raise SvcError(ErrorCode.SHUTTING_DOWN, "The worker is shutting down")
        if self.refusal is not None:
            raise self.refusal
        return None

    async def _connect_and_serve(self) -> tuple[bool, str]:
        """One socket's life: whether it got past the handshake, and why it ended."""
        opts = self._options
        keepalive = opts.keepalive_interval_ms / 1000 if opts.keepalive_interval_ms else None
        self._connecting = asyncio.ensure_future(
            connect(
                self.url,
                # The engine re-wraps what it forwards (ids, function_id, timeout_ms), so a payload
                # it accepted may reach us a little larger than the limit itself.
                max_size=opts.max_frame_bytes + 64 * 1024,
                # Many small frames arrive together under load; the default (16) pauses and resumes
                # reading around every frame.
                max_queue=1024,
                open_timeout=opts.connect_timeout_ms / 1000,
                ping_interval=keepalive,
                ping_timeout=keepalive,
                close_timeout=2,
                compression=None,
                user_agent_header=f"svc-sdk-python/{__version__}",
                additional_headers=self._headers(),
            )
        )
        try:
            ws = await self._connecting
        except asyncio.CancelledError:
            if self._stop.is_set():
                return False, "stopped"
            raise
        except Exception as exc:
            return False, f"cannot connect ({exc or type(exc).__name__})"
        finally:
            self._connecting = None
        self._ws = ws
        session = Session(ws, opts.max_frame_bytes)
        reader = asyncio.create_task(self._read(session))
        ready = False
        failure: str | None = None
        try:
            await asyncio.wait_for(self._handshake(session), opts.connect_timeout_ms / 1000)
            await self._handler.on_open(session)
            if not session.closed:
                ready = True
                self.session = session
                self._reconnects.accepted()
                self._ready.set()
                log.info("svc: connected to %s as worker %s", self.shown_url, session.worker_id)
            await reader
        except TimeoutError:
            failure = f"the engine did not answer the handshake within {opts.connect_timeout_ms} ms"
        except (SvcError, ConnectionClosed) as exc:
            failure = f"the connection closed during the handshake ({exc})"
        except Exception as exc:
            log.exception("svc: unexpected error on the connection to %s", self.shown_url)
            failure = f"unexpected error {exc!r}"
        finally:
            session.closed = True
            self.session = None
            self._ready.clear()
            reader.cancel()
            if session.worker_id is not None:
                self._previous = (session.worker_id, session.reattach_token)
            code, why = ws.close_code, ws.close_reason
            if code in (STALE_WORKER_CLOSE, UNAUTHORIZED_CLOSE):
                self._reconnects.refuse(code, why or "")
            if failure is None:
                failure = (
                    f"connection closed (code {code}{', ' + why if why else ''})"
                    if code is not None
                    else "connection lost without a close frame"
                )
            # Fail calls in flight before the (possibly slow) closing handshake.
            self._handler.on_close(session, failure)
            await ws.close()
            self._ws = None
        return ready, failure

    def _headers(self) -> dict[str, str] | None:
        headers: dict[str, str] = {}
        if self._options.token:
            headers["Authorization"] = f"Bearer {self._options.token}"
        if self._options.run_secret:
            headers[RUN_SECRET_HEADER] = self._options.run_secret
        return headers or None

    async def _handshake(self, session: Session) -> None:
        await session.send(
            {"type": "hello", "protocol": PROTOCOL_VERSION, "features": list(FEATURES), "role": "worker"}
        )
        await session.hello
        if self._previous is not None:
            worker_id, token = self._previous
            reattach: Frame = {"type": "reattach", "previous_worker_id": worker_id}
            if token is not None:
                reattach["reattach_token"] = token
            await session.send(reattach)

    async def _read(self, session: Session) -> None:
        try:
            async for message in session.ws:
                try:
                    frame = json.loads(message)
                except ValueError:
                    log.warning("svc: ignoring a frame that is not JSON: %.100r", message)
                    continue
                if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
                    log.warning("svc: ignoring a frame without a string type: %.100r", message)
                    continue
                try:
                    self._dispatch(session, frame)
                except Exception:
                    log.exception("svc: error while handling a %s frame", frame["type"])
        except ConnectionClosed:
            pass
        finally:
            session.closed = True
            if not session.hello.done():
                session.hello.set_exception(SvcError(ErrorCode.CONNECTION_LOST, "closed during handshake"))
                session.hello.exception()  # mark retrieved: nobody may be waiting any more

    def _dispatch(self, session: Session, frame: Frame) -> None:
        kind = frame["type"]
        if kind == "hello":
            features = frame.get("features")
            session.features = (
                frozenset(f for f in features if isinstance(f, str)) if isinstance(features, list) else frozenset()
            )
            engine = frame.get("engine")
            if isinstance(engine, dict):
                session.engine = engine
                limit = engine.get("max_frame_bytes")
                if isinstance(limit, int) and limit > 0:
                    session.engine_max_frame_bytes = limit
                    session.max_frame_bytes = min(session.option_max_frame_bytes, limit)
            if not session.hello.done():
                session.hello.set_result(None)
        elif kind == "workerregistered":
            worker_id, token = frame.get("worker_id"), frame.get("reattach_token")
            session.worker_id = worker_id if isinstance(worker_id, str) else None
            session.reattach_token = token if isinstance(token, str) else None
            # Sent at connect: an engine that will answer our `hello` says so here; one that does not
            # (iii's drops the frame) would leave the handshake waiting until connect_timeout_ms.
            features = frame.get("features")
            if not (isinstance(features, list) and ANSWERS_HELLO_FEATURE in features) and not session.hello.done():
                session.hello.set_result(None)
        elif kind == "ping":
            spawn(self._pong(session))
        elif kind == "pong":
            pass
        elif kind == "registrationrejected":
            # Only with engine.namespace_conflicts: exclusive (iii 0.23's rules); the engine closes the
            # connection itself for WORKER_NAMESPACE_CONFLICT.
            log.warning(
                "svc: the engine rejected a registration: %s in namespace %r (function %r, worker name %r, held by %r)",
                frame.get("code"),
                frame.get("namespace"),
                frame.get("function_id"),
                frame.get("worker_name"),
                frame.get("owner_worker_id"),
            )
        elif kind == "error":
            error = frame.get("error")
            ref = frame.get("ref")
            if isinstance(error, dict) and error.get("code") in (ErrorCode.STALE_WORKER, ErrorCode.UNAUTHORIZED):
                self._reconnects.refusal_message = str(error.get("message"))  # reported once, from run()
                return
            log.warning("svc: the engine reported an error: %s (about %s)", error, ref)
            # An engine without the svc extensions refuses `hello`: carry on as a plain iii client.
            if isinstance(ref, dict) and ref.get("type") == "hello" and not session.hello.done():
                session.hello.set_result(None)
        else:
            self._handler.on_frame(session, frame)

    async def _pong(self, session: Session) -> None:
        try:
            await session.send({"type": "pong"})
        except SvcError:
            pass
