#!/usr/bin/env bash
# Builds svc-otelcol (scripts/otelcol: a minimal OpenTelemetry Collector: OTLP receiver, batch
# processor, debug and OTLP exporters) from the Go module proxy, once: the binary is cached in
# ${SVC_OTELCOL_CACHE:-~/.cache/svc/otelcol} under the digest of its sources, so later runs only
# print its path. Needs Go (the version go.mod names). Prints the binary's path as its last line.
set -euo pipefail
src="$(cd "$(dirname "$0")/otelcol" && pwd)"
cache="${SVC_OTELCOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc/otelcol}"
key="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-16)"
bin="$cache/svc-otelcol-$key"
if [ ! -x "$bin" ]; then
  command -v go >/dev/null 2>&1 || { echo "build-otelcol: Go is not installed (https://go.dev/dl/)" >&2; exit 1; }
  mkdir -p "$cache"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cp "$src/main.go" "$src/go.mod" "$src/go.sum" "$work/"
  echo "build-otelcol: building svc-otelcol (first time: a few minutes)" >&2
  # -mod=mod resolves what the build imports (not the modules' own tests, some of which the proxy lacks).
  (cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' -o "$bin.tmp" . >&2)
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
