#!/usr/bin/env bash
# Scale: how the host's costs grow with the data (issue #33). Fills a store through the
# host's own store layer (`runtime/examples/scale_fill.rs`: runs over 100 tenants, the
# benchmark's tenant holding half, four events each, a host event per 100 runs, one run of
# BIG_EVENTS events) to each size in SIZES, one fill after another (cumulative: the
# 100,000-run store holds the 1,000-run store's runs and more), and keeps a copy of the
# store at each size (SQLite: the data dir, host stopped; PostgreSQL, after its VACUUM
# ANALYZE: a database made from it as a template, `<db>_<size>`).
#
# One-shot figures, once per size right after its fill, on the growing store (a start-up
# is one event, not a sample that can be interleaved, so each keeps its own moment's
# load): start-up, start-up applying migration 9 again (its two indexes dropped) and
# migration 11 again (its counts dropped), and bytes on disk per run.
#
# Then like for like: one release host per size, each on its size's copy, read into memory
# first (`warm`; all pinned to SERVER_CPU at the same priority; on PostgreSQL every size's
# backends raised with them),
# and one measurement, one request at a time, that takes sample i of every size before
# sample i+1 of any (the size that goes first turns with i), so the machine's load falls
# on every column alike: GET a run (p50/p99 over random runs of the tenant, each size's
# from its own fills), listRuns' first page unfiltered, by a workflow 1% of runs have and
# by a status 2% have, a page DEEP runs deep by cursor (unfiltered; by workflow DEEP/100
# runs deep, the same span of runs), A2A `ListTasks` by a state (failed, ordered by
# update) and unfiltered, `GET /host/events` from a cursor (the fifth newest), the big
# run's events polled from its middle and its SSE stream resumed there (`Last-Event-ID`,
# time to the first frame), cancel (runs of `approval` created waiting, then cancelled).
# The filtered pages (by workflow, by status, ListTasks by state) ask for as many rows as
# the smallest store's tenant has (at most 20: 5 and 10 at 1,000 runs), so every size's
# page is full; the measurement stops with an error if any filtered page, or a deep page,
# comes back shorter than its limit. Each figure is printed beside its ratio to the first
# size's (a deep page: to the first size deep enough to have one).
#   bench/scale/run.sh        (SIZES="1000 100000 1000000" BACKENDS="sqlite postgres"
#                              BIG_EVENTS=100000 DEEP=10000 SAMPLES=200;
#                              OPENWOP_BIN and SCALE_FILL_BIN together: saved builds, no build;
#                              SCALE_PORT: the one-shot host's port, the measurement's
#                              hosts on the next ports, one per size)
# PostgreSQL: the machine's server on 127.0.0.1:5432 (database openwop_scale, PG_SCALE_URL,
# dropped and made again; its copies `<db>_<size>` dropped after the measurement). Filling
# a million runs takes minutes per backend; progress is printed.
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/../lib.sh"
sizes=${SIZES:-"1000 100000 1000000"}
backends=${BACKENDS:-"sqlite postgres"}
big_events=${BIG_EVENTS:-100000}
deep=${DEEP:-10000}
samples=${SAMPLES:-200}
port=${SCALE_PORT:-18395}
pg_admin=${PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
pg_url=${PG_SCALE_URL:-postgres://postgres@127.0.0.1:5432/openwop_scale}
pg_base=${pg_url%%\?*}
pg_query=${pg_url#"$pg_base"}
pg_db=${pg_base##*/}

if [[ -n ${OPENWOP_BIN:-} && -n ${SCALE_FILL_BIN:-} ]]; then
  # Both given (saved builds, e.g. to measure while the target dir holds another build).
  openwop_bin=$OPENWOP_BIN
  fill_bin=$SCALE_FILL_BIN
else
  # shellcheck disable=SC2119 # no extra cargo flags
  build_release
  echo "building the fill tool (release profile) ..." >&2
  cargo build --release --locked -p openwop --example scale_fill >&2
  fill_bin=$target_dir/release/examples/scale_fill
fi

machine_header "scale: cost as the store grows ($sizes runs; big run $big_events events; one request at a time, round robin over one host per size)"
out=$bench_tmp/scale.jsonl

# size_store BACKEND SIZE — the store of SIZE's copy (SQLite: a data dir; PostgreSQL: a URL).
size_store() {
  if [[ $1 == sqlite ]]; then
    echo "$bench_tmp/scale-data-$2"
  else
    echo "${pg_base%/*}/${pg_db}_$2$pg_query"
  fi
}

# host BACKEND PORT STORE — starts the host on STORE (a data dir or a database URL) at
# PORT; sets server_pid and startup_ms.
host() {
  local store_flags
  if [[ $1 == sqlite ]]; then
    store_flags=(--data-dir "$3")
  else
    store_flags=(--database "$3")
  fi
  # The time to a ready /readyz, polled every 2 ms by a poller started before the host
  # (wait_http's 100 ms steps made a start-up of 60 ms read 130 when its first poll came
  # just too early).
  python3 - "$2" >"$bench_tmp/ready_ns" <<'PY' &
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
  RUST_LOG=${RUST_LOG:-warn} start_server "scale-$1-$2" "$openwop_bin" serve --listen "127.0.0.1:$2" \
    "${store_flags[@]}" --api-key "acme:$bench_key" --rate-limit 0
  wait "$poller"
  startup_ms=$(( ($(cat "$bench_tmp/ready_ns") - t0) / 1000000 ))
}

# run_sql BACKEND SQL — runs SQL on the benchmark's growing store (SQLite's file or
# PostgreSQL).
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

# raise_pg_backends PORT DATABASE — gives DATABASE's PostgreSQL backends (the pool of the
# host at PORT, opened by a few requests first) the priority the host runs at: the
# machine's server is not pinned or raised, so on a busy machine its backends' turn on a
# core, not the store, set the latency measured. Connections opened later keep the
# machine's priority.
raise_pg_backends() {
  local pid curls=()
  for _ in 1 2 3 4 5 6 7 8; do
    curl -fsS -o /dev/null "http://127.0.0.1:$1/runs?limit=1" -H "Authorization: $bench_auth" &
    curls+=($!)
  done
  wait "${curls[@]}" # not a bare `wait`: the hosts are children of this shell too
  for pid in $(psql -Atq "$pg_admin" -c "SELECT pid FROM pg_stat_activity WHERE datname = '$2'"); do
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

# snapshot BACKEND SIZE — copies the growing store as it is now to SIZE's copy (nothing
# has it open: the fill has ended and no host runs). PostgreSQL copies a database only
# when no session is connected to it, so this waits for the fill's and VACUUM's sessions
# to be gone.
snapshot() {
  local copy
  copy=$(size_store "$1" "$2")
  if [[ $1 == sqlite ]]; then
    rm -rf "$copy"
    cp -a "$data_dir" "$copy"
  else
    local tries=0
    while [[ $(psql -Atq "$pg_admin" -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$pg_db'") != 0 ]]; do
      (( ++tries < 100 )) || { echo "sessions still open on $pg_db; cannot copy it" >&2; return 1; }
      sleep 0.1
    done
    psql -q "$pg_admin" -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ${pg_db}_$2 WITH (FORCE)" -c "CREATE DATABASE ${pg_db}_$2 TEMPLATE $pg_db" >/dev/null
  fi
}

# warm BACKEND SIZE — reads SIZE's copy whole into the kernel's cache, as the fill left
# the store measured before. The kernel's cache was dropped once during a run (2026-12-06
# 21:26 UTC; /proc/vmstat's drop_pagecache), which then found 44% of the 100,000-run
# SQLite copy and 78% of the 1,000,000-run one in memory and read the GET at 0.35 ms on
# 100,000 runs against 0.23 on 1,000,000. PostgreSQL: every relation's main fork read by
# `pg_prewarm` ('read': into the kernel's cache, not the server's buffers), the extension
# made in the copy.
warm() {
  local t0 copy
  t0=$(date +%s%N)
  copy=$(size_store "$1" "$2")
  if [[ $1 == sqlite ]]; then
    cat "$copy"/openwop.sqlite3* >/dev/null
  else
    psql -q "$copy" -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" \
      -c "SELECT sum(pg_prewarm(oid, 'read')) FROM pg_class WHERE relkind IN ('r', 'i', 't', 'm')" >/dev/null
  fi
  echo "  $1 $2 runs: its copy read into memory in $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
}

for backend in $backends; do
  data_dir=$bench_tmp/scale-data
  rm -rf "$data_dir"
  store=$data_dir # the growing store
  [[ $backend == postgres ]] && store=$pg_url
  if [[ $backend == postgres ]]; then
    psql -q "$pg_admin" -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $pg_db" -c "CREATE DATABASE $pg_db" >/dev/null
  fi
  # One run created over REST by the benchmark's key: its owner is copied onto the
  # filled runs of the tenant, so the host serves them to that key.
  host "$backend" "$port" "$store"
  owner_run=$(curl -fsS -X POST "http://127.0.0.1:$port/runs" -H "Authorization: $bench_auth" \
    -H 'Content-Type: application/json' -d '{"workflowId":"echo","inputs":{"n":0}}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["runId"])')
  stop_server "$server_pid"
  first=1
  ranges=""
  per_size=$bench_tmp/sizes-$backend.jsonl
  : >"$per_size"
  for size in $sizes; do
    echo "filling $backend to $size runs ..." >&2
    store_flag=(--data-dir "$data_dir")
    [[ $backend == postgres ]] && store_flag=(--database-url "$pg_url")
    fill_big=$big_events
    (( first )) || fill_big=0
    fill=$("$fill_bin" "${store_flag[@]}" --runs "$size" --owner-from "$owner_run" --big-run-events "$fill_big")
    echo "  $fill" >&2
    first=0
    # The numbers this fill gave its runs ([first, size)); the store at this size holds
    # the runs of every range so far.
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
    t_copy=$(date +%s%N)
    snapshot "$backend" "$size"
    echo "  copied to $(size_store "$backend" "$size"): $(( ($(date +%s%N) - t_copy) / 1000000 )) ms" >&2

    # The one-shot figures, on the growing store now (see the header).
    forget_migration_9 "$backend"
    host "$backend" "$port" "$store"
    migration_ms=$startup_ms
    stop_server "$server_pid"
    forget_migration_11 "$backend"
    host "$backend" "$port" "$store"
    migration11_ms=$startup_ms
    stop_server "$server_pid"
    host "$backend" "$port" "$store"
    stop_server "$server_pid"
    bytes=$(bytes_on_disk "$backend")
    echo "  start-up $startup_ms ms, with migration 9 again $migration_ms ms, with migration 11 again $migration11_ms ms, $bytes bytes" >&2
    # This size's measurement host: the next port after the one-shot host's, one per size.
    size_port=$((port + 1 + $(wc -l <"$per_size")))
    python3 -c 'import json,sys; a=sys.argv[1:]; print(json.dumps({"size": int(a[0]), "port": int(a[1]), "ranges": a[2], "startup_ms": int(a[3]), "migration9_ms": int(a[4]), "migration11_ms": int(a[5]), "bytes_per_run": int(a[6]) / int(a[0])}))' \
      "$size" "$size_port" "$ranges" "$startup_ms" "$migration_ms" "$migration11_ms" "$bytes" >>"$per_size"
  done

  # Like for like: one host per size on its copy, every figure's requests round robin
  # over them.
  measured=()
  for size in $sizes; do warm "$backend" "$size"; done
  mapfile -t size_ports < <(python3 -c 'import json,sys; [print(r["size"], r["port"]) for r in map(json.loads, open(sys.argv[1]))]' "$per_size")
  for size_port in "${size_ports[@]}"; do
    size=${size_port% *}
    host "$backend" "${size_port#* }" "$(size_store "$backend" "$size")"
    measured+=("$server_pid")
    [[ $backend == postgres ]] && raise_pg_backends "${size_port#* }" "${pg_db}_$size"
    echo "  $backend $size runs: host on port ${size_port#* } (ready in $startup_ms ms)" >&2
  done
  echo "measuring $backend: $sizes runs side by side, round robin ..." >&2
  "${bench_prio[@]}" taskset -c "$LOADGEN_CPU" python3 - "$bench_key" "$backend" "$per_size" "$samples" "$deep" \
    "$big_events" "$owner_run" >>"$out" <<'PY'
import http.client, json, random, socket, sys, time, urllib.parse
key, backend, per_size, samples, deep, big, owner = sys.argv[1:8]
samples, deep, big = int(samples), int(deep), int(big)
stores = [json.loads(l) for l in open(per_size)]
k = len(stores)
conns = [http.client.HTTPConnection("127.0.0.1", s["port"]) for s in stores]
headers = {"Authorization": f"Bearer {key}", "OpenWOP-Version": "2.0"}
tenant = owner.split("/")[0]
few = max(20, samples // 4)

def say(text):
    print(f"  {text}", file=sys.stderr, flush=True)

def fail(text):
    raise SystemExit(f"scale ({backend}): {text}")

def get(i, path):
    t = time.perf_counter()
    conns[i].request("GET", path, headers=headers)
    r = conns[i].getresponse()
    body = r.read()
    ms = (time.perf_counter() - t) * 1e3
    if r.status != 200:
        fail(f"{stores[i]['size']} runs: GET {path}: {r.status} {body[:200]!r}")
    return ms, json.loads(body)

def pct(ms):
    ms = sorted(ms)
    return {"p50": ms[len(ms) // 2], "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))]}

def round_robin(sample, n, which=None, warm=5):
    """sample(i, j) -> ms: the j-th request of size i. Round j asks every size once before
    round j + 1 asks any; the size that goes first turns with j. The first `warm` rounds
    are asked again untimed first. Returns {size index: p50/p99}."""
    which = list(range(k)) if which is None else which
    got = {i: [] for i in which}
    for timed in (False, True):
        for j in range(n if timed else min(warm, n)):
            for s in range(len(which)):
                i = which[(j + s) % len(which)]
                ms = sample(i, j)
                if timed:
                    got[i].append(ms)
    return {i: pct(v) for i, v in got.items()}

def rows_of(i, path, body, key_, want):
    # Every page of a filtered listing must be full at every size (the partial pages at
    # 1,000 runs of an earlier run read as growth).
    n = len(body[key_])
    if n != want:
        fail(f"{stores[i]['size']} runs: {path} gave {n} rows, not {want}: not a full page at this size")

# The fill numbers runs from the count stored (the owner run is 0 of them), so each size's
# tenant runs are the even numbers from 2 of the ranges of its fills.
acme = [[n for lo, hi in (r.split("-") for r in s["ranges"].split()) for n in range(int(lo), int(hi))
         if n % 2 == 0 and n >= 2] for s in stores]
# The shares scale_fill gives the tenant (`fill_one`: its run n/2 is `approval` when
# (n/2) % 100 == 3, failed when (n/2) % 50 == 7); the pages below assert what they get.
approval_at = [sum(1 for n in a if (n // 2) % 100 == 3) for a in acme]
approval, failed = min(approval_at), min(sum(1 for n in a if (n // 2) % 50 == 7) for a in acme)
limit_workflow, limit_status = min(20, approval), min(20, failed)
if not limit_workflow or not limit_status:
    fail(f"the smallest store's tenant has {approval} approval and {failed} failed runs: nothing to list")
results = [dict(s, backend=backend, limits={"workflow": limit_workflow, "status": limit_status,
                                             "deep": deep, "deep_workflow": max(1, deep // 100)})
           for s in stores]
for r in results:
    del r["ranges"], r["port"]

def figure(name, stats):
    for i, r in enumerate(results):
        r[name] = stats.get(i)
    say(f"{name}: " + ", ".join(f"{s['size']:,}: {stats[i]['p50']:.2f}" if i in stats else f"{s['size']:,}: -"
                                for i, s in enumerate(stores)))

gets = [[f"/runs/{tenant}~2Fscale-run-{random.choice(a):010d}" for _ in range(samples)] for a in acme]
figure("get", round_robin(lambda i, j: get(i, gets[i][j])[0], samples))

def page(path, key_, want):
    def sample(i, j):
        ms, body = get(i, path)
        rows_of(i, path, body, key_, want)
        return ms
    return sample
for name, query, limit in [("list", "", 20), ("list_workflow", "&workflowId=approval", limit_workflow),
                           ("list_status", "&status=failed", limit_status)]:
    figure(name, round_robin(page(f"/runs?limit={limit}{query}", "runs", limit), few))

def deep_page(i, query, depth):
    # Follows the cursor depth runs down (pages of up to 100), untimed; the page of 100
    # there is what is timed (and must be full).
    step = min(100, depth)
    path = f"/runs?limit={step}{query}"
    seen = 0
    while seen < depth:
        _, body = get(i, path)
        seen += len(body["runs"])
        cursor = body.get("nextCursor")
        if not cursor:
            fail(f"{stores[i]['size']} runs: the cursor of {query or 'listRuns'} ended {seen} runs deep, before {depth}")
        path = f"/runs?limit={step}{query}&cursor={urllib.parse.quote(cursor, safe='')}"
    return path.replace(f"limit={step}", "limit=100", 1)

# A deep page is measured at the sizes whose tenant has a full page of 100 that deep (the
# runs of the tenant, the `approval` ones of it); "-" at the others.
for name, query, depth, have in [("deep", "", deep, [len(a) for a in acme]),
                                 ("deep_workflow", "&workflowId=approval", max(1, deep // 100), approval_at)]:
    which = [i for i in range(k) if have[i] >= depth + 100]
    paths = {i: deep_page(i, query, depth) for i in which}
    figure(name, round_robin(lambda i, j: page(paths[i], "runs", 100)(i, j), few, which) if which else {})

if big:
    figure("big_run_events_mid", round_robin(
        lambda i, j: get(i, f"/runs/{tenant}~2Fscale-big-run-0001/events/poll?afterSequence={big // 2}&timeout=1")[0], few))

    def sse_first_frame(i, j):
        # A fresh connection (the stream runs on to the end of the run): the request with
        # Last-Event-ID in the middle, timed to the first whole frame, then dropped.
        t = time.perf_counter()
        s = socket.create_connection(("127.0.0.1", stores[i]["port"]))
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
                fail(f"SSE: the stream ended before a frame: {got[:300]!r}")
            got += chunk
        ms = (time.perf_counter() - t) * 1e3
        s.close()
        if not got.startswith(b"HTTP/1.1 200"):
            fail(f"SSE: {got[:300]!r}")
        return ms
    figure("big_run_sse_resume", round_robin(sse_first_frame, few, warm=3))

# GET /host/events after a cursor: the tenant's durable host events are one every 100 runs
# (`scale-host-N`, N a multiple of 100); the cursor is the fifth newest of each size's, so
# every size reads the same four events after it.
host_paths = [f"/host/events?after=scale-host-{max(n for n in a if n % 100 == 0) - 400:09d}" for a in acme]
def host_events(i, j):
    ms, body = get(i, host_paths[i])
    if len(body["events"]) != 4:
        fail(f"{stores[i]['size']} runs: {host_paths[i]} gave {len(body['events'])} events, not 4")
    return ms
figure("host_events_cursor", round_robin(host_events, few))

# A2A ListTasks by a state, newest status change first (the runs of `listRuns` by update),
# as many as the smallest store has failed runs; and unfiltered, whose totalSize (the
# protocol's count of every match before paging) counts the tenant's runs.
def a2a(i, method, params):
    t = time.perf_counter()
    conns[i].request("POST", "/a2a/jsonrpc", body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                     headers={**headers, "Content-Type": "application/json", "A2A-Version": "1.0"})
    r = conns[i].getresponse()
    body = json.loads(r.read())
    ms = (time.perf_counter() - t) * 1e3
    if r.status != 200 or "error" in body:
        fail(f"{stores[i]['size']} runs: {method}: {r.status} {json.dumps(body)[:300]}")
    return ms, body["result"]

def list_tasks(params):
    def sample(i, j):
        ms, result = a2a(i, "ListTasks", params)
        rows_of(i, f"ListTasks {json.dumps(params)}", result, "tasks", params["pageSize"])
        return ms
    return sample
figure("a2a_list_failed", round_robin(list_tasks({"status": "TASK_STATE_FAILED", "pageSize": limit_status}), few))
figure("a2a_list_all", round_robin(list_tasks({"pageSize": 20}), few))

# Cancel: runs of `approval` (they wait on an interrupt) created first on every host, then
# cancelled one at a time round robin; only the cancels are timed.
def post(i, path, body):
    t = time.perf_counter()
    conns[i].request("POST", path, body=json.dumps(body), headers={**headers, "Content-Type": "application/json"})
    r = conns[i].getresponse()
    data = r.read()
    ms = (time.perf_counter() - t) * 1e3
    if r.status >= 300:
        fail(f"{stores[i]['size']} runs: POST {path}: {r.status} {data[:200]!r}")
    return ms, json.loads(data)
waiting = [[post(i, "/runs", {"workflowId": "approval", "inputs": {}})[1]["runId"] for _ in range(few)] for i in range(k)]
figure("cancel", round_robin(
    lambda i, j: post(i, f"/runs/{urllib.parse.quote(waiting[i][j], safe='')}/cancel", {})[0], few, warm=0))
for r in results:
    print(json.dumps(r))
PY
  for pid in "${measured[@]}"; do stop_server "$pid"; done
  if [[ $backend == postgres ]]; then
    for size in $sizes; do psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS ${pg_db}_$size WITH (FORCE)" >/dev/null; done
  fi
done

python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def fig(r, key):
    v = r.get(key)
    if isinstance(v, dict):
        return v["p50"]
    return v
for backend in dict.fromkeys(r["backend"] for r in rows):
    mine = [r for r in rows if r["backend"] == backend]
    lim = mine[0]["limits"]
    keys = [("startup_ms", "start-up ms (one-shot)"), ("migration9_ms", "with migration 9 ms (one-shot)"),
            ("migration11_ms", "with migration 11 ms (one-shot)"), ("bytes_per_run", "bytes per run (one-shot)"),
            ("get", "GET run p50 ms"), ("list", "listRuns limit=20 p50 ms"),
            ("list_workflow", f"workflowId limit={lim['workflow']} p50 ms"),
            ("list_status", f"status limit={lim['status']} p50 ms"),
            ("deep", f"{lim['deep']:,} deep limit=100 p50 ms"),
            ("deep_workflow", f"workflow {lim['deep_workflow']:,} deep p50 ms"),
            ("big_run_events_mid", "big run events mid p50 ms"), ("big_run_sse_resume", "SSE resume mid p50 ms"),
            ("host_events_cursor", "host events cursor p50 ms"),
            ("a2a_list_failed", f"ListTasks failed size={lim['status']} p50"),
            ("a2a_list_all", "ListTasks all size=20 p50 ms"), ("cancel", "cancel p50 ms")]
    print(f"  {backend} (one-shot figures: each size once, right after its fill; the rest: one host per size, requests round robin):")
    print("    " + f'{"figure":<38}' + "".join(f'{r["size"]:>20,}' for r in mine))
    for key, label in keys:
        cells = []
        # The ratio is to the first size that has the figure (a deep page needs a deep store).
        base = next((fig(r, key) for r in mine if fig(r, key) is not None), None)
        for r in mine:
            v = fig(r, key)
            if v is None:
                cells.append(f'{"-":>20}')
            else:
                ratio = f" ({v / base:.2f}x)" if base else ""
                cells.append(f"{v:>11.2f}{ratio:>9}")
        print(f"    {label:<38}" + "".join(cells))
    print("    " + f'{"GET run p99 ms":<38}' + "".join(f'{r["get"]["p99"]:>20.2f}' for r in mine))
PY
echo "  ratios are to the first size (a deep page: the first size with one); target: every latency within 1.5x of it at the largest size"
machine_footer
