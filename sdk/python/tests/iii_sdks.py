"""The published iii-sdk releases (PyPI) the compatibility tests run against, pinned.

Each version goes into a venv of its own (~/.cache/svc/iii-venv/python3.X/<version>, or under
$SVC_III_VENV_CACHE or $XDG_CACHE_HOME/svc; kept between runs and clones, so it is installed once per
machine, as scripts/build-otelcol.sh caches the collector) and never shares site-packages with
svc_sdk. A test that needs one is skipped, with the reason printed, only when PyPI is unreachable
and the venv is not there yet.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

#: Every iii-sdk release the matrix covers (docs/iii-compatibility.md names the same).
III_SDK_VERSIONS = ("0.22.1", "0.24.6", "0.25.0")
#: The newest, used by the single-version tests.
III_SDK_LATEST = III_SDK_VERSIONS[-1]
#: Outside the checkout: in it (sdk/python/.iii-venv), every fresh clone installed the three again.
_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "svc" / "iii-venv"
VENVS = Path(os.environ.get("SVC_III_VENV_CACHE") or _CACHE) / "python{}.{}".format(*sys.version_info[:2])
NETWORK_ERRORS = (
    "Could not fetch URL",
    "NewConnectionError",
    "Max retries exceeded",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "ConnectTimeoutError",
    "ProxyError",
)


def iii_python(version: str = III_SDK_LATEST) -> Path:
    """The interpreter of a venv holding iii-sdk==version, installed on first use."""
    venv_dir = VENVS / version
    python = venv_dir / "bin" / "python"
    marker = venv_dir / ".installed"
    if marker.exists():
        return python
    venv_dir.parent.mkdir(parents=True, exist_ok=True)
    # Runs from other checkouts share the cache: one installs, the others wait for it.
    with open(venv_dir.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return python
        _install(venv_dir, python, version)
        marker.write_text(version)
    return python


def _install(venv_dir: Path, python: Path, version: str) -> None:
    if not python.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"iii-sdk=={version}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        output = proc.stdout + proc.stderr
        if any(marker_text in output for marker_text in NETWORK_ERRORS):
            pytest.skip(f"PyPI cannot be reached, so iii-sdk=={version} cannot be installed: {output[-300:]}")
        pytest.fail(f"pip install iii-sdk=={version} failed:\n{output}")
