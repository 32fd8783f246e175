"""{{worker_name}}: one function, {{worker_name}}::hello {name?} -> {message}.

Started by the engine after `svc worker add <this directory>`; `svc dev` restarts it when this file
changes. The engine address comes from SVC_URL.
"""

from __future__ import annotations

import os
from typing import Any

from svc_sdk import InitOptions, Logger, SvcError, register_worker

worker = register_worker(os.environ.get("SVC_URL") or "ws://localhost:49134", InitOptions(worker_name="{{worker_name}}"))
logger = Logger()


def hello(data: Any) -> dict[str, Any]:
    payload = {} if data is None else data
    if not isinstance(payload, dict):
        raise SvcError("invalid_payload", f"{{worker_name}}::hello takes an object {{name?}}, got {data!r}")
    name = payload.get("name", "world")
    if not isinstance(name, str):
        raise SvcError("invalid_payload", f"{{worker_name}}::hello: name must be a string, got {name!r}")
    logger.info(f"greeting {name}")
    return {"message": f"hello, {name}"}


worker.register_function("{{worker_name}}::hello", hello, description="Greets name (default world): {message}.")
# register_worker keeps the process running (and reconnecting) until Ctrl-C or SIGTERM.
