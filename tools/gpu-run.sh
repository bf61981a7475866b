#!/usr/bin/env bash
# The one script run on the GPU machine (device tool): builds nothing.  Runs the GPU
# test suite, compute-sanitizer (memcheck on the quick subset, racecheck on a small
# case) over the dense NMI GPU test, and the dense NMI benchmark.  Full logs go to
# $OUT (or ./gpu-out); a short table is printed last.
#   usage (from the repository root, after building build-gpu/ here with CUDA):
#     [source .gstroot/env.sh;] bash tools/gpu-run.sh [steps]
#   The dense NMI test and benchmark need no GStreamer: carrying
#   build-gpu/tests/{test_nmi_dense_gpu,bench_nmi_dense}, build-gpu/fallback-lib
#   (libgomp, libpng16, libjpeg62, glib, pcre2 copied from the build machine) and
#   build-gpu/georeg-data (aukerman.png) is enough.  When meson test cannot use the
#   build folder there (another meson version), the GPU test binary runs directly.
#   steps: comma list of test,bench,variants,memcheck,racecheck,ncu (run in that
#          order; default test,bench,memcheck,racecheck)
#   GEOREG_BUILD (default build-gpu).  Real data: GEOREG_DATA, else
#   $GEOREG_BUILD/georeg-data when it holds aukerman.png.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${GEOREG_BUILD:-build-gpu}
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
steps=",${1:-test,bench,memcheck,racecheck},"
export PATH=/usr/local/cuda/bin:$PATH
# libraries the build links that a bare GPU machine may lack (carried in the build dir)
[ -d "$build/fallback-lib" ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PWD/$build/fallback-lib
if [ -z "${GEOREG_DATA:-}" ] && [ -f "$build/georeg-data/aukerman.png" ]; then
  export GEOREG_DATA=$PWD/$build/georeg-data
fi
summary=$out/summary.txt
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 || echo "nvidia-smi failed"; } | sed 's/^/device: /' | tee -a "$summary"
echo "date: $(date -u +%FT%TZ)  host: $(hostname)  cores: $(nproc)  GEOREG_DATA=${GEOREG_DATA:-unset}" | tee -a "$summary"

gpu_test=$build/tests/test_nmi_dense_gpu
if [[ $steps == *,test,* ]]; then
  t0=$(date +%s)
  timeout 240 meson test -C "$build" --no-rebuild --suite gpu -v --print-errorlogs > "$out/test.log" 2>&1
  rc=$?
  if ! grep -q '^Ok:' "$out/test.log"; then
    echo "meson test did not run (rc $rc): running the GPU test directly" >> "$out/test.log"
    timeout 200 "$gpu_test" >> "$out/test.log" 2>&1
    rc=$?
  fi
  note "gpu tests: rc=$rc ($(( $(date +%s) - t0 )) s): $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$out/test.log" | tr -s ' ' | tr '\n' ' ')"
fi
bench=$build/tests/bench_nmi_dense
if [[ $steps == *,bench,* ]]; then
  t0=$(date +%s)
  : > "$out/bench.log"
  runb() {  # runb TIMEOUT VAR=VALUE... : one benchmark invocation, logged with its command
    local to=$1; shift
    echo "bench command: $* $bench${json:+ $json}" >> "$out/bench.log"
    env "$@" timeout "$to" "$bench" ${json:+"$json"} >> "$out/bench.log" 2>&1
    echo "(rc $?)" >> "$out/bench.log"
  }
  json=$out/bench.json runb 200 GEOREG_BENCH_CONTENT=terrain GEOREG_BENCH_CPU=all
  json= runb 120 GEOREG_BENCH_CONTENT=noise GEOREG_BENCH_CPU=largest
  [ -n "${GEOREG_DATA:-}" ] && json= runb 120 GEOREG_BENCH_CONTENT=aukerman GEOREG_BENCH_CPU=largest
  note "bench: $(( $(date +%s) - t0 )) s"
fi
if [[ $steps == *,variants,* ]]; then
  echo "bench command: GEOREG_BENCH_WIDTHS=991 GEOREG_BENCH_CONTENT=terrain,noise,aukerman GEOREG_BENCH_CPU=none GEOREG_BENCH_VARIANTS=${BENCH_VARIANTS:-0,1,2,3} $bench" >> "$out/bench.log"
  GEOREG_BENCH_WIDTHS=991 GEOREG_BENCH_CONTENT=terrain,noise,aukerman GEOREG_BENCH_CPU=none \
    GEOREG_BENCH_VARIANTS=${BENCH_VARIANTS:-0,1,2,3} timeout 120 "$bench" >> "$out/bench.log" 2>&1
fi
if [[ $steps == *,memcheck,* ]]; then
  t0=$(date +%s)
  GEOREG_TEST_SUBSET=quick timeout 150 compute-sanitizer --tool memcheck --leak-check full \
    --error-exitcode 9 "$gpu_test" > "$out/memcheck.log" 2>&1
  rc=$?
  note "memcheck (quick subset): rc=$rc ($(( $(date +%s) - t0 )) s): $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$out/memcheck.log" | tr '\n' ' ') $(tail -n 1 "$out/memcheck.log")"
fi
if [[ $steps == *,racecheck,* ]]; then
  t0=$(date +%s)
  GEOREG_TEST_SUBSET=race timeout 100 compute-sanitizer --tool racecheck --racecheck-report all \
    --error-exitcode 9 "$gpu_test" > "$out/racecheck.log" 2>&1
  rc=$?
  note "racecheck (race subset): rc=$rc ($(( $(date +%s) - t0 )) s): $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/racecheck.log" | tr '\n' ' ') $(tail -n 1 "$out/racecheck.log")"
fi
if [[ $steps == *,ncu,* ]] && command -v ncu >/dev/null; then
  : > "$out/ncu.log"
  for v in ${NCU_VARIANTS:-0}; do
    echo "==== ncu, kernel variant $v (61,440 positions, terrain, 100% valid) ====" >> "$out/ncu.log"
    GEOREG_BENCH_WIDTHS=991 GEOREG_BENCH_CONTENT=terrain GEOREG_BENCH_CPU=none GEOREG_BENCH_REPS=1 \
      GEOREG_BENCH_VARIANTS=$v timeout 150 ncu --kernel-name regex:nmi_dense_kernel --launch-skip 1 \
      --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
      --section InstructionStats --section LaunchStats --section Occupancy \
      --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed_op_shared_atom.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shfl.sum \
      "$bench" >> "$out/ncu.log" 2>&1
    note "ncu variant $v: rc=$?"
  done
  if command -v cuobjdump >/dev/null; then
    cuobjdump -sass "$bench" 2>/dev/null | awk '/Function : /{p = ($0 ~ /nmi_dense_kernelILb0ELb0E/)} p' > "$out/sass.txt"
  fi
fi
echo
echo "==== short table ===="
cat "$summary"
if [ -f "$out/bench.log" ]; then
  grep -E '^ *(positions|[0-9]+ )|speed-up|x$' "$out/bench.log" | head -n 80
fi
[ -f "$out/test.log" ] && grep -E 'FAIL|failed|SKIP' "$out/test.log" | head -n 20
exit 0
