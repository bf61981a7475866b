#!/usr/bin/env bash
# Soak test (issue 7): 100,000 small frames through nmilocalize ! nmiregister !
# featurematch and 10,000 point sets through pointsetparse ! landmarkshoot !
# pointsetenc, CPU backend, with resident memory (VmRSS) sampled every 1% of the run;
# each run fails when VmRSS grew by more than 1% after the warm-up (the first 10%).
# Takes 9 to 15 minutes on 2 cores; not part of CI (see docs/hardening.md).
#
#   bash tests/soak.sh [FRAMES] [POINT_SETS]     # builds ./build-vg (or $GEOREG_SOAK_BUILD)
#
# Samples: BUILD/soak/{chain,shoot}.csv (items, seconds, VmRSS kB).
# Ends with one line "N passed, N failed".
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
frames=${1:-100000}
sets=${2:-10000}
build=${GEOREG_SOAK_BUILD:-$src/build-vg}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$src" -Dcuda=disabled -Dbuildtype=debugoptimized >/dev/null ||
    { echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C "$build" >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
export GST_PLUGIN_SYSTEM_PATH_1_0=""
export GST_PLUGIN_PATH_1_0="$build/gst:$(pkg-config --variable=pluginsdir gstreamer-1.0)"
export GST_REGISTRY="$build/tests/registry-soak.bin"
out=$build/soak
mkdir -p "$out"

pass=0; fail=0
run () {
  local name=$1 n=$2
  echo "== $name: $n items ($(date -u +%FT%TZ))"
  if "$build/tests/georeg-soak" --pipeline "$name" --count "$n" --max-growth 1 \
      --csv "$out/$name.csv"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
  fi
}
run chain "$frames"
run shoot "$sets"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
