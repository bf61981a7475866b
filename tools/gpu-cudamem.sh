#!/usr/bin/env bash
# issue 6 on the GPU machine: CUDA-memory tests and the live 4K benchmark, one call.
#   here:  bash tools/gpu-suite.sh stage build-cudamem   (data in build-cudamem/live-4k)
#   there: source .gstroot/env.sh; bash tools/gpu-cudamem.sh [BUILD]
#          with carry [".gstroot", "BUILD"]; logs under $OUT, a short table last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build-cudamem}
out=${OUT:-$PWD/gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PWD/$build/fallback-lib
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u +%FT%TZ; } | tee "$out/device.txt"
GST_PLUGIN_PATH_1_0=$PWD/$build/gst gst-inspect-1.0 nmilocalize > "$out/inspect.txt" 2>&1
grep -c "memory:CUDAMemory" "$out/inspect.txt" | sed 's/^/CUDAMemory caps lines in gst-inspect nmilocalize: /'
GST_PLUGIN_SYSTEM_PATH_1_0= GST_PLUGIN_PATH_1_0=$PWD/$build/gst CK_FORK=no \
  GST_REGISTRY=$(mktemp -u /tmp/reg-XXXX.bin) timeout 150 "$build/tests/test_cudamem_gpu" \
  > "$out/test_cudamem_gpu.log" 2>&1
echo "test_cudamem_gpu rc=$?"; cat "$out/test_cudamem_gpu.log" | grep -v "^$" | tail -n 12
export GST_DEBUG=georegcuda:5
BUILD=$build timeout 200 bash pipelines/live-4k.sh bench "$build/live-4k" "$out" 2> "$out/bench.err" | tee "$out/bench.txt"
echo "bench rc=${PIPESTATUS[0]}"; grep -m3 -i "context\|error" "$out/bench.err"
