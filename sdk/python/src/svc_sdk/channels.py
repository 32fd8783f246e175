"""Channels: streams of binary and text frames between two workers through the engine.

`engine::channels::create` gives a pair of refs (`{channel_id, access_key, direction}`); a ref travels
in any payload or result, and whoever holds it opens its side (docs/protocol.md, Channels):

- `ChannelReader`: an async iterator of the binary frames (`bytes`); text frames go to `on_text`
  callbacks. Not iterating is what slows the writer: the engine stops reading it.
- `ChannelWriter`: a file-like async writer (`await write(b)`, `await send_text(s)`,
  `await close()`), usable as `async with`: leaving it on an exception tells the reader the stream
  failed rather than ended.

Both are asyncio objects: use them from `async def` handlers (or `asyncio.run` in a thread).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Mapping
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from .errors import SvcError

#: iii's SDKs send 64 KiB frames; the engine takes up to 1 MiB (engine.limits.max_channel_frame_bytes).
CHANNEL_FRAME_BYTES = 64 * 1024
#: What the engine may relay in one frame; a reader accepts up to this.
MAX_CHANNEL_FRAME_BYTES = 1024 * 1024


def is_channel_ref(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("channel_id"), str)
        and isinstance(value.get("access_key"), str)
        and value.get("direction") in ("read", "write")
    )


def channel_url(engine_url: str, ref: Mapping[str, Any]) -> str:
    """`ws://host:port/ws/channels/<id>?key=…&dir=…`, keeping a query already on the engine's URL."""
    parts = urlsplit(engine_url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("key", "dir")]
    query += [("key", ref["access_key"]), ("dir", ref["direction"])]
    path = f"/ws/channels/{quote(ref['channel_id'], safe='')}"
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(query), ""))


def _closed_error(exc: ConnectionClosed) -> SvcError:
    """How the engine ended a channel: any close but 1000 is an error whose reason names its code."""
    frame = exc.rcvd
    return SvcError(
        *_closed_error_parts(frame.code if frame is not None else 1006, frame.reason if frame is not None else "")
    )


def _closed_error_parts(code: int, reason: str) -> tuple[str, str]:
    match = re.match(r"^([a-z_]+): (.*)$", reason, re.S)
    if match:
        return match.group(1), match.group(2)
    return "channel_closed", f"The channel's socket closed with code {code}" + (f" ({reason})" if reason else "")


async def _open(engine_url: str, ref: Mapping[str, Any], token: str | None, direction: str) -> ClientConnection:
    if not is_channel_ref(ref) or ref["direction"] != direction:
        got = ref.get("direction") if isinstance(ref, Mapping) else type(ref).__name__
        raise SvcError(
            "invalid_channel_ref",
            f"A channel {'reader' if direction == 'read' else 'writer'} needs a ref with direction {direction!r}, "
            f"got {got!r}",
        )
    headers = {"Authorization": f"Bearer {token}"} if token else None
    try:
        return await connect(
            channel_url(engine_url, ref),
            additional_headers=headers,
            max_size=MAX_CHANNEL_FRAME_BYTES,
            compression=None,
            open_timeout=10,
            close_timeout=2,
        )
    except InvalidStatus as exc:
        # The engine refuses an upgrade with an HTTP status and {error:{code,message}}.
        response = exc.response
        try:
            error = json.loads(response.body or b"{}").get("error", {})
            if isinstance(error.get("code"), str) and isinstance(error.get("message"), str):
                raise SvcError(error["code"], error["message"]) from None
        except ValueError:
            pass
        raise SvcError(
            "channel_refused", f"The engine refused to open channel {ref['channel_id']}: HTTP {response.status_code}"
        ) from None
    except OSError as exc:
        raise SvcError("channel_closed", f"Channel {ref['channel_id']}: {exc}") from None


class ChannelReader:
    """The read side: `async for chunk in reader` yields the binary frames until the writer ends."""

    def __init__(self, engine_url: str, ref: Mapping[str, Any], token: str | None = None) -> None:
        self.ref = ref
        self._url = engine_url
        self._token = token
        self._ws: ClientConnection | None = None
        self._text_callbacks: list[Callable[[str], Any]] = []

    def on_text(self, callback: Callable[[str], Any]) -> None:
        """Called with every text frame, in order with the binary ones."""
        self._text_callbacks.append(callback)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._ws is None:
            self._ws = await _open(self._url, self.ref, self._token, "read")
        ws = self._ws
        while True:
            try:
                message = await ws.recv()
            except ConnectionClosed as exc:
                if exc.rcvd is not None and exc.rcvd.code == 1000:
                    return
                raise _closed_error(exc) from None
            if isinstance(message, str):
                for callback in self._text_callbacks:
                    callback(message)
            else:
                yield message

    async def read_all(self) -> bytes:
        """Everything to its end, as one bytes (for small streams)."""
        return b"".join([chunk async for chunk in self])

    async def close(self) -> None:
        """Stop reading early: the writer is told `channel_reader_closed`."""
        if self._ws is not None:
            await self._ws.close(1000, "reader_closed")


class ChannelWriter:
    """The write side, file-like: `await write(data)` sends binary frames of 64 KiB; `await close()` ends it."""

    def __init__(self, engine_url: str, ref: Mapping[str, Any], token: str | None = None) -> None:
        self.ref = ref
        self._url = engine_url
        self._token = token
        self._ws: ClientConnection | None = None

    async def _socket(self) -> ClientConnection:
        if self._ws is None:
            self._ws = await _open(self._url, self.ref, self._token, "write")
        return self._ws

    async def write(self, data: bytes | bytearray | memoryview | str) -> None:
        """Send bytes (a str is sent as UTF-8 bytes). Waits while the reader is behind (backpressure)."""
        ws = await self._socket()
        view = memoryview(data.encode() if isinstance(data, str) else data)
        try:
            for at in range(0, len(view), CHANNEL_FRAME_BYTES):
                await ws.send(view[at : at + CHANNEL_FRAME_BYTES].tobytes())
        except ConnectionClosed as exc:
            raise _closed_error(exc) from None

    async def send_text(self, text: str) -> None:
        """A text frame (iii's `send_message`: HTTP control frames such as `set_status` are text)."""
        ws = await self._socket()
        try:
            await ws.send(text)
        except ConnectionClosed as exc:
            raise _closed_error(exc) from None

    async def close(self) -> None:
        """End the stream: the reader gets everything written, then its end."""
        ws = await self._socket()
        await ws.close(1000, "stream_complete")
        frame = ws.protocol.close_rcvd
        if frame is not None and frame.code != 1000:
            raise SvcError(*_closed_error_parts(frame.code, frame.reason))

    async def abort(self) -> None:
        """End the stream as failed: the reader is told `channel_writer_lost`."""
        if self._ws is not None:
            await self._ws.close(4000, "writer_aborted")

    async def __aenter__(self) -> ChannelWriter:
        await self._socket()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            await self.close()
        else:
            await self.abort()
