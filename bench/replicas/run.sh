#!/usr/bin/env bash
# create+get throughput of `openwop serve`: one replica on SQLite, one and two replicas on
# one PostgreSQL database, in one run; prints the rates and the ratios.
# Usage: bench/replicas/run.sh [pairs] [concurrency]
# Needs PostgreSQL at OPENWOP_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres);
# the benchmark works in a schema of its own and drops it at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
OPENWOP_BENCH_REQUESTS=${1:-1000} OPENWOP_BENCH_CONCURRENCY=${2:-16} \
  cargo bench --locked -p openwop --bench replicas --profile dev
