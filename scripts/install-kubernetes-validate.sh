#!/usr/bin/env bash
# Installs kubernetes-validate (PyPI; the Kubernetes API's JSON schemas, one set per release, ship
# inside the package, so validating needs no network) into a venv of its own, once: cached in
# ${SVC_K8S_VALIDATE_CACHE:-~/.cache/svc/kubernetes-validate}/<version>, so later runs only print
# its path. e2e/deploy-kubernetes.test.ts validates the manifests of `svc deploy kubernetes` with it.
# Needs python3 with venv. Prints the executable's path as its last line.
set -euo pipefail
version=1.37.0
cache="${SVC_K8S_VALIDATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc/kubernetes-validate}/$version"
bin="$cache/bin/kubernetes-validate"
# The stamp is written last: a run cut short is redone, not trusted.
if [ ! -f "$cache/.installed" ]; then
  command -v python3 >/dev/null 2>&1 || { echo "install-kubernetes-validate: python3 is not installed" >&2; exit 1; }
  rm -rf "$cache"
  mkdir -p "$(dirname "$cache")"
  python3 -m venv "$cache" >&2
  "$cache/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$version" >&2
  touch "$cache/.installed"
fi
echo "$bin"
