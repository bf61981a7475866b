#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test suite (cpu, data, gpu).
# The gpu suite skips without a usable CUDA device; the data suite skips unless
# GEOREG_DATA names a folder holding shared/data's files (aukerman.png).
# Ends with one line: "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${GEOREG_BUILD:-build}
bash tools/bootstrap.sh || { echo "0 passed, 1 failed"; exit 1; }

log=$(mktemp)
meson test -C "$build" --print-errorlogs --num-processes "$(nproc)" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
count() { sed -n "s/^$1:[[:space:]]*\([0-9]*\).*/\1/p" "$log" | tail -n 1; }
ok=$(count Ok); fail=$(count Fail); skip=$(count Skipped); tout=$(count Timeout)
rm -f "$log"
echo "${ok:-0} passed, $(( ${fail:-0} + ${tout:-0} )) failed, ${skip:-0} skipped"
exit "$rc"
