#!/usr/bin/env bash
# Installs the Debian packages the tests use, only where missing (a developer machine may have them).
# Needs root (CI and these machines run as root); prints what it does.
set -euo pipefail
want=()
command -v redis-server >/dev/null 2>&1 || want+=(redis-server)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || want+=(python3-venv)
# console tests (e2e/console): headless Chromium driven by playwright-core
command -v chromium >/dev/null 2>&1 || want+=(chromium)
if [ "${#want[@]}" -gt 0 ]; then
  echo "installing: ${want[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
else
  echo "system packages present"
fi
