"""svc-sdk: connect Python workers to an svc engine.

from svc_sdk import register_worker, InitOptions, Logger

worker = register_worker("ws://localhost:49134", InitOptions(worker_name="math-worker"))
worker.register_function("math::add", lambda data: {"c": data["a"] + data["b"]})
"""

from ._version import __version__
from .channels import ChannelReader, ChannelWriter, channel_url, is_channel_ref
from .context import InvocationContext, NoInvocationError, current_invocation, running_invocation
from .errors import (
    ErrorCode,
    InvalidArgumentError,
    InvalidFunctionIdError,
    InvocationError,
    SvcError,
    TriggerRegistrationError,
)
from .logger import Logger
from .options import InitOptions, ReconnectOptions, default_url
from .protocol import DEFAULT_ENGINE_URL, DEFAULT_MAX_FRAME_BYTES, TriggerConfig, TriggerRequest, TriggerTypeInfo
from .queue import EnqueueResult, PublishResult, TriggerAction, publish, publish_async
from .redact import redact_address
from .refs import FunctionRef, TriggerTypeRef
from .triggers import Trigger, TriggerInstance, TriggerTypeHandler
from .worker import Worker, register_worker

__all__ = [
    "DEFAULT_ENGINE_URL",
    "DEFAULT_MAX_FRAME_BYTES",
    "ChannelReader",
    "ChannelWriter",
    "EnqueueResult",
    "ErrorCode",
    "FunctionRef",
    "InitOptions",
    "InvalidArgumentError",
    "InvalidFunctionIdError",
    "InvocationContext",
    "InvocationError",
    "Logger",
    "NoInvocationError",
    "PublishResult",
    "ReconnectOptions",
    "SvcError",
    "Trigger",
    "TriggerAction",
    "TriggerConfig",
    "TriggerInstance",
    "TriggerRegistrationError",
    "TriggerRequest",
    "TriggerTypeHandler",
    "TriggerTypeInfo",
    "TriggerTypeRef",
    "Worker",
    "__version__",
    "channel_url",
    "current_invocation",
    "default_url",
    "is_channel_ref",
    "publish",
    "publish_async",
    "redact_address",
    "register_worker",
    "running_invocation",
]
