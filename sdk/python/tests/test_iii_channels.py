"""An unmodified iii-sdk (PyPI) worker streams through svc's channels: it is handed a read ref and a
write ref in its payload (iii-sdk opens them itself), reads one and answers through the other."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from svc_sdk import Worker

from .conftest import Engine, WorkerFactory, wait_for
from .test_iii_compat import run_iii_fixture


@pytest.fixture
def iii_channel_worker(engine: Engine) -> Iterator[subprocess.Popen[str]]:
    yield from run_iii_fixture(engine, "iii_channel_worker.py")


def _listed(worker: Worker, function_id: str) -> bool:
    listed = worker.trigger({"function_id": "engine::functions::list", "payload": {}})
    return any(f["function_id"] == function_id for f in listed["functions"])


def test_iii_sdk_handler_reads_and_answers_through_channels(
    make_worker: WorkerFactory, iii_channel_worker: subprocess.Popen[str]
) -> None:
    ours = make_worker("svc-side")
    wait_for(lambda: _listed(ours, "iii::upper"), timeout=20, what="iii::upper to be registered")

    async def run() -> tuple[Any, list[str], bytes]:
        body = await ours.create_channel()
        response = await ours.create_channel()
        reader = ours.open_reader(response["reader"])
        texts: list[str] = []
        reader.on_text(texts.append)
        answer = asyncio.ensure_future(reader.read_all())
        payload = {"body": body["reader"], "response": response["writer"]}
        call = asyncio.ensure_future(ours.trigger_async({"function_id": "iii::upper", "payload": payload}))
        async with ours.open_writer(body["writer"]) as writer:
            await writer.write(b"stream me " * 10_000)
        return await call, texts, await answer

    result, texts, data = asyncio.run(run())
    assert result == {"length": 100_000}
    assert texts == ['{"type": "set_status", "status_code": 201}']
    assert data == b"STREAM ME " * 10_000
