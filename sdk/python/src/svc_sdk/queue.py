"""Durable queues and topics from a worker (served by the built-in worker svc-queue, docs/queues.md).

`TriggerAction` builds a call's `action`, as iii-sdk's does; `publish` sends a message to a durable
topic:

    action = TriggerAction.Enqueue(queue="emails")
    receipt = worker.trigger({"function_id": "email::send", "payload": p, "action": action})
    publish(worker, "orders", {"id": 42})
"""

from __future__ import annotations

from typing import Any, TypedDict

from .worker import Worker


class EnqueueResult(TypedDict):
    """What an enqueue answers once the job is durable (iii-sdk's EnqueueResult)."""

    messageReceiptId: str


class PublishResult(TypedDict):
    """What `publish` answers once every copy is durable: one per live subscription of the topic."""

    topic: str
    message_id: str
    copies: int


class TriggerAction:
    """Factory of `action` values for `trigger()`."""

    @staticmethod
    def Enqueue(*, queue: str) -> dict[str, Any]:
        """Store the call as a job of `queue`: `trigger()` returns an EnqueueResult, the function runs later."""
        return {"type": "enqueue", "queue": queue}

    @staticmethod
    def Void() -> dict[str, Any]:
        """Fire-and-forget: `trigger()` returns None at once."""
        return {"type": "void"}


def publish(worker: Worker, topic: str, data: Any = None, timeout_ms: int | None = None) -> PublishResult:
    """Publish `data` to a durable topic: every function subscribed with a `durable:subscriber` trigger gets a copy.

    Without `data` (or with None) each subscriber's handler gets `{}`, as a call without payload does."""
    result: PublishResult = worker.trigger(_request(topic, data, timeout_ms))
    return result


async def publish_async(worker: Worker, topic: str, data: Any = None, timeout_ms: int | None = None) -> PublishResult:
    """`publish` for async code (inside `async def` handlers)."""
    result: PublishResult = await worker.trigger_async(_request(topic, data, timeout_ms))
    return result


def _request(topic: str, data: Any, timeout_ms: int | None) -> Any:
    request: dict[str, Any] = {"function_id": "queue::publish", "payload": {"topic": topic, "data": data}}
    if timeout_ms is not None:
        request["timeout_ms"] = timeout_ms
    return request
