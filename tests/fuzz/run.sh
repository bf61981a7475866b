#!/usr/bin/env bash
# Runs the libFuzzer targets built by build.sh, each for SECONDS (default 600), JOBS at
# a time (default 2), growing a working corpus in build-fuzz/corpus/<name> from the
# committed seeds; crashes land in build-fuzz/artifacts/<name>/ and logs in
# build-fuzz/logs/<name>.log.  Usage: tests/fuzz/run.sh [SECONDS [JOBS [target ...]]]
# Allocations above 1 GiB fail (return NULL) instead of aborting, as on a machine
# short of memory: the loaders must report GR_ERR_NOMEM, not crash.
# SPDX-License-Identifier: LGPL-2.1-or-later
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${FUZZ_OUT:-$src/build-fuzz}
secs=${1:-600}
jobs=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$out"/fuzz_*; do [ -x "$f" ] && targets+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi
export ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p "$out/logs"
run_one() {
  local t=$1 extra=()
  mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
  [ -f "$src/tests/fuzz/$t.dict" ] && extra+=(-dict="$src/tests/fuzz/$t.dict")
  case $t in raster*) extra+=(-max_len=16384) ;; esac
  # GStreamer targets: LeakSanitizer cannot tell GLib's intentionally dropped quark
  # table from a leak without slow unwinding (lsan.supp), so leaks are not checked
  # while fuzzing (10x faster) but by replaying the grown corpus at the end
  local asan=$ASAN_OPTIONS
  case $t in pointset_stream) extra+=(-detect_leaks=0); asan=$asan:detect_leaks=0 ;; esac
  ASAN_OPTIONS=$asan "$out/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/$t/" "${extra[@]}" \
    "$out/corpus/$t" "$src/tests/fuzz/corpus/$t" > "$out/logs/$t.log" 2>&1
  echo "$t: exit $? ($(grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)' \
    "$out/logs/$t.log" | tr '\n' ' '))"
}
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait
# leak check of the grown GStreamer corpora through the replay driver (ASan + LSan,
# slow unwinding so that lsan.supp applies)
for t in "${targets[@]}"; do
  case $t in pointset_stream) ;; *) continue ;; esac
  replay=${REPLAY_BUILD:-$src/build-faults}/tests/fuzz/replay_$t
  [ -x "$replay" ] || { echo "$t: no $replay for the leak check"; continue; }
  ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0 \
  LSAN_OPTIONS=suppressions=$src/tests/fuzz/lsan.supp \
    "$replay" "$out/corpus/$t" > "$out/logs/$t-leakcheck.log" 2>&1
  echo "$t: leak-check replay of $(ls "$out/corpus/$t" | wc -l) inputs: exit $?"
done
