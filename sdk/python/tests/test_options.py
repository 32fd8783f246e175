"""Options: defaults, validation, and the reconnect backoff schedule."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

from svc_sdk import DEFAULT_MAX_FRAME_BYTES, InitOptions, ReconnectOptions, default_url
from svc_sdk.reconnect import backoff_delay
from svc_sdk.runtime import new_event_loop


def test_default_url_comes_from_svc_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVC_URL", raising=False)
    assert default_url() == "ws://localhost:49134"
    monkeypatch.setenv("SVC_URL", "ws://engine:1234")
    assert default_url() == "ws://engine:1234"


def test_defaults_match_the_engine() -> None:
    opts = InitOptions(worker_name="w")
    assert opts.max_frame_bytes == DEFAULT_MAX_FRAME_BYTES == 16 * 1024 * 1024
    assert 100 <= opts.reconnect.initial_delay_ms <= 1000
    assert opts.reconnect.max_delay_ms == 30_000
    assert opts.reconnect.factor == 2
    assert opts.reconnect.max_attempts is None  # reconnect forever


def test_worker_name_defaults_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_WORKER_NAME", "from-env")
    assert InitOptions().worker_name == "from-env"


def test_namespace_defaults_from_env_and_blank_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVC_NAMESPACE", raising=False)
    assert InitOptions().namespace is None
    monkeypatch.setenv("SVC_NAMESPACE", "shop")
    assert InitOptions().namespace == "shop"
    monkeypatch.setenv("SVC_NAMESPACE", " ")
    assert InitOptions().namespace is None


def _uvloop_marker() -> Marker:
    """Where pyproject.toml makes uvloop a dependency of svc-sdk (pip evaluates it with `packaging` too)."""
    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    [uvloop] = [r for r in map(Requirement, pyproject["project"]["dependencies"]) if r.name == "uvloop"]
    assert uvloop.marker is not None
    return uvloop.marker


@pytest.mark.parametrize(
    ("sys_platform", "machine", "implementation", "wanted"),
    [
        ("linux", "x86_64", "CPython", True),
        ("linux", "aarch64", "CPython", True),
        ("darwin", "arm64", "CPython", True),
        ("darwin", "x86_64", "CPython", True),
        # No uvloop wheel on PyPI: pip would build it from source, and without a C compiler (the
        # python:*-slim images) the install of svc-sdk fails instead of falling back to asyncio.
        ("linux", "armv7l", "CPython", False),
        ("linux", "ppc64le", "CPython", False),
        ("linux", "s390x", "CPython", False),
        ("freebsd14", "amd64", "CPython", False),
        ("win32", "AMD64", "CPython", False),
        ("linux", "x86_64", "PyPy", False),
    ],
)
def test_uvloop_is_a_dependency_only_where_pypi_has_wheels_of_it(
    sys_platform: str, machine: str, implementation: str, wanted: bool
) -> None:
    environment = {
        "sys_platform": sys_platform,
        "platform_machine": machine,
        "platform_python_implementation": implementation,
    }
    assert _uvloop_marker().evaluate(environment) is wanted


def test_event_loop_is_uvloop_unless_svc_event_loop_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVC_EVENT_LOOP", raising=False)
    if _uvloop_marker().evaluate():  # a dependency of svc-sdk here
        assert importlib.util.find_spec("uvloop") is not None
    assert InitOptions().event_loop == ("uvloop" if importlib.util.find_spec("uvloop") else "asyncio")
    monkeypatch.setenv("SVC_EVENT_LOOP", "asyncio")
    assert InitOptions().event_loop == "asyncio"
    monkeypatch.setenv("SVC_EVENT_LOOP", "uv")
    with pytest.raises(ValueError, match=r"got 'uv' \(the default comes from \$SVC_EVENT_LOOP\)"):
        InitOptions()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"worker_name": ""}, "worker_name"),
        ({"invocation_timeout_ms": 0}, "invocation_timeout_ms"),
        ({"max_frame_bytes": 10}, "max_frame_bytes"),
        ({"max_handler_threads": 0}, "max_handler_threads"),
        ({"namespace": "  "}, "namespace"),
        ({"event_loop": "trio"}, "event_loop must be 'uvloop' or 'asyncio', got 'trio'"),
    ],
)
def test_invalid_options_name_the_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        InitOptions(**kwargs)  # type: ignore[arg-type]


def test_bad_reconnect_options() -> None:
    with pytest.raises(ValueError, match="initial_delay_ms"):
        ReconnectOptions(initial_delay_ms=0)
    with pytest.raises(ValueError, match="jitter"):
        ReconnectOptions(jitter=1.5)


def test_backoff_grows_caps_and_jitters() -> None:
    opts = ReconnectOptions(initial_delay_ms=500, max_delay_ms=30_000, factor=2, jitter=0.3)
    for attempt, base in [(1, 0.5), (2, 1.0), (3, 2.0), (6, 16.0), (7, 30.0), (50, 30.0)]:
        delays = [backoff_delay(opts, attempt) for _ in range(200)]
        assert all(base * 0.7 <= d <= base for d in delays), (attempt, min(delays), max(delays))
        assert max(delays) - min(delays) > base * 0.1  # jitter spreads reconnecting workers apart


def test_a_uvloop_that_cannot_be_imported_names_the_way_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError, as a broken build does
    with pytest.raises(ImportError, match=r"cannot be imported .*\$SVC_EVENT_LOOP to 'asyncio'"):
        new_event_loop("uvloop")
    new_event_loop("asyncio").close()
