#!/usr/bin/env bash
# Valgrind memcheck over a 1,000-item pipeline per element, CPU backend, tiny inputs
# (tests/soak.c): nmilocalize, nmiregister, featurematch (synthesized GRAY8 frames,
# 96x72 over a 224x168 control) and landmarkshoot (12-point sets through
# pointsetparse ! landmarkshoot ! pointsetenc).  Fails on any memcheck error (invalid
# read or write, use of uninitialised values, bad free) and on any definite leak;
# suppressions: tests/valgrind.supp (library load-time allocations only, documented).
#
#   bash tests/run-valgrind.sh [COUNT]      # builds ./build-vg (or $GEOREG_VG_BUILD)
#   meson test -C BUILD --suite valgrind    # the same on BUILD (exit 77 = no valgrind)
#
# Logs: BUILD/valgrind/<pipeline>.log.  Ends with one line "N passed, N failed".
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
count=${1:-1000}

if ! command -v valgrind >/dev/null 2>&1; then
  echo "SKIP: valgrind is not installed (apt-get install valgrind)"
  exit 77
fi
if [ -n "${GEOREG_BUILD_ROOT:-}" ]; then
  build=$GEOREG_BUILD_ROOT          # under meson test: its build and environment
else
  build=${GEOREG_VG_BUILD:-$src/build-vg}
  if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$src" -Dcuda=disabled -Dbuildtype=debugoptimized >/dev/null ||
      { echo "0 passed, 1 failed"; exit 1; }
  fi
  ninja -C "$build" >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
  export GST_PLUGIN_SYSTEM_PATH_1_0=""
  export GST_PLUGIN_PATH_1_0="$build/gst:$(pkg-config --variable=pluginsdir gstreamer-1.0)"
  export GST_REGISTRY="$build/tests/registry-vg.bin"
fi
soak=$build/tests/georeg-soak
[ -x "$soak" ] || { echo "georeg-soak is not built in $build"; echo "0 passed, 1 failed"; exit 1; }

# GLib under valgrind: plain malloc for slices; OpenMP threads sleep instead of
# spinning (valgrind runs one thread at a time).
export G_SLICE=always-malloc G_DEBUG=gc-friendly OMP_WAIT_POLICY=passive
logs=$build/valgrind
mkdir -p "$logs"
# the registry is scanned outside valgrind
"$soak" --pipeline shoot --count 1 >/dev/null 2>&1 || true

pass=0; fail=0
for p in localize register featurematch shoot; do
  t0=$(date +%s)
  valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
    --show-leak-kinds=definite --errors-for-leak-kinds=definite \
    --suppressions="$src/tests/valgrind.supp" --num-callers=40 \
    --log-file="$logs/$p.log" "$soak" --pipeline "$p" --count "$count" \
    >"$logs/$p.out" 2>&1
  rc=$?
  t=$(( $(date +%s) - t0 ))
  errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$logs/$p.log" | tail -n 1)
  lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$logs/$p.log" | tail -n 1)
  line=$(grep -m1 "items pushed" "$logs/$p.out")
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
    echo "PASS $p (${t}s): ${errs:-?} errors, ${lost:-0} bytes definitely lost; $line"
  else
    fail=$((fail + 1))
    echo "FAIL $p (${t}s, exit $rc): ${errs:-?} errors, ${lost:-?} bytes definitely lost; log $logs/$p.log"
    tail -n 5 "$logs/$p.out"
    grep -m3 -A14 -E "Invalid|uninitialised|definitely lost in|Mismatched|free\(\)" \
      "$logs/$p.log" || true
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
