#!/usr/bin/env bash
# featurematch's GPU features (keypoints + descriptors on CUDA) and the streaming
# matcher on the GPU machine (device tool).  Two steps:
#   here:   bash tools/gpu-features.sh stage
#           (after building build-feat/ with CUDA: copies the GPU tests, the
#           benchmarks, the accuracy test, the libraries, the plugin, libgomp, pcre2 and
#           aukerman.png into the git-ignored folder .featgpu/, about 22 MB)
#   there:  source .gstroot/env.sh; bash tools/gpu-features.sh [steps]
#           with carry [".gstroot", ".featgpu"]; steps: comma list of
#           features,benchmatch,benchfeat,accuracy,matcher,memcheck (default: all, in that order).
# Full logs under $OUT (or ./gpu-out); a short summary is printed last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
stage=.featgpu

if [ "${1:-}" = stage ]; then
  build=${GEOREG_BUILD:-build-feat}
  grep -qxF "/$stage/" .git/info/exclude || echo "/$stage/" >> .git/info/exclude
  rm -rf "$stage"
  mkdir -p "$stage"/bin "$stage"/lib "$stage"/gst "$stage"/data
  cp "$build"/tests/test_features_gpu "$build"/tests/test_matcher_gpu \
     "$build"/tests/bench_features "$build"/tests/bench_matcher \
     "$build"/tests/test_featurematch_accuracy "$stage"/bin/
  find "$build"/kernels "$build"/gst -maxdepth 1 ! -type d \( -name 'libgeoreg-kernels.so*' \
    -o -name 'libgstgeoreg-1.0.so*' \) -exec cp -P {} "$stage"/lib/ \;
  cp "$build"/gst/libgstgeoreg.so "$stage"/gst/
  for l in libgomp.so.1 libpcre2-8.so.0; do
    cp "$(ldconfig -p | awk -v l="$l" '$1 == l && /x86-64/ {print $NF; exit}')" "$stage"/lib/
  done
  data=${GEOREG_DATA:-../shared/data}
  [ -f "$data/aukerman.png" ] && cp "$data/aukerman.png" "$stage"/data/
  du -sh "$stage"
  exit 0
fi

out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
steps=",${1:-features,benchmatch,benchfeat,accuracy,matcher,memcheck},"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$PWD/$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GST_PLUGIN_SYSTEM_PATH_1_0= GST_PLUGIN_PATH_1_0=$PWD/$stage/gst
export GST_REGISTRY=$out/registry.bin CK_FORK=no
data=
[ -f "$stage/data/aukerman.png" ] && data=$PWD/$stage/data
bin=$stage/bin
summary=$out/summary.txt
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 || echo "nvidia-smi failed"; } | sed 's/^/device: /' | tee -a "$summary"
echo "date: $(date -u +%FT%TZ)  host: $(hostname)  cores: $(nproc)  data: ${data:-none}" | tee -a "$summary"

run_step() {    # name timeout command...
  local name=$1 t=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$t" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  note "step $name: rc=$rc ($((ms / 1000)).$(( (ms % 1000) / 100 )) s)"
  return $rc
}

if [[ $steps == *,features,* ]]; then
  GEOREG_DATA=$data run_step features 100 "$bin"/test_features_gpu
  grep -E "FAIL|near-tie|determinism|keypoints compared|checks passed|check\(s\) failed" \
    "$out/features.log" | head -30 | tee -a "$summary"
fi
if [[ $steps == *,benchmatch,* ]]; then
  run_step benchmatch 120 "$bin"/bench_matcher --json "$out/bench_matcher.json"
  grep -E "check|MISMATCH|differ" "$out/benchmatch.log" | tee -a "$summary"
fi
if [[ $steps == *,benchfeat,* ]]; then
  run_step benchfeat 100 "$bin"/bench_features --json "$out/bench_features.json"
  grep -E "check|MISMATCH|CPU / CUDA" "$out/benchfeat.log" | tee -a "$summary"
fi
if [[ $steps == *,accuracy,* ]]; then
  GEOREG_DATA=$data GEOREG_FM_BACKEND=cuda run_step accuracy 60 \
    "$bin"/test_featurematch_accuracy
  grep -E "^(backend|matches|homographies|pairs|FAIL|SKIP)|Checks" "$out/accuracy.log" | \
    tee -a "$summary"
fi
if [[ $steps == *,matcher,* ]]; then
  GR_MATCHER_GPU_QUICK=1 run_step matcher 60 "$bin"/test_matcher_gpu
  grep -E "FAIL|incremental|passed|failed" "$out/matcher.log" | head -12 | tee -a "$summary"
fi
if [[ $steps == *,memcheck,* ]]; then
  GR_FEATURES_GPU_QUICK=1 run_step memcheck 90 compute-sanitizer --tool memcheck \
    --error-exitcode 9 "$bin"/test_features_gpu
  grep -E "ERROR SUMMARY|passed|failed" "$out/memcheck.log" | tail -3 | tee -a "$summary"
fi
echo
for f in benchfeat benchmatch; do
  [ -f "$out/$f.log" ] && sed -n '/^| /,$p' "$out/$f.log"
done
