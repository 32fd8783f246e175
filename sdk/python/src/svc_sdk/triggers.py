"""Triggers: bindings this worker registers, and trigger types this worker provides.

A binding (`register_trigger`) is answered by the engine with `triggerregistrationresult`: with the
svc `ack` feature always (`status` active or parked, or `error`), with a plain iii engine only on
error. A provider (`register_trigger_type`) receives `registertrigger` / `unregistertrigger` for
every binding of its type and answers each registration.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

from .connection import Session
from .errors import ErrorCode, TriggerRegistrationError
from .handlers import error_body
from .protocol import Frame, TriggerStatus

log = logging.getLogger("svc_sdk")


class TriggerInstance(TypedDict):
    """One binding of a provided trigger type, as handed to its provider."""

    id: str
    trigger_type: str
    function_id: str
    config: Any
    metadata: Any


class TriggerTypeHandler(Protocol):
    """A trigger type's provider. Methods may be plain or `async def`; raising refuses the binding."""

    def register_trigger(self, trigger: TriggerInstance) -> Any: ...
    def unregister_trigger(self, trigger: TriggerInstance) -> Any: ...


class Trigger:
    """A binding registered with `register_trigger()`; kept and replayed across reconnects."""

    def __init__(
        self,
        trigger_id: str,
        trigger_type: str,
        function_id: str,
        config: Any,
        metadata: Any,
        on_unregister: Callable[[Trigger], None],
    ) -> None:
        self.id = trigger_id
        self.trigger_type = trigger_type
        self.function_id = function_id
        self.config = config
        self.metadata = metadata
        #: pending until the engine answers; active, parked (no provider yet), error or unregistered.
        self.status: TriggerStatus = "pending"
        self.error: TriggerRegistrationError | None = None
        self._settled = threading.Event()
        self._on_unregister = on_unregister

    def frame(self) -> Frame:
        frame: Frame = {
            "type": "registertrigger",
            "id": self.id,
            "trigger_type": self.trigger_type,
            "function_id": self.function_id,
            "config": self.config,
        }
        if self.metadata is not None:
            frame["metadata"] = self.metadata
        return frame

    def unregister(self) -> None:
        self._on_unregister(self)

    def wait(self, timeout: float | None = 10.0) -> TriggerStatus:
        """Block until the engine answered; return the status, or raise TriggerRegistrationError."""
        if not self._settled.wait(timeout):
            raise TimeoutError(f"Trigger {self.id} ({self.trigger_type} -> {self.function_id}) was not acknowledged")
        if self.error is not None:
            raise self.error
        return self.status

    def settle(self, status: TriggerStatus, error: TriggerRegistrationError | None = None) -> None:
        self.status = status
        self.error = error
        self._settled.set()

    def reset(self) -> None:
        self.status = "pending"
        self.error = None
        self._settled.clear()

    def __repr__(self) -> str:
        return (
            f"Trigger(id={self.id!r}, type={self.trigger_type!r}, "
            f"function_id={self.function_id!r}, status={self.status!r})"
        )


@dataclass
class ProvidedType:
    frame: Frame  # registertriggertype, replayed on reconnect
    handler: TriggerTypeHandler


class TriggerRegistry:
    def __init__(self, run: Callable[[Callable[[Any], Any], Any], Any]) -> None:
        #: coroutine function running a plain or async callable with one argument (from Invoker)
        self._run = run
        self.triggers: dict[str, Trigger] = {}
        self.types: dict[str, ProvidedType] = {}
        self._provided: dict[str, TriggerInstance] = {}
        #: bindings whose register_trigger is still running; True once the engine took them away meanwhile
        self._registering: dict[str, bool] = {}

    def sent(self, trigger: Trigger, session: Session) -> None:
        """A registertrigger went out. Without `ack` only errors come back: assume it is active."""
        if "ack" not in session.features:
            trigger.settle("active")

    def on_result(self, frame: Frame) -> None:
        trigger = self.triggers.get(frame.get("id"))  # type: ignore[arg-type]
        if trigger is None:
            return
        error = frame.get("error")
        if isinstance(error, dict):
            exc = TriggerRegistrationError(
                str(error.get("code") or ErrorCode.TRIGGER_REGISTRATION_FAILED),
                str(error.get("message") or ""),
                trigger.id,
                trigger.trigger_type,
            )
            log.error(
                "svc: trigger %s (%s -> %s) was refused: [%s] %s",
                trigger.id,
                trigger.trigger_type,
                trigger.function_id,
                exc.code,
                exc.message,
            )
            trigger.settle("error", exc)
        else:
            status = frame.get("status")
            trigger.settle("parked" if status == "parked" else "active")

    async def provide(self, session: Session, frame: Frame) -> None:
        """The engine hands us a binding of a type we provide; answer triggerregistrationresult."""
        trigger_type = str(frame.get("trigger_type"))
        instance: TriggerInstance = {
            "id": str(frame.get("id")),
            "trigger_type": trigger_type,
            "function_id": str(frame.get("function_id")),
            "config": frame.get("config"),
            "metadata": frame.get("metadata"),
        }
        answer: Frame = {
            "type": "triggerregistrationresult",
            "id": instance["id"],
            "trigger_type": trigger_type,
            "function_id": instance["function_id"],
        }
        provided = self.types.get(trigger_type)
        if provided is None:
            answer["error"] = {
                "code": ErrorCode.TRIGGER_TYPE_NOT_FOUND,
                "message": f"Trigger type {trigger_type} is not provided by this worker",
            }
        else:
            self._registering[instance["id"]] = False
            try:
                await self._run(provided.handler.register_trigger, instance)
                if self._registering.get(instance["id"]):
                    # Taken away while the handler ran: undo it now, as a later unregister would.
                    await self._undo(provided, instance)
                else:
                    self._provided[instance["id"]] = instance
            except Exception as exc:
                answer["error"] = error_body(exc, with_stack=False)
            finally:
                self._registering.pop(instance["id"], None)
        try:
            await session.send(answer)
        except Exception as exc:
            log.warning("svc: could not answer the registration of trigger %s: %s", instance["id"], exc)

    async def withdraw(self, frame: Frame) -> None:
        """The engine removes a binding of a type we provide (its owner left or unregistered it)."""
        trigger_id = str(frame.get("id"))
        if trigger_id in self._registering:
            self._registering[trigger_id] = True
        instance = self._provided.pop(trigger_id, None)
        if instance is None:
            return
        provided = self.types.get(instance["trigger_type"])
        if provided is None:
            return
        await self._undo(provided, instance)

    async def _undo(self, provided: ProvidedType, instance: TriggerInstance) -> None:
        try:
            await self._run(provided.handler.unregister_trigger, instance)
        except Exception:
            log.exception("svc: unregister_trigger of %s failed", instance["id"])

    async def withdraw_all(self) -> None:
        """The socket closed: the engine parks our bindings and hands them over again on reconnect."""
        for trigger_id in self._registering:
            self._registering[trigger_id] = True
        for trigger_id in list(self._provided):
            await self.withdraw({"id": trigger_id})
