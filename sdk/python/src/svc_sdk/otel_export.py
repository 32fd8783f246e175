"""This worker's own spans and Logger lines, exported with OpenTelemetry when the user turns it on.

With export on (`InitOptions.otel`, or OTEL_TRACES_EXPORTER=otlp): one SERVER span per handled
call, a child of the traceparent the engine sent, and one CLIENT span per outgoing call, whose id
is the traceparent sent to the engine (so the engine's span of that call is its child); Logger
lines as log records with the trace and span ids of the call they were written in.

The packages come with the `svc-sdk[otel]` extra and are imported here only when export is on: a
worker without it imports none of them, and its calls pay one `if tracer` branch each.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from .errors import SvcError

#: The distributions export needs; named in the error when one is missing.
OTEL_PACKAGES = ("opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http")

log = logging.getLogger("svc_sdk")

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
#: OpenTelemetry's SeverityNumber of each Logger level (DEBUG, INFO, WARN, ERROR).
_SEVERITY = {"debug": 5, "info": 9, "warn": 13, "error": 17}


def _listed(value: str | None, name: str) -> bool:
    return any(v.strip().lower() == name for v in (value or "").split(","))


def otel_enabled(option: bool | None, env: Mapping[str, str] = os.environ) -> bool:
    """The option when given, else an explicit OTEL_TRACES_EXPORTER=otlp, unless OTEL_SDK_DISABLED=true."""
    if option is not None:
        return option
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return _listed(env.get("OTEL_TRACES_EXPORTER"), "otlp")


class OpenSpan:
    """One span of this worker's, open until `end`. `traceparent` names it, for calls made under it."""

    __slots__ = ("_span", "traceparent")

    def __init__(self, span: Any) -> None:
        self._span = span
        sc = span.get_span_context()
        self.traceparent = f"00-{sc.trace_id:032x}-{sc.span_id:016x}-{int(sc.trace_flags):02x}"

    def end(self, error: Mapping[str, Any] | BaseException | None = None) -> None:
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            if isinstance(error, BaseException):
                code, message = getattr(error, "code", None), str(error) or type(error).__name__
            else:
                code, message = error.get("code"), str(error.get("message", ""))
            if isinstance(code, str):
                self._span.set_attribute("error.type", code)
            self._span.set_status(Status(StatusCode.ERROR, message))
        self._span.end()


class SpanTracer:
    """A tracer provider with a batching OTLP http/protobuf exporter, and a logger provider beside it.

    The exporters read their endpoint, headers and timeout from OTEL_EXPORTER_OTLP_[TRACES_|LOGS_]*,
    and the batch processors OTEL_BSP_* / OTEL_BLRP_*; service.name is OTEL_SERVICE_NAME, else the
    worker's name. OTEL_LOGS_EXPORTER=none leaves the log lines out.
    """

    def __init__(self, worker_name: str) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise SvcError(
                "otel_unavailable",
                "OpenTelemetry export is on (InitOptions.otel or OTEL_TRACES_EXPORTER=otlp) but its packages "
                f"could not be imported ({exc}); install svc-sdk[otel] ({', '.join(OTEL_PACKAGES)})",
            ) from None
        self._worker_name = worker_name
        resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or worker_name})
        self._provider = TracerProvider(resource=resource)
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        self._tracer = self._provider.get_tracer("svc-sdk")
        self._log_provider: LoggerProvider | None = None
        self._logger: Any = None
        if not _listed(os.environ.get("OTEL_LOGS_EXPORTER"), "none"):
            self._log_provider = LoggerProvider(resource=resource)
            self._log_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
            self._logger = self._log_provider.get_logger("svc-sdk")

    def _parent(self, traceparent: str | None) -> Any:
        from opentelemetry import trace
        from opentelemetry.context import Context

        m = _TRACEPARENT.match(traceparent) if traceparent else None
        if m is None:
            return Context()
        sc = trace.SpanContext(
            trace_id=int(m[1], 16), span_id=int(m[2], 16), is_remote=True, trace_flags=trace.TraceFlags(int(m[3], 16))
        )
        return trace.set_span_in_context(trace.NonRecordingSpan(sc), Context())

    def server(self, function_id: str, traceparent: str | None) -> OpenSpan:
        from opentelemetry.trace import SpanKind

        attributes = {"rpc.system": "svc", "rpc.method": function_id, "svc.function_id": function_id}
        attributes["svc.worker"] = self._worker_name
        return OpenSpan(
            self._tracer.start_span(function_id, self._parent(traceparent), SpanKind.SERVER, attributes=attributes)
        )

    def client(self, function_id: str, traceparent: str | None) -> OpenSpan:
        from opentelemetry.trace import SpanKind

        attributes = {"rpc.system": "svc", "rpc.method": function_id, "svc.function_id": function_id}
        return OpenSpan(
            self._tracer.start_span(function_id, self._parent(traceparent), SpanKind.CLIENT, attributes=attributes)
        )

    def log(self, level: str, message: str, data: Any, function_id: str | None, traceparent: str | None) -> None:
        """A Logger line; `traceparent`: the call it was written in (its SERVER span with export on)."""
        if self._logger is None:
            return
        from opentelemetry._logs import SeverityNumber

        attributes = {"svc.worker": self._worker_name}
        if function_id is not None:
            attributes["svc.function_id"] = function_id
        if data is not None:
            attributes["svc.data"] = json.dumps(data, ensure_ascii=False, default=str)
        self._logger.emit(
            context=self._parent(traceparent),
            severity_number=SeverityNumber(_SEVERITY.get(level, 9)),
            severity_text=level.upper(),
            body=message,
            attributes=attributes,
        )

    def shutdown(self) -> None:
        """Send what is buffered and stop (the worker's shutdown)."""
        self._provider.shutdown()
        if self._log_provider is not None:
            self._log_provider.shutdown()


def tracer_for(option: bool | None, worker_name: str) -> SpanTracer | None:
    """The worker's tracer when export is on; None when off, or (with a warning) when the packages are missing."""
    if not otel_enabled(option):
        return None
    try:
        return SpanTracer(worker_name)
    except SvcError as exc:
        log.warning("svc: [%s] %s", exc.code, exc.message)
        return None
