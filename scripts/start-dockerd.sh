#!/usr/bin/env bash
# Starts a Docker engine in the background when none answers; idempotent (an engine that already
# answers is left alone). Used by scripts/test.sh and by developers.
#
# These machines (and CI's) run without iptables or a bridge device, so dockerd runs with
# --iptables=false --bridge=none and every container uses host networking (docs/docker.md).
# Exit status: 0 when an engine answers at the end, 1 otherwise (with the reason printed).
set -euo pipefail
SOCK=${DOCKER_SOCK:-/var/run/docker.sock}
LOG=${DOCKERD_LOG:-/var/log/svc-dockerd.log}

answers() { docker -H "unix://$SOCK" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if answers; then
  echo "dockerd answers at $SOCK ($(docker -H "unix://$SOCK" version --format '{{.Server.Version}}'))"
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "dockerd is not installed (Debian: apt-get install docker.io)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "dockerd is not running at $SOCK and starting it needs root" >&2
  exit 1
fi
echo "starting dockerd (log: $LOG)"
# setsid: the daemon outlives this script and the test run that started it.
setsid dockerd --iptables=false --ip6tables=false --bridge=none --host "unix://$SOCK" >>"$LOG" 2>&1 </dev/null &
for _ in $(seq 1 120); do
  if answers; then
    echo "dockerd answers at $SOCK ($(docker -H "unix://$SOCK" version --format '{{.Server.Version}}'))"
    exit 0
  fi
  sleep 0.5
done
echo "dockerd did not answer within 60 s; last lines of $LOG:" >&2
tail -n 20 "$LOG" >&2 || true
exit 1
