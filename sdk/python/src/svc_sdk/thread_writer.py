"""Writing a session's frames from handler threads straight to its socket, beside the event loop.

Why: a plain `def` handler runs in a pool thread; handing its answer to the loop to write costs a
wake-up of the loop thread and a GIL hand-over per batch (issue 21; bench/RESULTS.md has the
numbers). The thread writes instead, as long as the socket takes the bytes now.

How it stays correct beside the loop's own writes (websockets writes through the transport):
- Every write to the socket holds one lock: websockets and the Session write through a wrapper of
  the transport (`_LockedTransport`, put in `ws.transport`), and a thread's write holds the lock too,
  so no frame lands inside another.
- A thread writes only while the transport has no bytes waiting and the connection is OPEN;
  otherwise it returns False and the loop writes (with flow control).
- Bytes the socket did not take at once wait in `_leftover`, and the loop writes them ahead of
  anything written after them.
- The thread writes to a descriptor of its own (a dup), closed under the lock once the connection
  is lost: asyncio's descriptor number could name another file by then.
Client frames are masked (RFC 6455 section 5.3), as websockets does, with `os.urandom`.
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from websockets.asyncio.client import ClientConnection
from websockets.protocol import State

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets built without its C extension
    from websockets.utils import apply_mask


def client_frames(texts: Sequence[str]) -> bytes:
    """Text frames as a client sends them: FIN + text opcode, masked length, mask, masked payload."""
    parts: list[bytes] = []
    for text in texts:
        payload = text.encode()
        size = len(payload)
        if size < 126:
            head = struct.pack("!BB", 0x81, 0x80 | size)
        elif size < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, size)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, size)
        mask = os.urandom(4)
        parts += (head, mask, apply_mask(payload, mask))
    return b"".join(parts)


# Transports that write straight to the socket they hold (both try the write at once, and queue only
# what the socket did not take, which `get_write_buffer_size` then counts).
_PLAIN_TCP_TRANSPORTS = {
    ("asyncio.selector_events", "_SelectorSocketTransport"),
    ("uvloop.loop", "TCPTransport"),
}


class _LockedTransport:
    """The connection's transport, with every write under the ThreadWriter's lock; the rest is its own."""

    def __init__(self, transport: asyncio.Transport, write: Callable[[bytes | bytearray | memoryview], None]) -> None:
        self._transport = transport
        self.write = write
        # The calls made per frame, bound once (not looked up through __getattr__ each time).
        self.is_closing = transport.is_closing
        self.get_write_buffer_size = transport.get_write_buffer_size

    def writelines(self, data: Iterable[bytes | bytearray | memoryview]) -> None:
        self.write(b"".join(data))  # the transport's own would bypass the lock

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class ThreadWriter:
    @classmethod
    def attach(cls, ws: ClientConnection) -> ThreadWriter | None:
        """A writer for `ws`, or None where threads cannot write beside the loop (TLS, Windows, other loops)."""
        transport = ws.transport
        sock = transport.get_extra_info("socket")
        # Plain TCP on asyncio's selector loop or uvloop only: TLS bytes and other transports are theirs alone.
        kind = (type(transport).__module__, type(transport).__name__)
        if sys.platform == "win32" or sock is None or kind not in _PLAIN_TCP_TRANSPORTS:
            return None
        try:
            return cls(ws, os.dup(sock.fileno()))
        except (AttributeError, OSError):
            return None

    def __init__(self, ws: ClientConnection, fd: int) -> None:
        self._ws = ws
        self._loop = asyncio.get_running_loop()
        self._lock = threading.Lock()
        self._fd: int | None = fd
        self._leftover: bytes | None = None
        transport = ws.transport
        write = transport.write

        def locked_write(data: bytes | bytearray | memoryview) -> None:
            with self._lock:
                if self._leftover is not None:
                    data = self._leftover + bytes(data)
                    self._leftover = None
                write(data)

        # Set on the connection, not on the transport: uvloop's transport has read-only methods.
        ws.transport = cast(asyncio.Transport, _LockedTransport(transport, locked_write))
        ws.connection_lost_waiter.add_done_callback(lambda _: self._close())

    def _close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def write(self, texts: Sequence[str]) -> bool:
        """From a handler thread: True once the frames are written or queued ahead of later writes."""
        data = client_frames(texts)
        ws = self._ws
        with self._lock:
            fd = self._fd
            if (
                fd is None
                or self._leftover is not None
                or ws.protocol.state is not State.OPEN
                or ws.transport.is_closing()
                or ws.transport.get_write_buffer_size() > 0
            ):
                return False
            try:
                written = os.write(fd, data)
            except BlockingIOError:
                written = 0
            except OSError:
                return False  # the socket is failing: the loop's reader sees it and closes the session
            if written < len(data):
                self._leftover = data[written:]
                try:
                    self._loop.call_soon_threadsafe(self._flush_leftover)
                except RuntimeError:
                    pass  # loop closed: the worker has shut down
        return True

    def _flush_leftover(self) -> None:
        """On the loop: hand the bytes the socket did not take to the transport (the wrapped write prepends them)."""
        if self._leftover is not None and not self._ws.transport.is_closing():
            self._ws.transport.write(b"")
