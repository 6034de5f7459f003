# Sourced by the peer and benchmark scripts: starts the real `openwop serve` binary (the
# README's host) on a loopback port with two tenants, and stops it when the script exits.
#   start_openwop PORT LOG [extra serve flags...]
# Needs OPENWOP_BIN (the built binary). Exports OPENWOP_BASE_URL and the two tenants' keys.
export OPENWOP_API_KEY=${OPENWOP_API_KEY:-acme-key-0123456789abcdef}
export OPENWOP_OTHER_API_KEY=${OPENWOP_OTHER_API_KEY:-other-key-0123456789abcdef}
openwop_pids=()
stop_openwop() { for p in "${openwop_pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_openwop EXIT

start_openwop() {
  local port=$1 log=$2
  shift 2
  local data
  data=$(mktemp -d)
  "$OPENWOP_BIN" serve --listen "127.0.0.1:$port" --data-dir "$data" \
    --api-key "acme:$OPENWOP_API_KEY" --api-key "other:$OPENWOP_OTHER_API_KEY" "$@" >"$log" 2>&1 &
  openwop_pids+=($!)
  export OPENWOP_BASE_URL=http://127.0.0.1:$port
  for _ in $(seq 1 200); do
    curl -fsS "$OPENWOP_BASE_URL/.well-known/openwop" >/dev/null 2>&1 && return 0
    kill -0 "${openwop_pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "openwop serve did not come up on port $port; its log:" >&2
  cat "$log" >&2
  return 1
}
