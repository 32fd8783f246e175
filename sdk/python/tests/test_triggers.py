"""Trigger bindings and trigger-type providers, between two Python workers through the engine."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from svc_sdk import InvocationError, TriggerInstance, TriggerRegistrationError, Worker

from .conftest import WorkerFactory, wait_for


class TickProvider:
    """Provides trigger type `test::tick`; refuses bindings whose config says so."""

    def __init__(self) -> None:
        self.active: dict[str, TriggerInstance] = {}
        self.removed: list[str] = []
        self.changed = threading.Event()

    def register_trigger(self, trigger: TriggerInstance) -> None:
        if trigger["config"].get("refuse"):
            raise ValueError("refusing this binding")
        self.active[trigger["id"]] = trigger
        self.changed.set()

    async def unregister_trigger(self, trigger: TriggerInstance) -> None:
        self.active.pop(trigger["id"], None)
        self.removed.append(trigger["id"])


def provide(worker: Worker, trigger_type: str | dict[str, Any], provider: Any) -> None:
    """Register a trigger type and wait until the engine lists it.

    Another worker's binding sent before the engine has the type is parked, not active: the two
    workers' connections are not ordered with each other (a CI run caught `parked` once).
    """
    worker.register_trigger_type(trigger_type, provider)  # type: ignore[arg-type]
    type_id = trigger_type if isinstance(trigger_type, str) else trigger_type["id"]

    def listed() -> bool:
        types = worker.trigger({"function_id": "engine::triggers::list", "payload": {}})["trigger_types"]
        return any(t["id"] == type_id for t in types)

    wait_for(listed, what=f"the engine to list trigger type {type_id}")


def test_provider_receives_bindings_and_fires_them(make_worker: WorkerFactory) -> None:
    provider_worker = make_worker("tick-provider")
    provider = TickProvider()
    provide(provider_worker, {"id": "test::tick", "description": "ticks on demand"}, provider)

    user = make_worker("tick-user")
    seen: list[Any] = []

    def on_tick(data: Any) -> str:
        seen.append(data)
        return "ok"

    user.register_function("py::on_tick", on_tick)
    binding = user.register_trigger({"type": "test::tick", "function_id": "py::on_tick", "config": {"every": 1}})
    assert binding.wait(5) == "active"
    wait_for(lambda: binding.id in provider.active, what="the provider to get the binding")
    instance = provider.active[binding.id]
    assert instance["function_id"] == "py::on_tick"
    assert instance["config"] == {"every": 1}

    # firing is the provider's job: it calls the bound function
    result = provider_worker.trigger({"function_id": instance["function_id"], "payload": {"tick": 1}})
    assert result == "ok"
    assert seen == [{"tick": 1}]

    binding.unregister()
    wait_for(lambda: provider.removed == [binding.id], what="the provider to hear of the removal")
    assert binding.status == "unregistered"


def test_provider_fires_for_its_binding_with_binding_id(make_worker: WorkerFactory) -> None:
    """`binding_id` marks a call made for a binding: accepted from its provider, refused from others."""
    provider_worker = make_worker("bound-provider")
    provider = TickProvider()
    provide(provider_worker, {"id": "test::bound", "binding_requires_call": ["engine::health::check"]}, provider)
    user = make_worker("bound-user")
    user.register_function("py::on_bound", lambda data: data["n"] + 1)
    binding = user.register_trigger({"type": "test::bound", "function_id": "py::on_bound", "config": {}})
    assert binding.wait(5) == "active"
    wait_for(lambda: binding.id in provider.active, what="the provider to get the binding")
    request = {"function_id": "py::on_bound", "payload": {"n": 1}, "binding_id": binding.id}
    assert provider_worker.trigger(request) == 2  # type: ignore[arg-type]
    with pytest.raises(InvocationError) as not_provider:
        user.trigger(request)  # type: ignore[arg-type]
    assert not_provider.value.code == "forbidden"
    with pytest.raises(InvocationError) as gone:
        provider_worker.trigger({"function_id": "py::on_bound", "payload": {"n": 1}, "binding_id": "no-such-binding"})
    assert gone.value.code == "binding_not_found"
    listing = user.trigger({"function_id": "engine::triggers::list", "payload": {}})
    bound = next(t for t in listing["trigger_types"] if t["id"] == "test::bound")
    assert bound["binding_requires_call"] == ["engine::health::check"]


def test_refused_binding_raises_with_code(make_worker: WorkerFactory) -> None:
    provider_worker = make_worker("strict-provider")
    provide(provider_worker, "test::strict", TickProvider())
    user = make_worker("strict-user")
    user.register_function("py::noop", lambda data: None)
    binding = user.register_trigger({"type": "test::strict", "function_id": "py::noop", "config": {"refuse": True}})
    with pytest.raises(TriggerRegistrationError) as info:
        binding.wait(5)
    assert info.value.code == "invocation_failed"
    assert "refusing this binding" in info.value.message
    assert binding.status == "error"


def test_binding_without_provider_is_parked(make_worker: WorkerFactory) -> None:
    user = make_worker("early-user")
    user.register_function("py::noop", lambda data: None)
    binding = user.register_trigger({"type": "test::later", "function_id": "py::noop", "config": {}})
    assert binding.wait(5) == "parked"
    provider = TickProvider()
    make_worker("late-provider").register_trigger_type("test::later", provider)
    wait_for(lambda: binding.id in provider.active, what="the parked binding to reach the new provider")


def test_binding_mode_all_hands_every_binding_to_every_provider(make_worker: WorkerFactory) -> None:
    first, second = TickProvider(), TickProvider()
    make_worker("fan-provider-1").register_trigger_type({"id": "test::fan", "binding_mode": "all"}, first)
    make_worker("fan-provider-2").register_trigger_type({"id": "test::fan", "binding_mode": "all"}, second)
    user = make_worker("fan-user")
    user.register_function("py::fan", lambda data: None)

    def fan_type() -> dict[str, Any]:
        types = user.trigger({"function_id": "engine::triggers::list"})["trigger_types"]
        return next((t for t in types if t["id"] == "test::fan"), {})

    wait_for(lambda: fan_type().get("binding_mode") == "all", what="test::fan to be provided")
    binding = user.register_trigger({"type": "test::fan", "function_id": "py::fan", "config": {}})
    assert binding.wait(5) == "active"
    wait_for(
        lambda: binding.id in first.active and binding.id in second.active,
        what="both providers to get the binding",
    )
    assert fan_type()["standby_providers"] == []


def test_binding_taken_away_while_its_registration_runs_is_undone(make_worker: WorkerFactory) -> None:
    """An unregister that arrives while the provider's register_trigger still runs undoes it when it ends."""
    active: set[str] = set()
    removed: list[str] = []

    class SlowProvider:
        async def register_trigger(self, trigger: TriggerInstance) -> None:
            await asyncio.sleep(0.3)
            active.add(trigger["id"])

        def unregister_trigger(self, trigger: TriggerInstance) -> None:
            active.discard(trigger["id"])
            removed.append(trigger["id"])

    provide(make_worker("slow-provider"), {"id": "test::slow"}, SlowProvider())
    user = make_worker("slow-user")
    user.register_function("py::slow", lambda data: None)
    binding = user.register_trigger({"type": "test::slow", "function_id": "py::slow", "config": {}})
    time.sleep(0.1)  # the provider's register_trigger is running now
    binding.unregister()
    wait_for(lambda: removed == [binding.id], what="the late registration to be undone")
    assert active == set()


def test_register_trigger_rejects_bad_input(make_worker: WorkerFactory) -> None:
    w = make_worker("careless")
    with pytest.raises(ValueError, match="function_id"):
        w.register_trigger({"type": "http", "function_id": ""})
    with pytest.raises(ValueError, match="type"):
        w.register_trigger({"type": "", "function_id": "x"})
