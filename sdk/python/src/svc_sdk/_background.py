"""Fire-and-forget tasks on the loop, kept referenced until done (asyncio holds only weak references)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_tasks: set[asyncio.Task[Any]] = set()


def spawn(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    task = asyncio.get_running_loop().create_task(coro)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task
