"""Channels from Python (issue 22): a handler reads a stream handed to it in its payload, a writer's
bytes and text frames arrive intact, and the engine's refusals and ends arrive as SvcError codes."""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import Any

import pytest

from svc_sdk import ChannelWriter, SvcError, Worker

from .conftest import WorkerFactory, wait_for


def _callable(worker: Worker, function_id: str) -> bool:
    listed = worker.trigger({"function_id": "engine::functions::list", "payload": {}})
    return any(f["function_id"] == function_id for f in listed["functions"])


def test_a_handler_hashes_a_stream_passed_in_its_payload(make_worker: WorkerFactory) -> None:
    server = make_worker("hasher")

    async def hash_body(data: dict[str, Any]) -> dict[str, Any]:
        digest = hashlib.sha256()
        size = 0
        async for chunk in server.open_reader(data["body"]):
            digest.update(chunk)
            size += len(chunk)
        return {"sha256": digest.hexdigest(), "size": size}

    server.register_function("py::hash", hash_body)
    client = make_worker("uploader")
    wait_for(lambda: _callable(client, "py::hash"), what="py::hash to be registered")
    body = os.urandom(20 * 1024 * 1024 + 3)

    async def upload() -> dict[str, Any]:
        pair = await client.create_channel()
        assert pair["writer"]["direction"] == "write"
        assert pair["reader"]["direction"] == "read"
        call = asyncio.ensure_future(
            client.trigger_async({"function_id": "py::hash", "payload": {"body": pair["reader"]}})
        )
        async with client.open_writer(pair["writer"]) as writer:
            await writer.write(body)
        result: dict[str, Any] = await call
        return result

    assert asyncio.run(upload()) == {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}


def test_text_and_binary_frames_arrive_in_order(make_worker: WorkerFactory) -> None:
    worker = make_worker("both-sides")

    async def run() -> tuple[list[str], bytes]:
        pair = await worker.create_channel(buffer_size=8)
        reader = worker.open_reader(pair["reader"])
        texts: list[str] = []
        reader.on_text(texts.append)
        writer = worker.open_writer(pair["writer"])
        await writer.send_text('{"type":"set_status","status_code":201}')
        await writer.write(b"hello ")
        await writer.write("world")
        closing = asyncio.ensure_future(writer.close())
        data = await reader.read_all()
        await closing
        return texts, data

    assert asyncio.run(run()) == (['{"type":"set_status","status_code":201}'], b"hello world")


async def _write_until_refused(writer: ChannelWriter) -> None:
    for _ in range(1000):
        await writer.write(b"more" * 1000)
        await asyncio.sleep(0.001)


def test_refusals_and_early_ends_are_svc_errors(make_worker: WorkerFactory) -> None:
    worker = make_worker("refused")

    async def run() -> None:
        pair = await worker.create_channel()
        with pytest.raises(SvcError) as wrong_side:
            await worker.open_writer(pair["reader"]).write(b"x")
        assert wrong_side.value.code == "invalid_channel_ref"
        with pytest.raises(SvcError) as wrong_key:
            await worker.open_reader({**pair["reader"], "access_key": pair["writer"]["access_key"]}).read_all()
        assert wrong_key.value.code == "channel_key_invalid"
        with pytest.raises(SvcError) as bad_size:
            await worker.create_channel(buffer_size=5000)
        assert bad_size.value.code == "invalid_payload"
        # The reader stops early: the writer learns it.
        reader = worker.open_reader(pair["reader"])
        writer = worker.open_writer(pair["writer"])
        await writer.write(b"first")
        async for _ in reader:
            break
        await reader.close()
        with pytest.raises(SvcError) as stopped:
            await _write_until_refused(writer)
        assert stopped.value.code == "channel_reader_closed"

    asyncio.run(run())
