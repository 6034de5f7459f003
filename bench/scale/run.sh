#!/usr/bin/env bash
# Scale: how the host's costs grow with the data (issue #33). Fills a store through the
# host's own store layer (`runtime/examples/scale_fill.rs`: runs over 100 tenants, the
# benchmark's tenant holding half, four events each, a host event per 100 runs, one run of
# BIG_EVENTS events) to each size in SIZES, and at each size measures, one request at a
# time against the release host on that store: start-up, GET a run (p50/p99 over random
# runs), listRuns' first page unfiltered, by a workflow 1% of runs have and by a status 2%
# have, a page DEEP runs deep by cursor (unfiltered and by workflow), A2A `ListTasks` by a
# state (failed, ordered by update) and unfiltered, `GET /host/events` from a cursor (the fifth newest),
# the big run's events polled from its middle and its SSE stream resumed there
# (`Last-Event-ID`, time to the first frame), cancel (runs of `approval` created waiting,
# then cancelled, one at a time), migrations 9 and 11 each run again (9's two indexes, 11's
# counts dropped), and bytes
# on disk per run. Each figure is printed beside its ratio to the first size's.
#   bench/scale/run.sh        (SIZES="1000 100000 1000000" BACKENDS="sqlite postgres"
#                              BIG_EVENTS=100000 DEEP=10000 SAMPLES=200;
#                              OPENWOP_BIN and SCALE_FILL_BIN together: saved builds, no build)
# PostgreSQL: the machine's server on 127.0.0.1:5432 (database openwop_scale, dropped and
# made again). Filling a million runs takes minutes per backend; progress is printed.
source "$(dirname "$0")/../lib.sh"
sizes=${SIZES:-"1000 100000 1000000"}
backends=${BACKENDS:-"sqlite postgres"}
big_events=${BIG_EVENTS:-100000}
deep=${DEEP:-10000}
samples=${SAMPLES:-200}
port=${SCALE_PORT:-18395}
pg_admin=${PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
pg_url=${PG_SCALE_URL:-postgres://postgres@127.0.0.1:5432/openwop_scale}

if [[ -n ${OPENWOP_BIN:-} && -n ${SCALE_FILL_BIN:-} ]]; then
  # Both given (saved builds, e.g. to measure while the target dir holds another build).
  openwop_bin=$OPENWOP_BIN
  fill_bin=$SCALE_FILL_BIN
else
  build_release
  echo "building the fill tool (release profile) ..." >&2
  cargo build --release --locked -p openwop --example scale_fill >&2
  fill_bin=$target_dir/release/examples/scale_fill
fi

machine_header "scale: cost as the store grows ($sizes runs; big run $big_events events; one request at a time)"
out=$bench_tmp/scale.jsonl

# host BACKEND — starts the host on the backend's store; sets server_pid and startup_ms.
host() {
  local store_flags
  if [[ $1 == sqlite ]]; then
    store_flags=(--data-dir "$data_dir")
  else
    store_flags=(--database "$pg_url")
  fi
  # The time to a ready /readyz, polled every 2 ms by a poller started before the host
  # (wait_http's 100 ms steps made a start-up of 60 ms read 130 when its first poll came
  # just too early).
  python3 - "$port" >"$bench_tmp/ready_ns" <<'PY' &
import http.client, sys, time
port = int(sys.argv[1])
deadline = time.time() + 600
while time.time() < deadline:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/readyz")
        if c.getresponse().status == 200:
            print(time.time_ns())
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.002)
sys.exit("no answer from /readyz")
PY
  local poller=$!
  sleep 0.2 # the poller's interpreter up and polling before the host starts
  local t0
  t0=$(date +%s%N)
  RUST_LOG=${RUST_LOG:-warn} start_server "scale-$1" "$openwop_bin" serve --listen "127.0.0.1:$port" \
    "${store_flags[@]}" --api-key "acme:$bench_key" --rate-limit 0
  wait "$poller"
  startup_ms=$(( ($(cat "$bench_tmp/ready_ns") - t0) / 1000000 ))
}

# run_sql BACKEND SQL — runs SQL on the benchmark's store (SQLite's file or PostgreSQL).
run_sql() {
  if [[ $1 == sqlite ]]; then
    python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.close()' \
      "$data_dir/openwop.sqlite3" "$2"
  else
    psql -q "$pg_url" -c "$2" >/dev/null
  fi
}

# forget_migration_9 BACKEND — drops migration 9's indexes and its history row, so the
# next start applies it again on the data as it is.
forget_migration_9() {
  run_sql "$1" "DROP INDEX IF EXISTS runs_by_workflow; DROP INDEX IF EXISTS runs_by_tenant_status; DELETE FROM schema_migrations WHERE version = 9;"
}

# forget_migration_11 BACKEND — drops migration 11's counts (table, triggers) and its
# history row, so the next start counts the stored runs again.
forget_migration_11() {
  local sql="DROP TRIGGER IF EXISTS runs_counted_on_insert ON runs; DROP TRIGGER IF EXISTS runs_counted_on_status ON runs; DROP TRIGGER IF EXISTS runs_counted_on_delete ON runs; DROP TABLE IF EXISTS run_counts; DELETE FROM schema_migrations WHERE version = 11;"
  # SQLite's DROP TRIGGER names no table.
  [[ $1 == sqlite ]] && sql=${sql// ON runs;/;}
  run_sql "$1" "$sql"
}

# raise_pg_backends — gives the benchmark database's PostgreSQL backends (the host's pool,
# opened by a few requests first) the priority the host runs at: the machine's server is
# not pinned or raised, so on a busy machine its backends' turn on a core, not the store,
# set the latency measured. Connections opened later keep the machine's priority.
raise_pg_backends() {
  local i pid curls=()
  for i in 1 2 3 4 5 6 7 8; do
    curl -fsS -o /dev/null "http://127.0.0.1:$port/runs?limit=1" -H "Authorization: $bench_auth" &
    curls+=($!)
  done
  wait "${curls[@]}" # not a bare `wait`: the host is a child of this shell too
  for pid in $(psql -Atq "$pg_admin" -c "SELECT pid FROM pg_stat_activity WHERE datname = '${pg_url##*/}'"); do
    if [[ ${bench_prio[0]} == chrt ]]; then
      chrt -r -p 10 "$pid" 2>/dev/null || true
    else
      renice -n "$BENCH_NICE" -p "$pid" >/dev/null 2>&1 || true
    fi
  done
}

bytes_on_disk() {
  if [[ $1 == sqlite ]]; then
    du -sb "$data_dir" | cut -f1
  else
    psql -Atq "$pg_url" -c "SELECT pg_database_size(current_database())"
  fi
}

for backend in $backends; do
  data_dir=$bench_tmp/scale-data
  rm -rf "$data_dir"
  if [[ $backend == postgres ]]; then
    pg_db=${pg_url##*/}
    pg_db=${pg_db%%\?*}
    psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $pg_db" -c "CREATE DATABASE $pg_db" >/dev/null
  fi
  # One run created over REST by the benchmark's key: its owner is copied onto the
  # filled runs of the tenant, so the host serves them to that key.
  host "$backend"
  owner_run=$(curl -fsS -X POST "http://127.0.0.1:$port/runs" -H "Authorization: $bench_auth" \
    -H 'Content-Type: application/json' -d '{"workflowId":"echo","inputs":{"n":0}}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["runId"])')
  stop_server "$server_pid"
  first=1
  ranges=""
  for size in $sizes; do
    echo "filling $backend to $size runs ..." >&2
    store_flag=(--data-dir "$data_dir")
    [[ $backend == postgres ]] && store_flag=(--database-url "$pg_url")
    fill_big=$big_events
    (( first )) || fill_big=0
    fill=$("$fill_bin" "${store_flag[@]}" --runs "$size" --owner-from "$owner_run" --big-run-events "$fill_big")
    echo "  $fill" >&2
    first=0
    # The numbers this fill gave its runs ([first, size)): the runs the measurement creates
    # (to cancel them) are counted too, so the next fill starts past them.
    ranges=$ranges$(python3 -c 'import json,sys; f=json.loads(sys.argv[1]); print("%d-%d" % (f["runs"] - f["added"], f["runs"]), end=" ")' "$fill")

    if [[ $backend == postgres ]]; then
      # What autovacuum does after a bulk load on a production server (the machine's
      # server runs with autovacuum off): without it the planner has no statistics and
      # every first read of a freshly written page sets its hint bits (a write), inside
      # the measurement. Timed and printed; not part of any figure.
      t_vac=$(date +%s%N)
      psql -q "$pg_url" -c "VACUUM ANALYZE" >/dev/null
      echo "  VACUUM ANALYZE after the fill: $(( ($(date +%s%N) - t_vac) / 1000000 )) ms" >&2
    fi
    forget_migration_9 "$backend"
    host "$backend"
    migration_ms=$startup_ms
    stop_server "$server_pid"
    forget_migration_11 "$backend"
    host "$backend"
    migration11_ms=$startup_ms
    stop_server "$server_pid"
    host "$backend"
    [[ $backend == postgres ]] && raise_pg_backends
    bytes=$(bytes_on_disk "$backend")
    "${bench_prio[@]}" taskset -c "$LOADGEN_CPU" python3 - "$port" "$bench_key" "$backend" "$size" \
      "$startup_ms" "$migration_ms" "$migration11_ms" "$bytes" "$samples" "$deep" "$big_events" "$owner_run" "$ranges" >>"$out" <<'PY'
import http.client, json, random, socket, sys, time, urllib.parse
port, key, backend, size, startup, migration, migration11, nbytes, samples, deep, big, owner, ranges = sys.argv[1:14]
size, samples, deep, big = int(size), int(samples), int(deep), int(big)
conn = http.client.HTTPConnection("127.0.0.1", int(port))
headers = {"Authorization": f"Bearer {key}", "OpenWOP-Version": "2.0"}
tenant = owner.split("/")[0]

def get(path):
    t = time.perf_counter()
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    ms = (time.perf_counter() - t) * 1e3
    if r.status != 200:
        raise SystemExit(f"GET {path}: {r.status} {body[:200]!r}")
    return ms, json.loads(body)

def timed(paths):
    for p in paths[:5]:
        get(p)
    ms = sorted(get(p)[0] for p in paths)
    return {"p50": ms[len(ms) // 2], "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))]}

def run_path(n):
    return f"/runs/{tenant}~2Fscale-run-{n:010d}"

# The fill numbers runs from the count stored (the owner run is 0 of them, and the runs
# created to be cancelled are counted), so the tenant's runs are the even numbers of the
# ranges each fill gave.
acme = [n for lo, hi in (r.split("-") for r in ranges.split()) for n in range(int(lo), int(hi)) if n % 2 == 0 and n >= 2]
gets = [run_path(random.choice(acme)) for _ in range(samples)]
result = {"backend": backend, "size": size, "startup_ms": int(startup), "migration9_ms": int(migration),
          "migration11_ms": int(migration11),
          "bytes_per_run": int(nbytes) / size, "get": timed(gets)}
for name, query in [("list", ""), ("list_workflow", "&workflowId=approval"), ("list_status", "&status=failed")]:
    result[name] = timed([f"/runs?limit=20{query}"] * max(20, samples // 4))

def deep_cursor(query):
    # Follow the cursor DEEP runs down, 100 a page; time the page there.
    path = f"/runs?limit=100{query}"
    seen = 0
    while seen < deep:
        _, page = get(path)
        seen += len(page["runs"])
        cursor = page.get("nextCursor")
        if not cursor:
            return None
        path = f"/runs?limit=100{query}&cursor={urllib.parse.quote(cursor, safe='')}"
    return timed([path] * max(20, samples // 4))

result["deep"] = deep_cursor("")
result["deep_workflow"] = deep_cursor("&workflowId=approval")
if big:
    result["big_run_events_mid"] = timed([f"/runs/{tenant}~2Fscale-big-run-0001/events/poll?afterSequence={big // 2}&timeout=1"] * max(20, samples // 4))

    def sse_first_frame():
        # A fresh connection (the stream runs on to the end of the run): the request with
        # Last-Event-ID in the middle, timed to the first whole frame, then dropped.
        t = time.perf_counter()
        s = socket.create_connection(("127.0.0.1", int(port)))
        s.sendall((f"GET /runs/{tenant}~2Fscale-big-run-0001/events HTTP/1.1\r\nHost: x\r\n"
                   f"Authorization: Bearer {key}\r\nOpenWOP-Version: 2.0\r\nAccept: text/event-stream\r\n"
                   f"Last-Event-ID: {big // 2}\r\n\r\n").encode())
        got = b""
        while True:
            body = got.split(b"\r\n\r\n", 1)[-1] if b"\r\n\r\n" in got else b""
            if b"data:" in body and b"\n\n" in body.split(b"data:", 1)[1]:
                break
            chunk = s.recv(65536)
            if not chunk:
                raise SystemExit(f"SSE: the stream ended before a frame: {got[:300]!r}")
            got += chunk
        ms = (time.perf_counter() - t) * 1e3
        s.close()
        if not got.startswith(b"HTTP/1.1 200"):
            raise SystemExit(f"SSE: {got[:300]!r}")
        return ms

    for _ in range(3):
        sse_first_frame()
    ms = sorted(sse_first_frame() for _ in range(max(20, samples // 4)))
    result["big_run_sse_resume"] = {"p50": ms[len(ms) // 2], "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))]}

# GET /host/events after a cursor: the tenant's durable host events are one every 100 runs
# (`scale-host-N`, N a multiple of 100); the cursor is the fifth newest, so every size
# reads the same four events after it.
last_host = max(n for n in acme if n % 100 == 0)
result["host_events_cursor"] = timed([f"/host/events?after=scale-host-{last_host - 400:09d}"] * max(20, samples // 4))

# A2A ListTasks by a state, newest status change first (the runs of `listRuns` by update).
def a2a(method, params):
    t = time.perf_counter()
    conn.request("POST", "/a2a/jsonrpc", body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                 headers={**headers, "Content-Type": "application/json", "A2A-Version": "1.0"})
    r = conn.getresponse()
    body = json.loads(r.read())
    ms = (time.perf_counter() - t) * 1e3
    if r.status != 200 or "error" in body:
        raise SystemExit(f"{method}: {r.status} {json.dumps(body)[:300]}")
    return ms
ms = sorted(a2a("ListTasks", {"status": "TASK_STATE_FAILED", "pageSize": 20}) for _ in range(max(20, samples // 4)))
result["a2a_list_failed"] = {"p50": ms[len(ms) // 2], "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))]}
# Unfiltered: its totalSize (the protocol's count of every match before paging) counts
# the tenant's runs.
ms = sorted(a2a("ListTasks", {"pageSize": 20}) for _ in range(max(20, samples // 4)))
result["a2a_list_all"] = {"p50": ms[len(ms) // 2], "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))]}

# Cancel: runs of `approval` (they wait on an interrupt) created first, then cancelled one
# at a time; only the cancels are timed.
def post(path, body):
    t = time.perf_counter()
    conn.request("POST", path, body=json.dumps(body), headers={**headers, "Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    ms = (time.perf_counter() - t) * 1e3
    if r.status >= 300:
        raise SystemExit(f"POST {path}: {r.status} {data[:200]!r}")
    return ms, json.loads(data)
waiting = [post("/runs", {"workflowId": "approval", "inputs": {}})[1]["runId"] for _ in range(max(20, samples // 4))]
ms = sorted(post(f"/runs/{urllib.parse.quote(r, safe='')}/cancel", {})[0] for r in waiting)
result["cancel"] = {"p50": ms[len(ms) // 2], "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))]}
print(json.dumps(result))
PY
    stop_server "$server_pid"
  done
done

python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def fig(r, key):
    v = r.get(key)
    if isinstance(v, dict):
        return v["p50"]
    return v
keys = [("startup_ms", "start-up ms"), ("migration9_ms", "start with migration 9 ms"),
        ("migration11_ms", "start with migration 11 ms"), ("bytes_per_run", "bytes per run"),
        ("get", "GET run p50 ms"), ("list", "listRuns p50 ms"), ("list_workflow", "workflowId p50 ms"),
        ("list_status", "status p50 ms"), ("deep", "deep page p50 ms"), ("deep_workflow", "deep by workflow p50 ms"),
        ("big_run_events_mid", "big run events mid p50 ms"), ("big_run_sse_resume", "SSE resume mid p50 ms"),
        ("host_events_cursor", "host events cursor p50 ms"), ("a2a_list_failed", "A2A ListTasks failed p50"), ("a2a_list_all", "A2A ListTasks all p50 ms"),
        ("cancel", "cancel p50 ms")]
for backend in dict.fromkeys(r["backend"] for r in rows):
    mine = [r for r in rows if r["backend"] == backend]
    base = mine[0]
    print(f"  {backend}:")
    print("    " + f'{"figure":<28}' + "".join(f'{r["size"]:>20,}' for r in mine))
    for key, label in keys:
        cells = []
        for r in mine:
            v, b = fig(r, key), fig(base, key)
            if v is None:
                cells.append(f'{"-":>20}')
            else:
                ratio = f" ({v / b:.2f}x)" if b else ""
                cells.append(f"{v:>11.2f}{ratio:>9}")
        print(f"    {label:<28}" + "".join(cells))
    print("    GET run p99 ms             " + "".join(f'{r["get"]["p99"]:>20.2f}' for r in mine))
PY
echo "  ratios are to the first size; target: every latency within 1.5x of it at the largest size"
machine_footer
