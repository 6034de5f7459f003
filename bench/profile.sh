#!/usr/bin/env bash
# Where our host's CPU goes on one path: starts `openwop serve` (release) pinned to
# SERVER_CPU, drives the path with the load generator (LOADGEN_CPU), and samples the server
# with `perf record -e cpu-clock` (a software clock: this machine's VM exposes no hardware
# counters) while the load runs. Prints the top symbols by self time and by inclusive
# time (DWARF call graphs: the release build has no frame pointers), system calls per
# request (strace -c), and the state of each server thread under load.
#   bench/profile.sh a2a|mcp|rest-create-get|rest-get   (DURATION=10 TOP=25)
# Needs perf; the raw data stays in target/bench-profile/<path>.perf.data.
source "$(dirname "$0")/lib.sh"
path=${1:?a2a, mcp, rest-create-get or rest-get}
top=${TOP:-25}
port=${OURS_PORT:-18781}
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }
build_release
out_dir=$target_dir/bench-profile
mkdir -p "$out_dir"
case $path in
  a2a) args=(--scenario a2a --url "http://127.0.0.1:$port/a2a/jsonrpc" --a2a-skill echo) ;;
  mcp) args=(--scenario mcp-openwop --url "http://127.0.0.1:$port/mcp") ;;
  rest-create-get | rest-get) args=(--scenario "$path" --url "http://127.0.0.1:$port") ;;
  *) echo "unknown path $path" >&2; exit 2 ;;
esac

machine_header "profile of $path"
start_openwop ours "$port"
loadgen http --label "$path" "${args[@]}" --auth "$bench_auth" --pid "$server_pid" \
  --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup 2 >"$bench_tmp/load.json" &
load=$!
sleep 2.5
perf record -q -e cpu-clock -F 499 --call-graph dwarf,32768 -p "$server_pid" \
  -o "$out_dir/$path.perf.data" -- sleep "$(( DURATION - 1 ))" 2>/dev/null
wait "$load"
report_rows "$bench_tmp/load.json"
if command -v strace >/dev/null; then
  # System calls per request: a second load with `strace -c -f` attached for 4 s (strace
  # slows the server; the counts per request are what matter). One recvfrom per request.
  loadgen http --label "$path" "${args[@]}" --auth "$bench_auth" --pid "$server_pid" \
    --concurrency "$CONCURRENCY" --duration 6 --warmup 1 >/dev/null &
  load=$!
  sleep 1.5
  timeout 4 strace -c -f -p "$server_pid" -o "$out_dir/$path.strace.txt" 2>/dev/null || true
  wait "$load"
  echo "-- system calls per request (strace -c -f, 4 s under load)"
  python3 - "$out_dir/$path.strace.txt" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        rows[f[-1]] = int(f[3])
n = rows.get("recvfrom", 0)
print(f"  requests traced (recvfrom calls): {n}")
for name, calls in sorted(rows.items(), key=lambda kv: -kv[1])[:12]:
    print(f"  {name:<16} {calls / n if n else 0:>8.1f} per request")
PY
fi
# Thread states under load (R runnable, S sleeping, D in disk sleep), sampled 300 times.
loadgen http --label "$path" "${args[@]}" --auth "$bench_auth" --pid "$server_pid" \
  --concurrency "$CONCURRENCY" --duration 5 --warmup 1 >/dev/null &
load=$!
sleep 2
echo "-- thread states under load (share of 300 samples over 3 s)"
python3 - "$server_pid" <<'PY'
import collections, os, sys, time
pid = sys.argv[1]
seen = collections.Counter()
for _ in range(300):
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            s = open(f"/proc/{pid}/task/{t}/stat").read()
        except OSError:
            continue
        seen[(s[s.index("(") + 1:s.rindex(")")] + " " + t, s[s.rindex(")") + 2])] += 1
    time.sleep(0.01)
threads = sorted({k[0] for k in seen}, key=lambda n: int(n.split()[-1]))
for name in threads:
    states = "  ".join(f"{st} {seen[(name, st)] / 3:.0f}%" for st in "RDS" if seen[(name, st)])
    print(f"  {name:<28} {states}")
PY
wait "$load"
stop_server "$server_pid"
trim() { sed -E 's/ +-? +-? *$//' | cut -c1-200; }
echo "-- self time (top $top symbols)"
perf report -i "$out_dir/$path.perf.data" --no-children --stdio --sort symbol -g none \
  --percent-limit 0.5 2>/dev/null | grep -E '^ +[0-9]' | trim | head -n "$top"
echo "-- inclusive time of our host's functions and of the main library costs (children, self)"
perf report -i "$out_dir/$path.perf.data" --children --stdio --sort symbol -g none \
  --percent-limit 1 2>/dev/null | grep -E '^ +[0-9]' | trim |
  grep -E 'openwop::|sqlite3_step|sqlite3_prepare|Tx::commit|sqlite3WalCheckpoint|walCheckpoint|__GI_fsync|fdatasync|__x64_sys_pwrite64|finish_task_switch|_int_malloc|_int_free|malloc_consolidate|serde_json::de::from_trait|serde_json::ser::to|Dispatcher<D,Bs,I,T>::poll_write|Dispatcher<D,Bs,I,T>::poll_read|tracing::instrument|__x64_sys_futex|epoll_wait|__x64_sys_sendto|__x64_sys_recvfrom|tcp_sendmsg|tcp_recvmsg' |
  head -n 60
machine_footer
