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

stage "system packages" bash scripts/install-system-deps.sh
stage "npm ci" npm ci --no-audit --no-fund
stage "build" npm run build
# The console (React + Vite) is served from console/dist; e2e/console drives it in Chromium.
stage "build console" npm run build:console
stage "engine, sdk, supervisor tests" node_tests dist/test/engine dist/test/sdk dist/test/supervisor/supervisor.test.js
stage "built-in worker tests" node_tests dist/test/workers
stage "iii compatibility tests" node_tests dist/test/compat
stage "scaffold tests" node_tests dist/test/cli
stage "e2e tests" node_tests dist/e2e
stage "python sdk (ruff, mypy, pytest)" bash sdk/python/scripts/test.sh
echo
echo "stage durations:"
printf '  %s\n' "${STAGES[@]}"
echo "total: ${SECONDS}s"
