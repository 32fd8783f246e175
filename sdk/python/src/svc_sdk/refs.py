"""Handles for what a worker registered: `unregister()` takes it back."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .worker import Worker


class FunctionRef:
    def __init__(self, function_id: str, worker: Worker) -> None:
        self.id = function_id
        self._worker = worker

    def unregister(self) -> None:
        self._worker.unregister_function(self.id)

    def __repr__(self) -> str:
        return f"FunctionRef({self.id!r})"


class TriggerTypeRef:
    def __init__(self, trigger_type_id: str, worker: Worker) -> None:
        self.id = trigger_type_id
        self._worker = worker

    def unregister(self) -> None:
        self._worker._on_loop(self._worker._drop_trigger_type, self.id)
