#!/usr/bin/env bash
# Builds the images of compose/observability.yml without a container registry:
#   svc-otelcol:local     the collector scripts/build-otelcol.sh builds from the Go module proxy
#   svc-prometheus:local  Debian's prometheus package
# both on svc-base-debian:local (scripts/build-base-images.sh; DEBIAN_BASE names another base).
# Needs a running Docker engine and, the first time, Go. Prints each duration.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${DEBIAN_BASE:-svc-base-debian:local}
export DOCKER_BUILDKIT=0
work=$(mktemp -d /tmp/svc-observability-images.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The legacy builder (no buildx on Debian's docker.io) prints a deprecation notice on every build.
quiet_build() {
  local out
  if ! out=$(docker build -q --force-rm --network host --build-arg "DEBIAN_BASE=$BASE" "$@" 2>&1); then echo "$out" >&2; return 1; fi
}
docker image inspect "$BASE" >/dev/null 2>&1 || { echo "build-observability-images: no image $BASE: run scripts/build-base-images.sh first (or set DEBIAN_BASE)" >&2; exit 1; }

t0=$SECONDS
bin=$(bash scripts/build-otelcol.sh | tail -1)
mkdir -p "$work/otelcol" "$work/prometheus"
cp "$bin" "$work/otelcol/svc-otelcol"
cp images/observability/otelcol.Dockerfile "$work/otelcol/Dockerfile"
quiet_build -t svc-otelcol:local "$work/otelcol"
echo "  svc-otelcol:local: $((SECONDS - t0))s"

t0=$SECONDS
cp images/observability/prometheus.Dockerfile "$work/prometheus/Dockerfile"
quiet_build -t svc-prometheus:local "$work/prometheus"
echo "  svc-prometheus:local: $((SECONDS - t0))s"
