#!/usr/bin/env bash
# featurematch on the GPU machine (device tool).  Two steps:
#   here:   bash tools/gpu-featurematch.sh stage
#           (after building build-fm/ with CUDA: copies the GPU test, the accuracy test,
#           the benchmark, the libraries, the plugin, libgomp and aukerman.png into the
#           git-ignored folder .fmgpu/, about 16 MB)
#   there:  source .gstroot/env.sh; bash tools/gpu-featurematch.sh [steps]
#           with carry [".gstroot", ".fmgpu"]; steps: comma list of
#           test,accuracy,bench,memcheck (default: all, in that order).
# Full logs under $OUT (or ./gpu-out); a short table is printed last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
stage=.fmgpu

if [ "${1:-}" = stage ]; then
  build=${GEOREG_BUILD:-build-fm}
  grep -qxF "/$stage/" .git/info/exclude || echo "/$stage/" >> .git/info/exclude
  rm -rf "$stage"
  mkdir -p "$stage"/bin "$stage"/lib "$stage"/gst "$stage"/data
  cp "$build"/tests/test_matcher_gpu "$build"/tests/bench_matcher \
     "$build"/tests/test_featurematch_accuracy "$stage"/bin/
  find "$build"/kernels "$build"/gst -maxdepth 1 ! -type d \( -name 'libgeoreg-kernels.so*' \
    -o -name 'libgstgeoreg-1.0.so*' \) -exec cp -P {} "$stage"/lib/ \;
  cp "$build"/gst/libgstgeoreg.so "$stage"/gst/
  cp "$(ldconfig -p | awk '/libgomp.so.1 .*x86-64/ {print $NF; exit}')" "$stage"/lib/
  data=${GEOREG_DATA:-../shared/data}
  [ -f "$data/aukerman.png" ] && cp "$data/aukerman.png" "$stage"/data/
  du -sh "$stage"
  exit 0
fi

out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
steps=",${1:-test,accuracy,bench,memcheck},"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$PWD/$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GST_PLUGIN_SYSTEM_PATH_1_0= GST_PLUGIN_PATH_1_0=$PWD/$stage/gst
export GST_REGISTRY=$out/registry.bin CK_FORK=no
[ -f "$stage/data/aukerman.png" ] && export GEOREG_DATA=$PWD/$stage/data
bin=$stage/bin
summary=$out/summary.txt
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 || echo "nvidia-smi failed"; } | sed 's/^/device: /' | tee -a "$summary"
echo "date: $(date -u +%FT%TZ)  host: $(hostname)  cores: $(nproc)  GEOREG_DATA=${GEOREG_DATA:-unset}" | tee -a "$summary"

run_step() {    # name timeout command...
  local name=$1 t=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$t" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  note "step $name: rc=$rc ($((ms / 1000)).$(( (ms % 1000) / 100 )) s)"
  return $rc
}

if [[ $steps == *,test,* ]]; then
  run_step test 120 "$bin"/test_matcher_gpu
  grep -E "FAIL|differ|mismatch|passed|failed" "$out/test.log" | grep -vE " 0 entries differ| cuda!=cpu 0, ref mismatches 0" | head -20 | tee -a "$summary"
  grep -cE "cuda!=cpu 0, ref mismatches 0" "$out/test.log" | sed 's/^/comparisons identical: /' | tee -a "$summary"
fi
if [[ $steps == *,accuracy,* ]]; then
  GEOREG_FM_BACKEND=cuda run_step accuracy 60 "$bin"/test_featurematch_accuracy
  grep -E "^(backend|matches|homographies|pairs|FAIL|SKIP)" "$out/accuracy.log" | tee -a "$summary"
fi
if [[ $steps == *,bench,* ]]; then
  run_step bench 240 "$bin"/bench_matcher --json "$out/bench.json"
  grep -E "check|MISMATCH|differ" "$out/bench.log" | tee -a "$summary"
fi
if [[ $steps == *,memcheck,* ]]; then
  GR_MATCHER_GPU_QUICK=1 run_step memcheck 150 compute-sanitizer --tool memcheck \
    --error-exitcode 9 "$bin"/test_matcher_gpu
  grep -E "ERROR SUMMARY|passed|failed" "$out/memcheck.log" | tail -3 | tee -a "$summary"
fi
echo
[ -f "$out/bench.log" ] && sed -n '/^| case/,$p' "$out/bench.log"
