#!/usr/bin/env bash
# Issue 6 on the GPU machine, one call: the GPU tests of the device paths (CUDA memory
# and system memory through nmilocalize ! nmiregister ! featurematch, shared control
# imagery, leaks; device-resident features; the sparse NMI), then the live 4K
# benchmark (whole chain in CUDA and in system memory, with and without queues) and
# each element alone after nvh264dec.
#   here:  bash tools/gpu-suite.sh stage build-live
#          cp -r LIVE-DATA build-live/live-4k     (pipelines/live-4k.sh make)
#   there: source .gstroot/env.sh; bash tools/gpu-live.sh [BUILD] [all|tests|bench|overlay]
#          (overlay: the chain without nmiregister's overlay, with overlay=meta, with
#          overlay=draw)
#          with carry [".gstroot", "BUILD"]; logs under $OUT, short tables on stdout.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build-live}; what=${2:-all}
out=${OUT:-$PWD/gpu-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PWD/$build/fallback-lib
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u +%FT%TZ; } | tee "$out/device.txt"
rc=0
if [ "$what" != bench ] && [ "$what" != overlay ]; then
  GR_FEATURES_GPU_QUICK=1 GEOREG_TEST_SMALL=1 python3 tools/run-tests.py "$build" \
    --suite gpu --log-dir "$out/tests" cudamem_gpu features_gpu nmi_sparse_gpu | tee "$out/tests.txt"
  rc=${PIPESTATUS[0]}
  grep -h "^chain\|^shared\|^leaks\|FAIL\|^PASS\|error" "$out/tests/cudamem_gpu.log" | head -40
  grep -h "device frame\|FAIL\|check" "$out/tests/features_gpu.log" | tail -6
  tail -n 2 "$out/tests/nmi_sparse_gpu.log"
fi
if [ "$what" = overlay ]; then
  for ov in "" meta draw; do
    OVERLAY=$ov BUILD=$build timeout 150 bash pipelines/live-4k.sh bench "$build/live-4k" "$out" 2>> "$out/bench.err" | tee -a "$out/bench.txt"
  done
elif [ "$what" != tests ]; then
  BUILD=$build timeout 150 bash pipelines/live-4k.sh bench "$build/live-4k" "$out" 2> "$out/bench.err" | tee "$out/bench.txt"
  QUEUES=1 BUILD=$build timeout 100 bash pipelines/live-4k.sh bench "$build/live-4k" "$out" 2>> "$out/bench.err" | tee -a "$out/bench.txt"
  PACED=1 BUILD=$build timeout 100 bash pipelines/live-4k.sh bench "$build/live-4k" "$out" 2>> "$out/bench.err" | tee -a "$out/bench.txt"
  BUILD=$build timeout 200 bash pipelines/live-4k.sh stages "$build/live-4k" "$out" 2>> "$out/bench.err" | tee "$out/stages.txt"
  grep -m5 -i "error" "$out/bench.err"
fi
# one archive (the device tool returns a limited number of files)
(cd "$out" && tar czf logs.tgz --remove-files -- *.txt *.json *.err tests 2>/dev/null)
exit "$rc"
