#!/usr/bin/env bash
# PostgreSQL: create+get (POST /runs, then GET the run) on our host (`openwop serve`,
# release) with SQLite, with one PostgreSQL replica, and with two replicas on one
# PostgreSQL schema (creates on one, reads on the other), the same compiled load
# generator throughout. Every replica is pinned to SERVER_CPU, the generator to
# LOADGEN_CPU. PostgreSQL is the machine's own server (its backends' CPU is read from /proc
# too and printed beside ours) and by default is not pinned: it shares both CPUs with the
# replicas and the generator. PG_CPU=0 (say) moves its processes to that CPU for the run,
# as a database on its own machine would not take the replica's CPU (their old affinity
# is put back at the end; they must be ours or root's to move). Server CPU per request is
# read from /proc/<pid>/stat over the measured interval (both replicas summed).
#   bench/replicas/run.sh       (ROUNDS, DURATION, WARMUP, CONCURRENCY, SERVER_CPU,
#                                LOADGEN_CPU, PG_CPU, SQLITE_PORT, PG_A_PORT, PG_B_PORT)
# ROUNDS > 1 runs the three phases again in turn, each round on an empty SQLite file and
# an empty schema, and pools them (each round's ratio printed too): on a shared VM a
# neighbour's burst lands in one phase, and one round's ratio measures it.
# Needs PostgreSQL at OPENWOP_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres);
# the benchmark works in schemas of its own and drops them.
# PostgreSQL runs at the machine's priority: unless BENCH_NICE is given, so do the replicas
# and the generator (a raised priority for them alone would starve PostgreSQL's backends).
BENCH_NICE=${BENCH_NICE:-0}
source "$(dirname "$0")/../lib.sh"
db=${OPENWOP_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
schema=
drop_schema() {
  [[ -n $schema ]] || return 0
  PGOPTIONS="-c client_min_messages=warning" psql -q "$db" -c "DROP SCHEMA IF EXISTS $schema CASCADE" || true
  schema=
}
# PostgreSQL's processes (postmaster and backends; new backends inherit the postmaster's
# mask) moved to PG_CPU, and back: each to the mask it had, a backend started meanwhile to
# the postmaster's.
PG_CPU=${PG_CPU:-all}
declare -A pg_masks=()
pg_home_mask=
pin_postgres() {
  [[ $PG_CPU == all ]] && return 0
  local pid mask
  pg_home_mask=$(taskset -p "$(pgrep -o -x postgres)" 2>/dev/null | awk '{print $NF}') || true
  for pid in $(pgrep -x postgres || true); do
    mask=$(taskset -p "$pid" 2>/dev/null | awk '{print $NF}') || continue
    taskset -p -c "$PG_CPU" "$pid" >/dev/null 2>&1 && pg_masks[$pid]=$mask
  done
  if (( ${#pg_masks[@]} == 0 )); then
    echo "  (PostgreSQL's processes could not be moved to CPU $PG_CPU: left unpinned)"
    PG_CPU=all
  fi
}
unpin_postgres() {
  (( ${#pg_masks[@]} > 0 )) || return 0
  local pid
  for pid in $(pgrep -x postgres || true); do
    taskset -p "${pg_masks[$pid]:-$pg_home_mask}" "$pid" >/dev/null 2>&1 || true
  done
  pg_masks=()
}
trap 'bench_exit; drop_schema; unpin_postgres' EXIT
sep='?'
[[ $db == *\?* ]] && sep='&'
sqlite_port=${SQLITE_PORT:-18480}
pg_a_port=${PG_A_PORT:-18481}
pg_b_port=${PG_B_PORT:-18482}
build_release

# Rows of `runs` read by sequential scans so far: every hot statement reads by index, so a
# count that grows with the load means a plan went wrong (see RUN_DETAILS, postgres.rs).
seq_rows() {
  sleep 1 # PostgreSQL publishes its table statistics about once a second
  psql -qAt "$db" -c "SELECT seq_scan || ' scans, ' || seq_tup_read || ' rows' FROM pg_stat_user_tables WHERE schemaname = '$schema' AND relname = 'runs'"
}

pin_postgres
machine_header "create+get: SQLite vs PostgreSQL (1 and 2 replicas), concurrency $CONCURRENCY, ${DURATION}s after ${WARMUP}s warm-up, $ROUNDS round(s)"
[[ $PG_CPU == all ]] && echo "PostgreSQL: not pinned" || echo "PostgreSQL: its processes on CPU $PG_CPU"
out=$bench_tmp/replicas.jsonl
for round in $(seq 1 "$ROUNDS"); do
  start_openwop sqlite "$sqlite_port"
  http_load sqlite rest-create-get "$server_pid" "http://127.0.0.1:$sqlite_port" --auth "$bench_auth" >>"$out"
  stop_server "$server_pid"

  schema=openwop_bench_$$_$round
  psql -q "$db" -c "CREATE SCHEMA $schema"
  db_schema="$db${sep}options=-csearch_path%3D$schema"
  # A checkpoint first, so the WAL an earlier phase left does not bring one (PostgreSQL's
  # writes and syncs of every dirty page) into this phase's measured seconds; its own WAL
  # may still bring one (max_wal_size). Needs superuser or pg_checkpoint; skipped if not.
  psql -q "$db" -c CHECKPOINT 2>/dev/null || echo "  (no CHECKPOINT: not allowed for this role)"
  start_openwop pg-a "$pg_a_port" --database "$db_schema"
  pg_a=$server_pid
  http_load postgres-1-replica rest-create-get "$pg_a" "http://127.0.0.1:$pg_a_port" --auth "$bench_auth" \
    --also-name postgres >>"$out"
  seq_1=$(seq_rows)
  start_openwop pg-b "$pg_b_port" --database "$db_schema"
  pg_b=$server_pid
  psql -q "$db" -c CHECKPOINT 2>/dev/null || true
  http_load postgres-2-replicas rest-create-get "$pg_a" "http://127.0.0.1:$pg_a_port" --pid "$pg_b" \
    --url "http://127.0.0.1:$pg_b_port" --auth "$bench_auth" --also-name postgres >>"$out"
  seq_2=$(seq_rows)
  stop_server "$pg_a"
  stop_server "$pg_b"
  drop_schema
  echo "  round $round: sequential scans of runs (cumulative): after 1 replica $seq_1; after 2 replicas $seq_2"
done

report_rows "$out"
compare "$out" postgres-1-replica sqlite
compare "$out" postgres-2-replicas sqlite
echo "  target: PostgreSQL create+get >= 0.6x SQLite (both replicas share SERVER_CPU; PostgreSQL on CPU: $PG_CPU)"
machine_footer
