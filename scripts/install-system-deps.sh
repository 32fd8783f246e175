#!/usr/bin/env bash
# Installs the Debian packages the tests use, only where missing (a developer machine may have them).
# Runs apt-get as root, or through sudo for other users; prints what it does.
set -euo pipefail
want=()
command -v redis-server >/dev/null 2>&1 || want+=(redis-server)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || want+=(python3-venv)
# console tests (e2e/console): headless Chromium driven by playwright-core
command -v chromium >/dev/null 2>&1 || want+=(chromium)
# docker tests (test/supervisor/docker-runtime, e2e/docker): Debian's Docker engine and compose v1,
# and mmdebstrap for the offline base images (scripts/build-base-images.sh)
command -v dockerd >/dev/null 2>&1 || want+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 || want+=(docker-compose)
command -v mmdebstrap >/dev/null 2>&1 || want+=(mmdebstrap)
# metrics tests (test/engine/metrics-prometheus): a real Prometheus scrapes the engine's /metrics
command -v prometheus >/dev/null 2>&1 || want+=(prometheus)
if [ "${#want[@]}" -gt 0 ]; then
  echo "installing: ${want[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo -E)
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
else
  echo "system packages present"
fi
