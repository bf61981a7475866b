#!/usr/bin/env bash
# The whole GPU test suite (and the data suite, which then runs on CUDA) on the GPU
# machine of the device tool, which has no GStreamer, no GDAL and a meson that cannot
# read our build folders.  Two steps:
#   here:   bash tools/gpu-suite.sh stage [BUILD]
#           configures BUILD (default build-gpu) with CUDA and without GDAL if needed,
#           builds it, and puts beside it what the GPU machine lacks: libraries
#           (BUILD/fallback-lib) and the orthomosaic (BUILD/georeg-data).  Object files
#           are moved to BUILD.objs so the carry stays under 64 MiB; `restore` puts
#           them back (or just rebuild).
#   there:  source .gstroot/env.sh; bash tools/gpu-suite.sh run [BUILD] [STEPS]
#           with carry [".gstroot", "BUILD"]; STEPS: comma list of tests, memcheck,
#           racecheck (default all); logs under $OUT, a short table last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmd=${1:-}; build=${2:-build-gpu}

case "$cmd" in
stage)
  export PATH=/usr/local/cuda/bin:$PATH
  [ -f "$build/build.ninja" ] || meson setup "$build" -Dcuda=enabled -Dgdal=disabled || exit 1
  [ -d "$build.objs" ] && bash "$0" restore "$build"
  ninja -C "$build" || exit 1
  mkdir -p "$build/fallback-lib" "$build/georeg-data"
  for lib in libgomp.so.1 libpng16.so.16 libjpeg.so.62 libglib-2.0.so.0 libpcre2-8.so.0 libffi.so.8; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" "$build/fallback-lib/"
  done
  data=${GEOREG_DATA:-../shared/data}
  [ -f "$data/aukerman.png" ] && cp "$data/aukerman.png" "$build/georeg-data/"
  # objects and static archives are not needed to run: keep them out of the carry
  mkdir -p "$build.objs"
  (cd "$build" && find . \( -name '*.o' -o -name '*.a' \) -print0 | tar -cf - --null -T - |
     tar -C "../$build.objs" -xpf - && find . \( -name '*.o' -o -name '*.a' \) -delete)
  du -sh "$build" .gstroot 2>/dev/null
  ;;
restore)
  [ -d "$build.objs" ] && tar -C "$build.objs" -cf - . | tar -C "$build" -xpf - \
    && rm -rf "$build.objs"
  ;;
run)
  # steps: comma list of tests, memcheck, racecheck (default all three)
  steps=",${3:-tests,memcheck,racecheck},"
  out=${OUT:-$PWD/gpu-out}; mkdir -p "$out"
  export PATH=/usr/local/cuda/bin:$PATH
  export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PWD/$build/fallback-lib
  [ -f "$build/georeg-data/aukerman.png" ] && export GEOREG_DATA=$PWD/$build/georeg-data
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +%FT%TZ; } | tee "$out/device.txt"
  rc=0
  if [[ $steps == *,tests,* ]]; then
    python3 tools/run-tests.py "$build" --suite gpu --suite data --log-dir "$out/tests" | tee "$out/tests.txt"
    rc=${PIPESTATUS[0]}
    (cd "$out" && tar -czf test-logs.tar.gz tests && rm -rf tests)
  fi
  # compute-sanitizer over every GPU test binary, with the plugin findable: memcheck
  # (device memory errors and leaks) and racecheck (shared-memory hazards), on each
  # test's small subset, four at a time (the GPU has room; the host has the cores)
  export GST_PLUGIN_SYSTEM_PATH_1_0= GST_PLUGIN_PATH_1_0=$PWD/$build/gst${GST_PLUGIN_SYSTEM_PATH:+:$GST_PLUGIN_SYSTEM_PATH}
  export LD_LIBRARY_PATH=$PWD/$build/kernels:$PWD/$build/gst:$LD_LIBRARY_PATH CK_FORK=no
  : > "$out/sanitizers.txt"
  sanitize () {   # tool test-binary
    local tool=$1 t=$2 n subset=quick opts=()
    n=$(basename "$t")
    [ "$tool" = racecheck ] && [ "$n" = test_nmi_dense_gpu ] && subset=race
    [ "$tool" = memcheck ] && opts=(--leak-check full)
    [ "$tool" = racecheck ] && opts=(--racecheck-report all)
    local t0=$SECONDS
    # from the build folder, as meson runs the tests (some find the plugin there)
    (cd "$(dirname "$t")/.." && GEOREG_TEST_SUBSET=$subset GEOREG_TEST_SMALL=1 GEOREG_TEST_QUICK=1 \
      timeout "${SANITIZER_TIMEOUT:-300}" compute-sanitizer --tool "$tool" "${opts[@]}" \
      --error-exitcode 9 "tests/$n" > "$out/$tool-$n.log" 2>&1)
    local r=$?
    echo "$tool $n: rc=$r ($((SECONDS - t0)) s) $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool-$n.log" | tail -n 1) | $(grep -E '^(PASS|FAIL|SKIP)' "$out/$tool-$n.log" | tail -n 1)"
  }
  export -f sanitize; export out
  jobs=()
  for tool in memcheck racecheck; do
    [[ $steps == *,$tool,* ]] || continue
    for t in "$build"/tests/test_*_gpu; do
      # SANITIZER_TESTS: a space list of test names to limit the runs to
      [ -n "${SANITIZER_TESTS:-}" ] && [[ " $SANITIZER_TESTS " != *" $(basename "$t") "* ]] && continue
      jobs+=("$tool $PWD/$t")
    done
  done
  if [ ${#jobs[@]} -gt 0 ]; then
    printf '%s\n' "${jobs[@]}" | xargs -P "${SANITIZER_JOBS:-4}" -I{} bash -c 'sanitize {}' |
      sort >> "$out/sanitizers.txt"
  fi
  # the device tool brings back few files: the logs travel as one archive
  (cd "$out" && ls ./*check-*.log >/dev/null 2>&1 && tar -czf sanitizer-logs.tar.gz ./*check-*.log && rm -f ./*check-*.log)
  echo; cat "$out/device.txt"; [ -f "$out/tests.txt" ] && tail -n 1 "$out/tests.txt"
  cat "$out/sanitizers.txt"
  # 77: the test skipped itself
  grep -vE " rc=(0|77) " "$out/sanitizers.txt" | grep -q . && rc=1
  exit "$rc"
  ;;
*)
  echo "usage: $0 stage|restore|run [BUILD]" >&2; exit 2 ;;
esac
