#!/usr/bin/env bash
# Every benchmark in turn (each prints its own ratios); the output is also kept in
# target/bench-all.log. Takes about 10 minutes. Same environment knobs as each run.sh.
#   bench/all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
log=${CARGO_TARGET_DIR:-$PWD/target}/bench-all.log
: >"$log"
for b in a2a mcp rest replicas sse-memory commit-cost validate outbound; do
  "bench/$b/run.sh" 2>&1 | grep -v -E '^(building|   Compiling|    Finished|  Executable)' | tee -a "$log"
  echo | tee -a "$log"
done
