"""running_invocation(): the running call's context, typed without None, or NoInvocationError outside a handler."""

from __future__ import annotations

import asyncio
import contextvars
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from svc_sdk import InvocationError, NoInvocationError, SvcError, current_invocation, running_invocation

from .conftest import WorkerFactory, wait_for


def test_outside_a_handler_it_raises_no_invocation() -> None:
    assert current_invocation() is None
    with pytest.raises(NoInvocationError) as raised:
        running_invocation()
    assert raised.value.code == "no_invocation"
    assert isinstance(raised.value, SvcError)
    assert isinstance(raised.value, RuntimeError)
    assert "running_invocation() was called outside a handler" in raised.value.message
    assert "current_invocation()" in raised.value.message


def test_inside_handlers_it_is_the_running_call(make_worker: WorkerFactory) -> None:
    w = make_worker("running-invocation")

    def plain(data: Any) -> Any:
        ctx = running_invocation()
        return {"fid": ctx.function_id, "same": ctx is current_invocation(), "meta": ctx.metadata}

    async def in_a_task(data: Any) -> Any:
        # A task the handler creates copies its context: the same invocation.
        async def child() -> str:
            await asyncio.sleep(0)
            return running_invocation().function_id

        def in_thread() -> str:
            return running_invocation().function_id

        # asyncio.to_thread runs it in a copy of the context (loop.run_in_executor would not).
        return {
            "fid": running_invocation().function_id,
            "child": await asyncio.create_task(child()),
            "thread": await asyncio.to_thread(in_thread),
        }

    def in_threads(data: Any) -> Any:
        # A plain thread starts with an empty context; copy_context().run carries the invocation.
        seen: dict[str, Any] = {}

        def probe(key: str) -> None:
            try:
                seen[key] = running_invocation().function_id
            except NoInvocationError as exc:
                seen[key] = exc.code

        plain_thread = threading.Thread(target=probe, args=("plain",))
        ctx = contextvars.copy_context()
        copied_thread = threading.Thread(target=ctx.run, args=(probe, "copied"))
        for t in (plain_thread, copied_thread):
            t.start()
            t.join()
        return seen

    w.register_function("py::plain", plain)
    w.register_function("py::in_a_task", in_a_task)
    w.register_function("py::in_threads", in_threads)
    wait_for(lambda: _registered(w, "py::plain", "py::in_a_task", "py::in_threads"), what="the functions")

    got = w.trigger({"function_id": "py::plain", "payload": {}, "metadata": {"k": 1}})
    assert got == {"fid": "py::plain", "same": True, "meta": {"k": 1}}
    got = w.trigger({"function_id": "py::in_a_task", "payload": {}})
    assert got == {"fid": "py::in_a_task", "child": "py::in_a_task", "thread": "py::in_a_task"}
    got = w.trigger({"function_id": "py::in_threads", "payload": {}})
    assert got == {"plain": "no_invocation", "copied": "py::in_threads"}


def test_a_type_checker_needs_no_none_check_with_running_invocation(tmp_path: Path) -> None:
    """What the function is for: mypy --strict accepts `running_invocation().metadata` as it is,
    where `current_invocation().metadata` needs a None check."""
    api = pytest.importorskip("mypy.api")
    handler = tmp_path / "handler.py"

    def check(expr: str) -> tuple[str, int]:
        handler.write_text(
            textwrap.dedent(f"""
                from typing import Any
                from svc_sdk import current_invocation, running_invocation

                def handler(data: Any) -> Any:
                    return {expr}.metadata
                """)
        )
        out, _err, status = api.run(["--strict", "--no-incremental", "--follow-imports=silent", str(handler)])
        return out, status

    out, status = check("running_invocation()")
    assert status == 0, out
    out, status = check("current_invocation()")
    assert status == 1
    assert 'Item "None" of "InvocationContext | None" has no attribute "metadata"' in out


def _registered(worker: Any, *function_ids: str) -> bool:
    for function_id in function_ids:
        try:
            worker.trigger({"function_id": function_id, "payload": {}, "timeout_ms": 2000})
        except InvocationError as exc:
            if exc.code == "function_not_found":
                return False
            raise
    return True
