#!/usr/bin/env bash
# Lint, type-check and test the Python SDK the way a user installs it: a fresh venv with
# `pip install ./sdk/python[dev,otel]` (not editable; otel for tests/test_otel_export.py). The tests
# start a real engine, so the repo must be built (`npm run build`); this script builds it when
# dist/ is missing.
#   bash sdk/python/scripts/test.sh [pytest args...]
# Env: SVC_PY_VENV (default: <repo>/sdk/python/.venv-ci), PYTHON (default: python3).
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
