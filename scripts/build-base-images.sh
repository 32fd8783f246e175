#!/usr/bin/env bash
# Builds, without Docker Hub, local equivalents of the public base images our Dockerfiles default
# to, from what this machine reaches (Debian's package mirror) and has (its Node.js, its CAs):
#
#   svc-base-rootfs:local   Debian bookworm minbase + ca-certificates, python3, python3-venv,
#                           redis-server (mmdebstrap from Debian's mirror, then `docker import`)
#   svc-base-debian:local   + the certificate authorities this machine trusts
#                           (/usr/local/share/ca-certificates), so registries reached through a
#                           TLS-inspecting proxy verify inside images as they do on the host
#   svc-base-python:local   stands in for python:3.11-slim-bookworm  (build arg PYTHON_BASE)
#   svc-base-node:local     stands in for node:20-bookworm-slim       (build arg NODE_BASE)
#                           = svc-base-debian + this machine's node, npm, npx, corepack
#   svc-redis:local         stands in for redis:7-bookworm            (REDIS_IMAGE in compose)
#
# Cached: an image is rebuilt only when its inputs changed (package list, CAs, the host's Node
# version), recorded in its label svc.base.hash. --force rebuilds all. Prints each duration.
# Needs root (mmdebstrap) and a running Docker engine (scripts/start-dockerd.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=ca-certificates,python3,python3-venv,redis-server
NODE_BIN=$(command -v node)
NODE_VERSION=$("$NODE_BIN" --version)
export DOCKER_BUILDKIT=0
WORK=$(mktemp -d /tmp/svc-base-images.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

label_of() { docker image inspect --format '{{index .Config.Labels "svc.base.hash"}}' "$1" 2>/dev/null || true; }
fresh() { [ "$FORCE" = 0 ] && [ "$(label_of "$1")" = "$2" ]; }
hash_of() { printf '%s' "$*" | sha256sum | cut -c1-16; }
timed() {
  local what=$1; shift
  local t0=$SECONDS
  "$@"
  echo "  $what: $((SECONDS - t0))s"
}
# The legacy builder (no buildx on Debian's docker.io) prints a deprecation notice on every build.
quiet_build() {
  local out
  if ! out=$(docker build -q --force-rm "$@" 2>&1); then echo "$out" >&2; return 1; fi
}

# --- Debian root filesystem -------------------------------------------------------------------
ROOTFS_HASH=$(hash_of "rootfs-v1 $SUITE $PACKAGES")
build_rootfs() {
  if ! command -v mmdebstrap >/dev/null 2>&1; then
    echo "installing mmdebstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
  fi
  # minbase: essential packages + apt; no docs, man pages or locales (smaller, faster import).
  mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$SUITE" "$WORK/rootfs.tar" "$MIRROR"
  docker import \
    --change "LABEL svc.base.hash=$ROOTFS_HASH" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["bash"]' \
    "$WORK/rootfs.tar" svc-base-rootfs:local >/dev/null
}
if fresh svc-base-rootfs:local "$ROOTFS_HASH"; then
  echo "svc-base-rootfs:local is up to date"
else
  echo "building svc-base-rootfs:local (mmdebstrap $SUITE: $PACKAGES)"
  timed "svc-base-rootfs:local" build_rootfs
fi

# --- This machine's certificate authorities ---------------------------------------------------
mkdir -p "$WORK/debian/ca"
if [ -d /usr/local/share/ca-certificates ]; then cp -r /usr/local/share/ca-certificates/. "$WORK/debian/ca/"; fi
CA_HASH=$( (cd "$WORK/debian/ca" && find . -type f | sort | xargs -r sha256sum) | sha256sum | cut -c1-16)
DEBIAN_HASH=$(hash_of "debian-v1 $ROOTFS_HASH $CA_HASH")
build_debian() {
  cat >"$WORK/debian/Dockerfile" <<DOCKERFILE
FROM svc-base-rootfs:local
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
# pip (certifi) and node (its own bundle) read the system store only when told, as on the host.
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt \\
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \\
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \\
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
LABEL svc.base.hash=$DEBIAN_HASH
DOCKERFILE
  quiet_build -t svc-base-debian:local "$WORK/debian"
}
if fresh svc-base-debian:local "$DEBIAN_HASH"; then echo "svc-base-debian:local is up to date"; else timed "svc-base-debian:local" build_debian; fi

# --- Python ---------------------------------------------------------------------------------------
PY_HASH=$(hash_of "python-v1 $DEBIAN_HASH")
build_python() {
  mkdir -p "$WORK/python"
  cat >"$WORK/python/Dockerfile" <<DOCKERFILE
FROM svc-base-debian:local
# As in the official image, \`python\` is Python 3 (Debian names it python3 only).
RUN ln -sf /usr/bin/python3 /usr/local/bin/python
LABEL svc.base.hash=$PY_HASH
CMD ["python3"]
DOCKERFILE
  quiet_build -t svc-base-python:local "$WORK/python"
}
if fresh svc-base-python:local "$PY_HASH"; then echo "svc-base-python:local is up to date"; else timed "svc-base-python:local" build_python; fi

# --- Node.js: this machine's own build, copied in --------------------------------------------
NODE_PREFIX=$(cd "$(dirname "$(readlink -f "$NODE_BIN")")/.." && pwd)
NODE_HASH=$(hash_of "node-v1 $DEBIAN_HASH $NODE_VERSION")
build_node() {
  mkdir -p "$WORK/node/bin" "$WORK/node/lib"
  cp "$(readlink -f "$NODE_BIN")" "$WORK/node/bin/node"
  for m in npm corepack; do
    if [ -d "$NODE_PREFIX/lib/node_modules/$m" ]; then cp -a "$NODE_PREFIX/lib/node_modules/$m" "$WORK/node/lib/"; fi
  done
  cat >"$WORK/node/Dockerfile" <<DOCKERFILE
FROM svc-base-debian:local
COPY bin/node /usr/local/bin/node
COPY lib/ /usr/local/lib/node_modules/
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && if [ -d /usr/local/lib/node_modules/corepack ]; then ln -s ../lib/node_modules/corepack/dist/corepack.js /usr/local/bin/corepack; fi \\
 && node --version && npm --version
LABEL svc.base.hash=$NODE_HASH
CMD ["node"]
DOCKERFILE
  quiet_build -t svc-base-node:local "$WORK/node"
}
if fresh svc-base-node:local "$NODE_HASH"; then echo "svc-base-node:local is up to date"; else timed "svc-base-node:local (node $NODE_VERSION)" build_node; fi

# --- Redis ----------------------------------------------------------------------------------------
REDIS_HASH=$(hash_of "redis-v1 $DEBIAN_HASH")
build_redis() {
  mkdir -p "$WORK/redis"
  cat >"$WORK/redis/Dockerfile" <<DOCKERFILE
FROM svc-base-debian:local
LABEL svc.base.hash=$REDIS_HASH
EXPOSE 6379
# Like the official image: no config file, every interface, no protected mode.
CMD ["redis-server", "--protected-mode", "no"]
DOCKERFILE
  quiet_build -t svc-redis:local "$WORK/redis"
}
if fresh svc-redis:local "$REDIS_HASH"; then echo "svc-redis:local is up to date"; else timed "svc-redis:local" build_redis; fi

docker image ls --format '  {{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E 'svc-(base|redis)' || true
