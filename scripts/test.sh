#!/usr/bin/env bash
# The whole test suite: what the README's test command and .ci/run run. Installs what the tests
# need, builds, then runs every suite; fails when any test fails. Prints each stage's duration.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STAGES=()
FAILED=()
# setup stages abort the run; test stages record a failure and let the others run, so one CI run
# reports every failing suite. The script fails at the end if any did.
stage() {
  local name=$1; shift
  local t0=$SECONDS rc=0
  echo "=== $name"
  "$@" || rc=$?
  local dt=$((SECONDS - t0))
  STAGES+=("$(printf '%-32s %5ss  %s' "$name" "$dt" "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")")")
  echo "=== $name: ${dt}s$([ $rc = 0 ] || echo ", FAILED with exit code $rc")"
  if [ $rc != 0 ]; then
    FAILED+=("$name")
    [ "${SETUP:-0}" = 1 ] && summary && exit $rc
  fi
  return 0
}
summary() {
  echo
  echo "stage durations:"
  printf '  %s\n' "${STAGES[@]}"
  echo "total: ${SECONDS}s"
}

node_tests() {
  # One process per test file (node's default); files run one at a time so timing-sensitive
  # integration tests do not compete for the two cores.
  node --test --test-concurrency=1 "$@"
}

SETUP=1 stage "system packages" bash scripts/install-system-deps.sh
SETUP=1 stage "npm ci" npm ci --no-audit --no-fund
SETUP=1 stage "build" npm run build
# The console (React + Vite) is served from console/dist; e2e/console drives it in Chromium.
SETUP=1 stage "build console" npm run build:console
stage "engine, sdk, supervisor tests" node_tests dist/test/engine dist/test/sdk dist/test/supervisor/supervisor.test.js
stage "built-in worker tests" node_tests dist/test/workers
stage "iii compatibility tests" node_tests dist/test/compat
stage "scaffold tests" node_tests dist/test/cli
stage "e2e tests" node_tests dist/e2e
stage "python sdk (ruff, mypy, pytest)" bash sdk/python/scripts/test.sh
summary
if [ "${#FAILED[@]}" -gt 0 ]; then
  echo "FAILED stages: ${FAILED[*]}"
  exit 1
fi
echo "all stages passed"
