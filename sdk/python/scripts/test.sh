#!/usr/bin/env bash
# Lint, type-check and test the Python SDK the way a user installs it: a fresh venv with
# `pip install ./sdk/python[dev,otel]` (not editable; otel for tests/test_otel_export.py). The tests
# start a real engine, so the repo must be built (`npm run build`); this script builds it when
# dist/ is missing.
#   bash sdk/python/scripts/test.sh [pytest args...]
# Env: SVC_PY_VENV (default: <repo>/sdk/python/.venv-ci), PYTHON (default: python3).
# A full run (no pytest args) then runs the loop-bound tests again on asyncio's own loop (the rest
# run on uvloop, the default), and the tests of `async def` handlers again on the newest Python
# 3.12+ found (SVC_PY_NEWER, or pyenv's), where they start as eager tasks (handlers.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${SVC_PY_VENV:-$here/.venv-ci}"
python="${PYTHON:-python3}"

stage() { printf '\n== %s\n' "$1"; SECONDS=0; }
done_stage() { printf '== %s took %ss\n' "$1" "$SECONDS"; }

stage "python sdk: venv + pip install ./sdk/python[dev,otel]"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
(cd "$repo" && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "./sdk/python[dev,otel]")
rm -rf "$here/build"
done_stage "install"

if [ ! -d "$repo/dist/src/cli/commands" ] || [ ! -d "$repo/node_modules/svc-sdk/dist" ]; then
  stage "build the engine and the TypeScript SDK (npm run build)"
  (cd "$repo" && npm run build)
  done_stage "build"
fi

stage "python sdk: ruff + mypy --strict"
cd "$here"
"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .
"$venv/bin/mypy"
done_stage "lint"

stage "python sdk: pytest"
"$venv/bin/pytest" "$@"
done_stage "pytest"

# Workers run on uvloop by default (InitOptions.event_loop); the tests of the paths that touch the
# loop and its transport run again on asyncio's own loop, which $SVC_EVENT_LOOP=asyncio chooses.
if [ "$#" -eq 0 ]; then
  stage "python sdk: loop-bound tests on asyncio's own loop (SVC_EVENT_LOOP=asyncio)"
  SVC_EVENT_LOOP=asyncio "$venv/bin/pytest" tests/test_calls.py tests/test_handler_answers.py \
    tests/test_async_handlers.py tests/test_pool.py tests/test_reconnect.py tests/test_channels.py
  done_stage "pytest (asyncio loop)"
fi

# Python 3.12+ starts `async def` handlers' tasks eagerly (handlers.py, EAGER_TASKS): a path the
# default python3 (3.11 here) never takes, so its tests run again on a newer Python when one is here.
newer_python() {
  if [ -n "${SVC_PY_NEWER:-}" ]; then echo "$SVC_PY_NEWER"; return; fi
  local root candidates
  root="$(pyenv root 2>/dev/null || true)"
  # Newest first (a glob lists 3.13 before 3.14, and 3.12.10 before 3.12.3).
  while IFS= read -r candidates; do
    [ -x "$candidates" ] && { echo "$candidates"; return; }
  done < <(printf '%s\n' "$root"/versions/3.1[3-9]*/bin/python3 "$root"/versions/3.12.[3-9]*/bin/python3 \
    "$root"/versions/3.12.1[0-9]*/bin/python3 | sort -rV)
  for candidates in python3.14 python3.13 python3.12; do
    command -v "$candidates" >/dev/null 2>&1 && "$candidates" -c 'import sys; sys.exit(sys.version_info < (3, 12, 3))' \
      >/dev/null 2>&1 && { command -v "$candidates"; return; }
  done
  return 0
}
if [ "$#" -eq 0 ]; then
  newer="$(newer_python)"
  if [ -z "$newer" ]; then
    printf '\n== python sdk: no Python 3.12.3+ here; eager handler tasks untested (set SVC_PY_NEWER to one)\n'
  else
    stage "python sdk: async handler tests on $("$newer" -c 'import sys; print("Python", sys.version.split()[0])') (eager tasks)"
    newer_venv="${venv}-newer"
    [ -x "$newer_venv/bin/python" ] || "$newer" -m venv "$newer_venv"
    (cd "$repo" && "$newer_venv/bin/python" -m pip install --quiet --disable-pip-version-check "./sdk/python" "pytest>=8" "pytest-timeout>=2.3")
    rm -rf "$here/build"
    "$newer_venv/bin/python" -m pytest tests/test_async_handlers.py tests/test_calls.py tests/test_handler_answers.py tests/test_channels.py \
      tests/test_trace_context.py tests/test_triggers.py tests/test_logger.py tests/test_pool.py tests/test_reconnect.py \
      tests/test_process.py
    done_stage "pytest (newer Python)"
  fi
fi
