#!/usr/bin/env bash
# The whole test suite: what the README's test command and .ci/run run. Installs what the tests
# need, builds, then runs every suite; fails when any test fails. Prints each stage's duration.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STAGES=()
stage() {
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $name"
  "$@"
  local dt=$((SECONDS - t0))
  STAGES+=("$(printf '%-28s %4ss' "$name" "$dt")")
  echo "=== $name: ${dt}s"
}

node_tests() {
  # One process per test file (node's default); files run one at a time so timing-sensitive
  # integration tests do not compete for the two cores.
  node --test --test-concurrency=1 "$@"
}

python_venv() {
  local venv="$ROOT/.venv-test"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip >/dev/null
  "$venv/bin/pip" install -q "$ROOT/sdk/python[dev]"
}

python_tests() {
  local venv="$ROOT/.venv-test"
  (cd sdk/python && "$venv/bin/ruff" check . && "$venv/bin/mypy" --strict src/svc_sdk && "$venv/bin/pytest" -q tests)
}

stage "system packages" bash scripts/install-system-deps.sh
stage "npm ci" npm ci --no-audit --no-fund
stage "build" npm run build
stage "engine, sdk, supervisor tests" node_tests dist/test/engine dist/test/sdk dist/test/supervisor/supervisor.test.js
if [ -d dist/test/workers ]; then stage "built-in worker tests" node_tests dist/test/workers; fi
if [ -d dist/test/compat ]; then stage "iii compatibility tests" node_tests dist/test/compat; fi
if [ -d dist/e2e ]; then stage "e2e tests" node_tests dist/e2e; fi
if [ -f sdk/python/pyproject.toml ]; then
  stage "python venv" python_venv
  stage "python sdk tests" python_tests
fi

echo
echo "stage durations:"
printf '  %s\n' "${STAGES[@]}"
echo "total: ${SECONDS}s"
