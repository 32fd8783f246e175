#!/usr/bin/env bash
# The main job: build svc, scaffold the quickstart project, start the engine, add the four workers
# and make the calls a new user would make, printing each command and what it answered.
# Embedded defaults only (no Redis, no Docker). Usage: bash scripts/quickstart.sh [DIR] [--keep]
#   DIR     where to create the project (default: ./quickstart beside this checkout's README)
#   --keep  leave the engine and workers running at the end (stop them with `svc stop` in DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
KEEP=0
DIR="$ROOT/quickstart"
for a in "$@"; do
  case "$a" in
    --keep) KEEP=1 ;;
    *) DIR=$(realpath -m "$a") ;;
  esac
done

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# Print the command as you would type it (quoting what needs it), then run it.
run() {
  local line='$' a
  for a in "$@"; do
    if [[ $a =~ [^A-Za-z0-9_./:=@,+-] ]]; then line+=" '${a//\'/\'\\\'\'}'"; else line+=" $a"; fi
  done
  printf '%s\n' "$line"
  "$@"
}

step "Installing svc (npm ci, build, the console) and system packages"
bash scripts/install-system-deps.sh
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run build >/dev/null
# The console app too, so that `svc console` works afterwards (console/dist; a second or two).
npm run build:console >/dev/null
export PATH="$ROOT/bin:$PATH"

step "Creating the quickstart project in $DIR"
run svc create --template quickstart --directory "$DIR" --force
cd "$DIR"

step "Starting the engine (svc --config config.yaml), log in $DIR/engine.log"
svc --config config.yaml >engine.log 2>&1 &
ENGINE_PID=$!
cleanup() {
  if [ "$KEEP" = 1 ]; then return; fi
  kill -TERM "$ENGINE_PID" 2>/dev/null || true
  wait "$ENGINE_PID" 2>/dev/null || true
}
trap cleanup EXIT
# Until it is ready, or has exited (port 49134 taken by another project's engine, say).
for _ in $(seq 1 300); do
  grep -q 'svc engine ready' engine.log && break
  kill -0 "$ENGINE_PID" 2>/dev/null || break
  sleep 0.1
done
cat engine.log
# One that did not start must stop the script here: the commands below would otherwise reach
# whatever listens on config.yaml's port.
if ! grep -q 'svc engine ready' engine.log; then
  printf '\nThe engine did not start (its output is above), so the quickstart stops here.\n' >&2
  printf 'If another engine holds port 49134, stop it (svc stop in its project directory) and run this again.\n' >&2
  KEEP=0
  exit 1
fi

step "Adding the workers"
run svc worker add svc-state
run svc worker add svc-http
run svc worker add ./workers/math-worker
run svc worker add ./workers/caller-worker

step "Waiting for the workers to register"
for _ in $(seq 1 150); do
  if svc trigger engine::functions::info function_id=http::add_two_numbers >/dev/null 2>&1 &&
     svc trigger engine::functions::info function_id=math::add >/dev/null 2>&1; then break; fi
  sleep 0.2
done
run svc worker list

step "Calling functions"
run svc trigger math::add a=2 b=3
run svc trigger --function-id=math::add_two_numbers --payload='{"a":1,"b":1}'
run curl -s -i -X POST localhost:3111/math/add-two-numbers -H 'Content-Type: application/json' -d '{"a":2,"b":3}'
echo
run svc worker logs math-worker --lines 5

if [ "$KEEP" = 1 ]; then
  # The PATH exported above is this script's: the user's shell needs it too before `svc` works there.
  step "Still running (engine pid $ENGINE_PID). In your shell: export PATH=\"$ROOT/bin:\$PATH\"; cd $DIR
   then: svc console (http://127.0.0.1:3113/) to see it, svc stop to stop it"
else
  step "Stopping the engine (its workers stop with it)"
fi
