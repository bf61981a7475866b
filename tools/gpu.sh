#!/usr/bin/env bash
# The one GPU script: stages a CUDA build here, then on the GPU machine of the device
# tool runs the GPU test suite, compute-sanitizer and the benchmarks, with full logs
# under $OUT and a short table printed last.  docs/gpu-tests.md explains it.
#
# Here (a CPU machine with the CUDA toolkit, no GPU):
#   bash tools/gpu.sh stage [BUILD]     .gstroot/ (the GStreamer runtime the GPU machine
#                                       lacks) if missing, BUILD (default build-gpu)
#                                       configured with CUDA (sm_90: H100/H200), without
#                                       GDAL, built; beside it the libraries the GPU
#                                       machine lacks (BUILD/fallback-lib), the
#                                       orthomosaic (BUILD/georeg-data) and the live 4K
#                                       stream (BUILD/live-4k); object files moved to
#                                       BUILD.objs so that the carry stays under 64 MiB
#   bash tools/gpu.sh restore [BUILD]   puts the object files back (or just rebuild)
# There (device tool: carry [".gstroot", "BUILD"], command starting with
# "source .gstroot/env.sh;"):
#   bash tools/gpu.sh suite [BUILD]     the gpu and data suites (tools/run-tests.py:
#                                       the machine's meson cannot read our build folder)
#   bash tools/gpu.sh sanitize [BUILD] [memcheck,racecheck]
#                                       compute-sanitizer over every GPU test binary, on
#                                       each test's small subset, several at a time
#   bash tools/gpu.sh bench [BUILD]     the headline benchmarks, CUDA (dense NMI, sparse
#                                       NMI, matcher, features, landmarkshoot)
#   bash tools/gpu.sh live [BUILD]      the live 4K chain (pipelines/live-4k.sh bench)
#   bash tools/gpu.sh nccl [BUILD]      the NCCL matcher's test and benchmark over every
#                                       GPU of the host (~150 s; docs/multi-gpu.md)
#   bash tools/gpu.sh multistream [BUILD]  4 and 8 live 4K streams placed over every GPU
#                                       (cuda-device-id=-1; ~150 s)
#   bash tools/gpu.sh multigpu [BUILD]  both (a host with several GPUs: nvidia-h100-x2)
#   bash tools/gpu.sh all [BUILD]       suite and sanitize side by side, then bench, then
#                                       live: about 8 minutes on an H100 host with 16
#                                       cores, bounded by GPU_BUDGET_S (default 560 s)
#                                       so that it ends inside the device tool's 10 min
# Environment: OUT (default ./gpu-out), GPU_BUDGET_S, SANITIZER_JOBS (default 6),
# SANITIZER_TIMEOUT (default 240 s a binary), SANITIZER_TESTS (space list of binaries,
# e.g. "test_matcher_gpu test_shoot_gpu").  Exit status: 0 when every step passed.
# The same sanitizers from meson, where meson can read the build folder:
#   meson test -C BUILD --setup memcheck --suite gpu   (and --setup racecheck)
# SPDX-License-Identifier: LGPL-2.1-or-later
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
root=$PWD
cmd=${1:-}; build=${2:-build-gpu}
out=${OUT:-$root/gpu-out}
export PATH=/usr/local/cuda/bin:$PATH

# ---------------------------------------------------------------------------- here

stage () {
  if [ ! -f .gstroot/env.sh ]; then
    local mk
    for mk in "${MAKE_GSTROOT:-}" "$root/../shared/device/make-gstroot.sh" \
        /work/shared/device/make-gstroot.sh; do
      [ -n "$mk" ] && [ -x "$mk" ] && break
    done
    [ -x "$mk" ] || { echo "make-gstroot.sh not found: set MAKE_GSTROOT" >&2; return 1; }
    "$mk" || { echo "make-gstroot.sh failed (apt-get update once first?)" >&2; return 1; }
  fi
  [ -f "$build/build.ninja" ] || meson setup "$build" -Dcuda=enabled -Dgdal=disabled \
    -Dbuildtype=release "-Dcuda-gencode=['${GPU_GENCODE:-arch=compute_90,code=sm_90}']" ||
    return 1
  [ -d "$build.objs" ] && restore
  ninja -C "$build" || return 1
  mkdir -p "$build/fallback-lib" "$build/georeg-data"
  local lib
  for lib in libgomp.so.1 libpng16.so.16 libjpeg.so.62 libglib-2.0.so.0 libpcre2-8.so.0 \
      libffi.so.8 libexif.so.12 libexempi.so.8 libyaml-0.so.2; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" \
      "$build/fallback-lib/"
  done
  local data=${GEOREG_DATA:-$root/../shared/data}
  [ -f "$data/aukerman.png" ] || data=/work/shared/data
  [ -f "$data/aukerman.png" ] && cp "$data/aukerman.png" "$build/georeg-data/"
  # the live 4K stream (x264enc here; the GPU machine decodes it with nvh264dec)
  if [ ! -d "$build/live-4k" ] && [ -z "${GPU_NO_LIVE:-}" ]; then
    BUILD=$build bash pipelines/live-4k.sh make "$build/live-4k" > "$build/live-4k.log" 2>&1 ||
      { echo "live 4K data not made (see $build/live-4k.log); 'live' will skip"; rm -rf "$build/live-4k"; }
  fi
  # objects and static archives are not needed to run: keep them out of the carry
  mkdir -p "$build.objs"
  (cd "$build" && find . \( -name '*.o' -o -name '*.a' \) -print0 | tar -cf - --null -T - |
     tar -C "../$build.objs" -xpf - && find . \( -name '*.o' -o -name '*.a' \) -delete)
  du -sh "$build" .gstroot 2>/dev/null
  local mib
  mib=$(du -scm "$build" .gstroot 2>/dev/null | awk 'END {print $1}')
  [ "${mib:-0}" -gt 60 ] && echo "WARNING: the carry is ${mib} MiB (the device tool takes" \
    "64 MiB): rm -rf $build/live-4k (or stage with GPU_NO_LIVE=1)"
  echo "then: run with carry [\".gstroot\", \"$build\"] and" \
    "\"source .gstroot/env.sh; bash tools/gpu.sh all $build\""
}

restore () {
  [ -d "$build.objs" ] && tar -C "$build.objs" -cf - . | tar -C "$build" -xpf - &&
    rm -rf "$build.objs"
  return 0
}

# -------------------------------------------------------------------------- there

setup_env () {
  mkdir -p "$out"
  export LD_LIBRARY_PATH=$root/$build/kernels:$root/$build/gst${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$root/$build/fallback-lib
  [ -f "$build/georeg-data/aukerman.png" ] && export GEOREG_DATA=$root/$build/georeg-data
  export GST_PLUGIN_SYSTEM_PATH_1_0=
  export GST_PLUGIN_PATH_1_0=$root/$build/gst${GST_PLUGIN_SYSTEM_PATH:+:$GST_PLUGIN_SYSTEM_PATH}
  export GST_REGISTRY=$out/registry.bin CK_FORK=no
  nccl_path                    # the NCCL matcher's test in the gpu suite needs it too
  [ -f "$out/device.txt" ] || { nvidia-smi --query-gpu=name,driver_version,memory.total \
      --format=csv,noheader 2>&1 | head -n 1; echo "cores: $(nproc)  $(date -u +%FT%TZ)"; } \
      > "$out/device.txt"
  touch "$out/table.txt"
}

# note NAME RC SECONDS DETAIL: one row of the short table
note () {
  local verdict=pass
  [ "$2" = 0 ] || verdict="FAIL (rc $2)"
  printf '| %-34s | %-13s | %5s s | %s\n' "$1" "$verdict" "$3" "$4" | tee -a "$out/table.txt"
}

# bounded STEP_SECONDS: the smaller of STEP_SECONDS and what is left of GPU_BUDGET_S
bounded () {
  local left=$(( ${deadline:-$(( SECONDS + 100000 ))} - SECONDS ))
  [ "$left" -lt "$1" ] && echo $(( left > 5 ? left : 5 )) || echo "$1"
}

suite () {
  setup_env
  local t0=$SECONDS
  timeout "$(bounded 330)" python3 tools/run-tests.py "$build" --suite gpu --suite data \
    --log-dir "$out/suite" > "$out/suite.txt" 2>&1
  local rc=$?
  note "gpu + data suites" "$rc" $((SECONDS - t0)) "$(tail -n 1 "$out/suite.txt")"
  grep -E ' (FAIL|TIMEOUT) ' "$out/suite.txt" | sed 's/^/    /' | tee -a "$out/table.txt"
  return "$rc"
}

# racecheck of nmiregister's device path (register_cuda: value range in shared memory,
# levels, resampling, gathering; frame_cuda; the device keypoints; sparse NMI) through
# 4 synthetic frames: the element tests do not finish under racecheck, this does
race_pipeline () {
  local d
  d=$(mktemp -d)
  "$build/pipelines/georeg-synth" control --out "$d/control.png" --width 800 --height 600 \
      --seed 3 > /dev/null &&
    "$build/pipelines/georeg-synth" frames --control "$d/control.png" --out "$d/f" --count 4 \
      --width 320 --height 240 --rotation-max 3 --format gray8 --seed 4 > /dev/null &&
    compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 \
      gst-launch-1.0 -q multifilesrc location="$d/f/frame_%04d.png" index=0 stop-index=3 \
      caps=image/png,framerate=1/1 ! pngdec ! nmilocalize control-location="$d/control.png" \
      frame-scale=0.5 control-scale=0.5 backend=cpu ! \
      nmiregister control-location="$d/control.png" max-keypoints=200 backend=cuda ! fakesink
  local rc=$?
  rm -rf "$d"
  return "$rc"
}

# one compute-sanitizer run: TOOL BINARY (from the build folder, as meson runs tests)
sanitize_one () {
  local tool=$1 n=$2 subset=quick opts=()
  if [ "$n" = nmiregister-pipeline ]; then
    local t0=$SECONDS
    timeout "$SANITIZER_TIMEOUT" bash -c race_pipeline \
      > "$out/sanitize/$tool-$n.log" 2>&1
    echo "$tool $n rc=$? $((SECONDS - t0)) $(grep -h 'RACECHECK SUMMARY' \
      "$out/sanitize/$tool-$n.log" | tail -n 1)"
    return
  fi
  [ "$tool" = racecheck ] && [ "$n" = test_nmi_dense_gpu ] && subset=race
  [ "$tool" = memcheck ] && opts=(--leak-check full)
  [ "$tool" = racecheck ] && opts=(--racecheck-report all)
  local t0=$SECONDS
  (cd "$build" && GEOREG_TEST_SUBSET=$subset GEOREG_TEST_SMALL=1 GEOREG_TEST_QUICK=1 \
    timeout "$SANITIZER_TIMEOUT" compute-sanitizer --tool "$tool" "${opts[@]}" \
    --error-exitcode 9 "tests/$n" > "$out/sanitize/$tool-$n.log" 2>&1)
  local rc=$?
  # 77: the test skipped itself (no device): not a pass
  echo "$tool $n rc=$rc $((SECONDS - t0)) $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' \
    "$out/sanitize/$tool-$n.log" | tail -n 1)"
}

sanitize () {
  setup_env
  local tools=",${1:-memcheck,racecheck},"
  mkdir -p "$out/sanitize"
  export -f sanitize_one race_pipeline; export build out
  SANITIZER_TIMEOUT=$(bounded "${SANITIZER_TIMEOUT:-240}")
  export SANITIZER_TIMEOUT
  local jobs=() tool t n
  for tool in memcheck racecheck; do
    [[ $tools == *,$tool,* ]] || continue
    for t in "$build"/tests/test_*_gpu; do
      n=$(basename "$t")
      [ -n "${SANITIZER_TESTS:-}" ] && [[ " $SANITIZER_TESTS " != *" $n "* ]] && continue
      # racecheck over the element pipelines (cudamem, cuda_oom) does not finish in
      # minutes: their kernels are the ones the other binaries check directly
      [ "$tool" = racecheck ] && [[ $n == test_cudamem_gpu || $n == test_cuda_oom_gpu ]] &&
        continue
      jobs+=("$tool $n")
    done
  done
  [[ $tools == *,racecheck,* ]] && [ -z "${SANITIZER_TESTS:-}" ] &&
    jobs+=("racecheck nmiregister-pipeline")
  local t0=$SECONDS rc=0
  printf '%s\n' "${jobs[@]}" | xargs -P "${SANITIZER_JOBS:-6}" -L 1 bash -c 'sanitize_one "$@"' _ |
    sort > "$out/sanitize.txt"
  while read -r tool n r secs summary; do
    local code=${r#rc=}
    note "$tool $n" "$code" "$secs" "$summary"
    [ "$code" = 0 ] || rc=1
  done < "$out/sanitize.txt"
  [ ${#jobs[@]} -gt 0 ] || { note "sanitize" 1 0 "no GPU test binaries in $build/tests"; rc=1; }
  (cd "$out" && tar -czf sanitize-logs.tar.gz sanitize && rm -rf sanitize)
  echo "sanitizers: $((SECONDS - t0)) s" >> "$out/table.txt"
  return "$rc"
}

# bench_step NAME TIMEOUT LOG COMMAND...: one benchmark, its rc and time in the table
bench_step () {
  local name=$1 to=$2 log=$3; shift 3
  local t0=$SECONDS
  echo "command: $*" > "$out/bench/$log"
  timeout "$(bounded "$to")" "$@" >> "$out/bench/$log" 2>&1
  local rc=$?
  note "bench $name" "$rc" $((SECONDS - t0)) "log bench/$log"
  return "$rc"
}

bench () {
  setup_env
  mkdir -p "$out/bench"
  local t=$build/tests rc=0
  bench_step "nmi_dense (terrain)" 90 nmi_dense.log env GEOREG_BENCH_CONTENT=terrain \
    GEOREG_BENCH_CPU=none "$t/bench_nmi_dense" "$out/bench/nmi_dense.json" || rc=1
  bench_step "nmi_sparse" 90 nmi_sparse.log "$t/bench_nmi_sparse" --reps 10 --no-cpu \
    --json "$out/bench/nmi_sparse.json" || rc=1
  bench_step "matcher" 120 matcher.log "$t/bench_matcher" --no-cpu \
    --json "$out/bench/matcher.json" || rc=1
  bench_step "features" 60 features.log "$t/bench_features" --quick \
    --json "$out/bench/features.json" || rc=1
  bench_step "shoot (N = 1847)" 90 shoot.log env GEOREG_BENCH_SIZES=1847 \
    GEOREG_BENCH_BACKENDS=cuda "$t/bench_shoot" "$out/bench/shoot.json" || rc=1
  return "$rc"
}

live () {
  setup_env
  if [ ! -d "$build/live-4k" ]; then
    note "live 4K" 0 0 "skipped: no $build/live-4k (tools/gpu.sh stage makes it)"
    return 0
  fi
  mkdir -p "$out/live"
  local t0=$SECONDS
  BUILD=$build timeout "$(bounded 120)" bash pipelines/live-4k.sh bench "$build/live-4k" \
    "$out/live" > "$out/live.txt" 2> "$out/live/bench.err"
  local rc=$?
  note "live 4K chain" "$rc" $((SECONDS - t0)) "$(grep -m1 -E 'fps' "$out/live.txt")"
  return "$rc"
}

# ---- issue 16 (docs/multi-gpu.md): several GPUs of one host
# multistream: N = 4 and 8 concurrent live 4K streams, each its own pipeline placed by
# cuda-device-id=-1 (pipelines/multi-stream.sh), per-stream fps / p99 and the streams
# per device; bounded 150 s
multistream () {
  setup_env
  if [ ! -d "$build/live-4k" ]; then
    note "multistream" 0 0 "skipped: no $build/live-4k (tools/gpu.sh stage makes it)"
    return 0
  fi
  mkdir -p "$out/multistream"
  local t0=$SECONDS
  BUILD=$build STREAMS="${STREAMS:-4 8}" timeout "$(bounded 150)" \
    bash pipelines/multi-stream.sh "$build/live-4k" "$out/multistream" \
    > "$out/multistream.txt" 2> "$out/multistream/err.txt"
  local rc=$?
  note "multistream ($(nvidia-smi -L 2>/dev/null | wc -l) GPUs)" "$rc" $((SECONDS - t0)) \
    "$(grep -E '^[0-9]+ streams' "$out/multistream.txt" | tr '\n' ';')"
  return "$rc"
}

# nccl: the NCCL matcher's gpu test (1 rank == one GPU, every GPU == one GPU) and its
# benchmark (m = 4000 x 500, k = 64, sparse: 1 GPU vs all); bounded 150 s.  libnccl.so.2
# is not carried (218 MB): the GPU machine's own copy (its CUDA toolkit's, or the
# nvidia-nccl wheel beside PyTorch) is put on LD_LIBRARY_PATH
# the machine's libnccl.so.2 on LD_LIBRARY_PATH: its CUDA toolkit's, or the
# nvidia-nccl wheel beside PyTorch (NCCL_LIB says which, "" = none found)
nccl_path () {
  [ -n "${NCCL_LIB+x}" ] && return 0
  local d
  NCCL_LIB=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib \
      "$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)"; do
    [ -n "$d" ] && [ -f "$d/libnccl.so.2" ] && { NCCL_LIB=$d; break; }
  done
  [ -z "$NCCL_LIB" ] && ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 ' && NCCL_LIB=system
  [ -n "$NCCL_LIB" ] && [ "$NCCL_LIB" != system ] &&
    export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$NCCL_LIB
  export NCCL_LIB NCCL_NVLS_ENABLE=0    # never NVLink multicast on the shared hosts
}

nccl () {
  setup_env
  local t=$build/tests lib=$NCCL_LIB
  if [ ! -x "$t/test_matcher_nccl_gpu" ]; then
    note "nccl" 1 0 "no $t/test_matcher_nccl_gpu (build without NCCL?)"
    return 1
  fi
  if [ -z "$lib" ]; then
    note "nccl" 1 0 "libnccl.so.2 not found on this machine"
    return 1
  fi
  mkdir -p "$out/bench"
  local t0=$SECONDS rc=0
  timeout "$(bounded 60)" "$t/test_matcher_nccl_gpu" > "$out/nccl-test.txt" 2>&1 || rc=1
  note "nccl test (libnccl: $lib)" "$rc" $((SECONDS - t0)) \
    "$(grep -cE 'identical' "$out/nccl-test.txt") identical, $(tail -n 1 "$out/nccl-test.txt")"
  bench_step "matcher_nccl 4000x500 k64" 110 matcher_nccl.log "$t/bench_matcher_nccl" \
    4000 500 64 2 || rc=1
  grep -E '^(single|NCCL|speed-up)' "$out/bench/matcher_nccl.log" | tee -a "$out/table.txt"
  return "$rc"
}

table () {
  echo
  cat "$out/device.txt"
  printf '| %-34s | %-13s | %7s | %s\n' step verdict time detail
  cat "$out/table.txt"
  [ -f "$out/live.txt" ] && grep -E 'fps|p99' "$out/live.txt" | head -n 8
  for f in "$out"/bench/*.log; do
    [ -f "$f" ] && grep -hE '^\| ' "$f" | head -n 12
  done
}

case "$cmd" in
  stage) stage ;;
  restore) restore ;;
  suite) suite; rc=$?; table; exit "$rc" ;;
  sanitize) sanitize "${3:-}"; rc=$?; table; exit "$rc" ;;
  bench) bench; rc=$?; table; exit "$rc" ;;
  live) live; rc=$?; table; exit "$rc" ;;
  multistream) multistream; rc=$?; table; exit "$rc" ;;
  nccl) nccl; rc=$?; table; exit "$rc" ;;
  multigpu) deadline=$(( SECONDS + ${GPU_BUDGET_S:-320} )); setup_env; : > "$out/table.txt"
    nccl; r1=$?; multistream; r2=$?; table; [ $((r1 + r2)) = 0 ]; exit $? ;;
  all)
    deadline=$(( SECONDS + ${GPU_BUDGET_S:-560} ))
    setup_env
    : > "$out/table.txt"
    # correctness first, side by side (the sanitizers mostly wait on themselves), then
    # the timings alone on the device
    suite & p1=$!
    sanitize & p2=$!
    wait "$p1"; r1=$?
    wait "$p2"; r2=$?
    bench; r3=$?
    live; r4=$?
    table
    [ $((r1 + r2 + r3 + r4)) = 0 ]; exit $? ;;
  *)
    sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'
    exit 2 ;;
esac
