#!/usr/bin/env bash
# landmarkshoot on the GPU machine: the GPU test, the element tests (their pipelines run
# with backend auto, i.e. CUDA there), the benchmark (CUDA and CPU), the PyTorch
# comparison and compute-sanitizer memcheck.  Builds nothing.
#   usage (repository root): source .gstroot/env.sh; bash tools/gpu-run-shoot.sh [DIR [STEPS]]
# STEPS: comma list of tests,quick-variants,elements,tune,bench,torch,memcheck (in that
# order; default tests,elements,bench,torch,memcheck).  GEOREG_BENCH_BACKENDS=cuda skips
# the CPU part of the benchmark.
# DIR (default build-shoot-carry) holds what a CUDA build made, in the build folder's
# layout: tests/{test_shoot_gpu,test_landmarkshoot,bench_shoot}, gst/libgstgeoreg*.so*,
# kernels/libgeoreg-kernels.so*,
# and fallback-lib/libgomp.so.1 (used only if the machine has none).  Copying these
# instead of the whole build folder keeps the carried tree under the device tool's
# limit.  Logs go to $OUT (at most 8 files); a short table is printed last.
# Here, to make DIR from a CUDA build folder (e.g. build-shoot):
#   bash tools/gpu-run-shoot.sh --make-carry build-shoot [build-shoot-carry]
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${1:-}" = "--make-carry" ]; then
  src=${2:?build folder}; dst=${3:-build-shoot-carry}
  rm -rf "$dst"; mkdir -p "$dst/tests" "$dst/gst" "$dst/kernels" "$dst/fallback-lib"
  cp "$src"/tests/{test_shoot_gpu,test_landmarkshoot,bench_shoot} "$dst/tests/" &&
  cp -P "$src"/gst/libgstgeoreg.so "$src"/gst/libgstgeoreg-1.0.so* "$dst/gst/" 2>/dev/null
  cp -P "$src"/kernels/libgeoreg-kernels.so* "$dst/kernels/" 2>/dev/null
  rm -rf "$dst"/gst/*.p "$dst"/kernels/*.p
  cp -L "$(gcc -print-file-name=libgomp.so.1)" "$dst/fallback-lib/"
  du -sh "$dst"
  exit 0
fi
B=$PWD/${1:-build-shoot-carry}
STEPS=",${2:-tests,elements,bench,torch,memcheck},"
OUT=${OUT:-/tmp/shoot-out}
mkdir -p "$OUT"
DATA=/tmp/shoot-data
mkdir -p "$DATA"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$B/fallback-lib
S=$OUT/summary.txt
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total \
    --format=csv,noheader; echo "cores: $(nproc)"; } > "$S" 2>&1

step () {  # name, timeout, log, command...
  local name=$1 to=$2 log=$3; shift 3
  local t0=$(date +%s)
  timeout "$to" "$@" > "$log" 2>&1
  local rc=$?
  echo "$name: rc=$rc, $(( $(date +%s) - t0 )) s" | tee -a "$S"
}

has () { [[ $STEPS == *,$1,* ]]; }
has tests && step "test_shoot_gpu" 240 "$OUT/tests.log" "$B/tests/test_shoot_gpu"
variants () {  # the quick GPU test over the kernel variants other than the default
  for v in "0 1 32" "0 2 64" "1 1 64" "1 2 32" "2 2 32" "2 1 128"; do
    set -- $v
    echo "== GEOREG_SHOOT_TILED=$1 GEOREG_SHOOT_RPT=$2 GEOREG_SHOOT_TPR=$3"
    timeout 60 env GEOREG_TEST_QUICK=1 GEOREG_SHOOT_TILED=$1 GEOREG_SHOOT_RPT=$2 \
      GEOREG_SHOOT_TPR=$3 "$B/tests/test_shoot_gpu" || echo "VARIANT FAILED"
  done
}
if has quick-variants; then
  t0=$(date +%s)
  variants > "$OUT/variants.log" 2>&1
  echo "variants: $(grep -c 'all checks passed' "$OUT/variants.log") of 6 passed, \
$(( $(date +%s) - t0 )) s" | tee -a "$S"
fi
has elements && step "test_landmarkshoot" 120 "$OUT/elements.log" env GST_PLUGIN_SYSTEM_PATH_1_0= \
  GST_PLUGIN_PATH_1_0="$B/gst" GST_REGISTRY=/tmp/georeg-shoot-reg.bin CK_FORK=no \
  GST_DEBUG=landmarkshoot:4 "$B/tests/test_landmarkshoot"
has tune && step "tune" 240 "$OUT/tune.log" \
  env GEOREG_BENCH_TUNE=${GEOREG_BENCH_TUNE:-500,1847,5000,20000} "$B/tests/bench_shoot"
has bench && step "bench" 300 "$OUT/bench.log" \
  env GEOREG_BENCH_DUMP="$DATA" "$B/tests/bench_shoot" /tmp/bench_shoot.json
has torch && step "pytorch" 240 "$OUT/torch.log" env PYTHONUNBUFFERED=1 \
  python3 tools/bench_shoot_torch.py --dir "$DATA"
has memcheck && step "memcheck (quick)" 150 "$OUT/memcheck.log" \
  env GEOREG_TEST_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$B/tests/test_shoot_gpu"

show () { [ -f "$2" ] && { echo "---- $1"; eval "$3" < "$2"; }; }
show test_shoot_gpu "$OUT/tests.log" "tail -32"
show variants "$OUT/variants.log" "grep -E '==|all checks|FAIL'"
show elements "$OUT/elements.log" "grep -E 'Checks|registering on|FAIL|fail' | tail -6"
show memcheck "$OUT/memcheck.log" "tail -3"
show tune "$OUT/tune.log" "cat"
show bench "$OUT/bench.log" "grep -E '^\||device'"
show pytorch "$OUT/torch.log" "grep -E '^\|'"
echo "---- summary"; cat "$S"
