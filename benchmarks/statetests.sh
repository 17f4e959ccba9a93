#!/usr/bin/env bash
# The whole GeneralStateTests run (CI runs a fixed sample through
# tests/test_statetest.py). Run by hand from the repository root:
#   bash benchmarks/statetests.sh [path-to-GeneralStateTests]
# It prints the runner's closing "N passed, M failed" line, the failing
# cases, and the wall time; figures go to benchmarks/RESULTS.md.
set -u
suite=${1:-../shared/fixtures/ethereum-tests/GeneralStateTests}
runner=${NODEX_STATETEST:-.venv/bin/nodex-statetest}
out=$(mktemp)
start=$(date +%s)
taskset -c 0 "$runner" "$suite" > "$out"
status=$?
end=$(date +%s)
grep '"pass": false' "$out" | head -n 50
tail -n 1 "$out"
echo "wall time: $((end - start)) s (exit status $status)"
