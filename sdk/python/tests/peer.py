"""A scripted stand-in for the engine: a websockets server on a free loopback port, in a thread of
its own. Tests subclass it and serve each connection in `handle` where the real engine cannot be
made to do what the test needs (close with a given code, show the frames exactly as sent)."""

from __future__ import annotations

import asyncio
import threading

from websockets.asyncio.server import ServerConnection, serve


class ScriptedPeer:
    def __init__(self) -> None:
        self.url = ""
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),), daemon=True)

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(5)

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)

    async def handle(self, ws: ServerConnection) -> None:
        raise NotImplementedError

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with serve(self.handle, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            self.url = f"ws://127.0.0.1:{port}"
            self._ready.set()
            await self._stop.wait()
