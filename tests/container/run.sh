#!/usr/bin/env bash
# The container image as an operator meets it: build the root Containerfile from the
# static binary (tests/container/build.sh), run it with podman, configured by OPENWOP_* variables only,
# with a host directory as its /data volume; read the dev key from `podman logs`, start a
# run that waits for an approval, restart the container, check the run is still there and
# finishes when approved, check the HEALTHCHECK (`openwop probe`) passes and that
# `openwop backup` finds the data dir by OPENWOP_DATA_DIR; then remove container and image.
#
# podman runs rootful with the runc runtime and the host's network (the machine's crun
# and network set-up do not work in this sandbox), so the host inside listens on
# 127.0.0.1:$OPENWOP_CONTAINER_PORT (default 23080) via OPENWOP_LISTEN.
# Without systemd podman cannot schedule the periodic check and logs "unable to get
# systemd connection" errors; the check itself is run here with `podman healthcheck run`.
# No podman, or a podman that cannot run a container, is a failure with the reason, never
# a skip. Each wait is bounded; tests/run.sh also bounds the whole script with `timeout`.
# It also checks the image is FROM scratch with nothing but the binary and image/rootfs, and
# that the static binary resolves a peer named by host name (`localhost`: getaddrinfo in a
# static glibc) from inside the container.
# Usage: tests/container/run.sh [BINARY]   (BINARY as tests/container/build.sh takes it)
set -euo pipefail
cd "$(dirname "$0")/../.."
port=${OPENWOP_CONTAINER_PORT:-23080}
base=http://127.0.0.1:$port
image=localhost/openwop:test-$$
name=openwop-test-$$
podman=(podman --runtime runc)
run_flags=(--network host --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)

fail() {
  echo "container test FAILED: $*" >&2
  exit 1
}
step() { printf '\n--> %s\n' "$*" >&2; }

command -v podman >/dev/null \
  || fail "podman is not installed (apt-get install podman runc; .ci/run's system packages step does)"
command -v runc >/dev/null || fail "runc is not installed (apt-get install runc)"
if ! info=$("${podman[@]}" info 2>&1); then
  fail "podman cannot run here: $(tail -5 <<<"$info")"
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  fail "127.0.0.1:$port is already in use (set OPENWOP_CONTAINER_PORT)"
fi

data=$(mktemp -d)
cleanup() {
  local rc=$?
  if ((rc != 0)) && "${podman[@]}" container exists "$name" 2>/dev/null; then
    echo "--- podman logs $name" >&2
    "${podman[@]}" logs "$name" 2>&1 | tail -40 >&2 || true
  fi
  "${podman[@]}" rm --force --time 5 "$name" >/dev/null 2>&1 || true
  "${podman[@]}" rmi --force "$image" >/dev/null 2>&1 || true
  rm -rf "$data"
  exit "$rc"
}
trap cleanup EXIT

step "building $image"
OPENWOP_IMAGE=$image tests/container/build.sh "$@"
# A named volume starts as the image's /data: it must be the service user's, or the host
# cannot write its store there (COPY makes files root's unless told).
mnt=$("${podman[@]}" image mount "$image")
owner=$(stat -c %u:%g "$mnt/data")
files=$(cd "$mnt" && find . -type f -o -type l | sort | tr '\n' ' ')
"${podman[@]}" image unmount "$image" >/dev/null
[[ $owner == 10001:10001 ]] || fail "the image's /data belongs to $owner, not the service user 10001"
# FROM scratch: the static binary and image/rootfs, no libraries, no loader.
want='./etc/group ./etc/nsswitch.conf ./etc/passwd ./usr/local/bin/openwop '
[[ $files == "$want" ]] || fail "the image holds $files, not $want"

json() { python3 -c "import json,sys; v=json.load(sys.stdin); print($1)"; }

wait_ready() {
  for _ in $(seq 1 150); do
    curl -fsS --max-time 2 "$base/readyz" >/dev/null 2>&1 && return 0
    [[ $("${podman[@]}" inspect --format '{{.State.Running}}' "$name" 2>/dev/null) == true ]] \
      || fail "the container stopped before it was ready"
    sleep 0.2
  done
  fail "$base/readyz did not answer 200 within 30 s"
}

step "podman run (OPENWOP_LISTEN=127.0.0.1:$port, $data as /data)"
# `:U` gives the volume to the image's user (10001): the host dir is root's.
"${podman[@]}" run --detach --name "$name" "${run_flags[@]}" \
  --env "OPENWOP_LISTEN=127.0.0.1:$port" \
  --volume "$data:/data:U" "$image" >/dev/null
wait_ready
key=$("${podman[@]}" logs "$name" 2>/dev/null | sed -n 's/^dev API key for tenant "dev": //p' | tail -1)
[[ -n $key ]] || fail "no dev key in podman logs"
echo "dev key from podman logs: ${key:0:10}…" >&2
[[ -s $data/openwop.sqlite3 && -s $data/dev-api-key ]] || fail "the store is not in the /data volume"
user=$("${podman[@]}" top "$name" user | awk 'NR == 2 {print $1}')
[[ $user != root && $user != 0 ]] || fail "the host runs as root in the container"

step "a host name resolved by the static binary (getaddrinfo): openwop probe http://localhost:$port/readyz"
# podman gives the container the machine's /etc/hosts; glibc's static resolver reads it
# (and /etc/nsswitch.conf from image/rootfs) with no NSS module to load.
if ! out=$("${podman[@]}" exec "$name" openwop probe "http://localhost:$port/readyz" 2>&1); then
  fail "the static binary could not reach localhost: $out"
fi

step "creating a run that waits for an approval"
auth=(-H "Authorization: Bearer $key")
run=$(curl -fsS --max-time 10 "${auth[@]}" -H 'Content-Type: application/json' \
  -d '{"workflowId":"approval","inputs":{"title":"container restart"}}' "$base/runs")
run_id=$(json 'v["runId"]' <<<"$run")
run_url="$base/runs/${run_id/\//~2F}"
status() { curl -fsS --max-time 10 "${auth[@]}" "$run_url" | json 'v["status"]'; }
wait_status() {
  local want=$1 got=
  for _ in $(seq 1 100); do
    got=$(status) && [[ $got == "$want" ]] && return 0
    sleep 0.1
  done
  fail "run $run_id is $got, not $want"
}
wait_status waiting-approval
echo "run $run_id: waiting-approval" >&2

step "podman restart"
"${podman[@]}" restart --time 10 "$name" >/dev/null
wait_ready
# The logs are read whole before searching: `grep -q` stops at the first match, and under
# pipefail the writer it leaves behind (SIGPIPE) would fail the check at random.
logs=$("${podman[@]}" logs "$name" 2>&1)
grep -q 'shutting down' <<<"$logs" || fail "the host was not stopped gracefully"
key_after=$("${podman[@]}" logs "$name" 2>/dev/null | sed -n 's/^dev API key for tenant "dev": //p' | tail -1)
[[ $key_after == "$key" ]] || fail "the dev key changed across the restart"
wait_status waiting-approval
echo "run $run_id survived the restart: waiting-approval" >&2
curl -fsS --max-time 10 "${auth[@]}" -H 'Content-Type: application/json' \
  -d '{"resumeValue":{"action":"accept"}}' "$run_url/interrupts/approve" >/dev/null
wait_status completed
echo "run $run_id approved after the restart: completed" >&2

step "podman healthcheck run (openwop probe)"
if ! hc=$("${podman[@]}" healthcheck run "$name" 2>&1); then
  fail "the HEALTHCHECK failed: $hc"
fi
health=$("${podman[@]}" inspect --format '{{.State.Health.Status}}' "$name" 2>/dev/null \
  || "${podman[@]}" inspect --format '{{.State.Healthcheck.Status}}' "$name")
[[ $health == healthy ]] || fail "health is '$health' after a passing check"
echo "healthcheck: $health" >&2

step "openwop backup in the container (finds /data by OPENWOP_DATA_DIR)"
"${podman[@]}" exec "$name" openwop backup /tmp/backup >/dev/null 2>&1 \
  || fail "openwop backup failed: $("${podman[@]}" exec "$name" openwop backup /tmp/backup2 2>&1)"

step "podman stop: SIGTERM ends the host with status 0"
"${podman[@]}" stop --time 10 "$name" >/dev/null
code=$("${podman[@]}" inspect --format '{{.State.ExitCode}}' "$name")
[[ $code == 0 ]] || fail "the host exited with $code on SIGTERM"

echo "container: 1 passed, 0 failed" >&2
