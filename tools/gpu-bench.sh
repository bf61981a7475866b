#!/usr/bin/env bash
# The headline GPU benchmarks in one run, for a device the earlier runs did not cover
# (docs/benchmarks.md): sparse NMI (the seed's 58,000 keypoints and the 4K frame),
# the matcher (a), (b), (c), and landmarkshoot on the seed problem (N = 1847), CUDA
# only.  Optionally racecheck on the kernels the sanitizer loop of gpu-suite.sh
# cannot reach in time: the shooting kernels (quick subset of test_shoot_gpu) and
# nmiregister's device path (register_cuda, frame_cuda) through a short pipeline.
#   here:   bash tools/gpu-suite.sh stage build-gpu
#   there:  source .gstroot/env.sh; bash tools/gpu-bench.sh build-gpu [bench,race]
# Logs under $OUT; a short table last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build-gpu}; steps=",${2:-bench,race},"
out=${OUT:-$PWD/gpu-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$PWD/$build/kernels:$PWD/$build/gst:${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PWD/$build/fallback-lib
[ -f "$build/georeg-data/aukerman.png" ] && export GEOREG_DATA=$PWD/$build/georeg-data
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u +%FT%TZ; } > "$out/device.txt"
t=$PWD/$build/tests
: > "$out/summary.txt"
note () { echo "$*" | tee -a "$out/summary.txt"; }

if [[ $steps == *,bench,* ]]; then
  timeout 240 "$t/bench_nmi_sparse" --reps 10 --no-cpu --json "$out/sparse.json" > "$out/sparse.log" 2>&1
  note "bench_nmi_sparse: rc=$?"
  timeout 240 "$t/bench_matcher" --no-cpu --json "$out/matcher.json" > "$out/matcher.log" 2>&1
  note "bench_matcher: rc=$?"
  GEOREG_BENCH_SIZES=1847 GEOREG_BENCH_BACKENDS=cuda timeout 120 "$t/bench_shoot" \
    "$out/shoot.json" > "$out/shoot.log" 2>&1
  note "bench_shoot (N = 1847): rc=$?"
fi

if [[ $steps == *,race,* ]]; then
  export GST_PLUGIN_SYSTEM_PATH_1_0= GST_PLUGIN_PATH_1_0=$PWD/$build/gst${GST_PLUGIN_SYSTEM_PATH:+:$GST_PLUGIN_SYSTEM_PATH}
  (cd "$build" && GEOREG_TEST_QUICK=1 timeout 300 compute-sanitizer --tool racecheck \
     --racecheck-report all --error-exitcode 9 tests/test_shoot_gpu > "$out/race-shoot.log" 2>&1)
  note "racecheck test_shoot_gpu (quick): rc=$? $(grep -h 'RACECHECK SUMMARY' "$out/race-shoot.log" | tail -n 1)"
  # nmiregister's device path on system-memory frames (uploaded, ranged, quantized,
  # keypoints, templates resampled and gathered on the device), 4 frames; nmilocalize
  # on the CPU (the dense kernel under racecheck takes minutes a frame: its own test's
  # race subset covers it)
  d=$(mktemp -d)
  "$build/pipelines/georeg-synth" control --out "$d/control.png" --width 800 --height 600 --seed 3 > /dev/null &&
    "$build/pipelines/georeg-synth" frames --control "$d/control.png" --out "$d/f" --count 4 \
      --width 320 --height 240 --rotation-max 3 --format gray8 --seed 4 > /dev/null
  timeout 300 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 \
    gst-launch-1.0 -q multifilesrc location="$d/f/frame_%04d.png" index=0 stop-index=3 \
      caps=image/png,framerate=1/1 ! pngdec ! nmilocalize control-location="$d/control.png" \
      frame-scale=0.5 control-scale=0.5 backend=cpu ! nmiregister control-location="$d/control.png" \
      max-keypoints=200 backend=cuda ! fakesink \
      > "$out/race-pipeline.log" 2>&1
  note "racecheck nmilocalize (cpu) ! nmiregister (cuda), 4 frames: rc=$? $(grep -h 'RACECHECK SUMMARY' "$out/race-pipeline.log" | tail -n 1)"
  rm -rf "$d"
fi

echo; cat "$out/device.txt"
grep -hE "^\| |ms|fit" "$out/sparse.log" "$out/shoot.log" 2>/dev/null | head -n 40
grep -hE "^\(|^case|kernel" "$out/matcher.log" 2>/dev/null | head -n 20
cat "$out/summary.txt"
