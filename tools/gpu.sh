#!/usr/bin/env bash
# The one GPU script: stages a CUDA build here, then on the GPU machine of the device
# tool runs the GPU test suite, compute-sanitizer and the benchmarks, with full logs
# under $OUT and a short table printed last.  docs/gpu-tests.md explains it.
#
# Here (a CPU machine with the CUDA toolkit, no GPU):
#   bash tools/gpu.sh stage [BUILD]     .gstroot/ (the GStreamer runtime the GPU machine
#                                       lacks) if missing, BUILD (default build-gpu)
#                                       configured with CUDA (sm_90: H100/H200) and GDAL
#                                       (GPU_GDAL=0: without), built; beside it the
#                                       libraries the GPU machine lacks (BUILD/fallback-lib,
#                                       GDAL's closure packed in BUILD/gdal-root.tar.xz), the
#                                       orthomosaic (BUILD/georeg-data) and the live 4K
#                                       stream (BUILD/live-4k); object files moved to
#                                       BUILD.objs so that the carry stays under 64 MiB
#   bash tools/gpu.sh restore [BUILD]   puts the object files back (or just rebuild)
# There (device tool: carry [".carry", "BUILD"], command starting with
# "tar -xJf .carry/gstroot.tar.xz; source .gstroot/env.sh;"):
#   bash tools/gpu.sh suite [BUILD]     the gpu and data suites (tools/run-tests.py:
#                                       the machine's meson cannot read our build folder)
#   bash tools/gpu.sh sanitize [BUILD] [memcheck,racecheck]
#                                       compute-sanitizer over every GPU test binary, on
#                                       each test's small subset, several at a time
#   bash tools/gpu.sh bench [BUILD]     the headline benchmarks, CUDA (dense NMI, sparse
#                                       NMI, matcher, features, landmarkshoot)
#   bash tools/gpu.sh live [BUILD]      the live 4K chain (pipelines/live-4k.sh bench)
#   bash tools/gpu.sh flight [BUILD]    200 4K frames with pose priors windowed over a
#                                       200k x 200k VRT of tiles with overviews
#                                       (issues 13, 18; FLIGHT_OVERVIEWS=0: none), then 20 windowed
#                                       and on an in-memory crop: ms a frame (warm),
#                                       first frame, peak RSS, GPU memory (~200 s)
#   bash tools/gpu.sh varifold [BUILD]  issue 15: tests shoot_varifold_gpu and
#                                       landmarkshoot (on the device), then varifold
#                                       matching of 10,000 and 100,000 vertices on CUDA
#                                       (tests/bench_varifold_shoot) and in PyTorch
#                                       (tools/bench_varifold_torch.py), same problem and
#                                       iterations (VARIFOLD_ITERS, default 100,3); ~150 s,
#                                       bounded by VARIFOLD_BUDGET_S (default 200 s)
#   bash tools/gpu.sh population [BUILD]  issue 15: test_shoot_batch_gpu and
#                                       test_shoot_gpu (row kernels vs CPU), then 1,000
#                                       subjects of N = 1,847 (seed settings) on CUDA,
#                                       100 subjects as now and 100 as before (one engine,
#                                       128x1 row blocks) on the same machine; ~5 min,
#                                       bounded by POPULATION_BUDGET_S (default 420 s);
#                                       POPULATION_SKIP_TESTS=1 (the suite ran them),
#                                       POPULATION_QUICK=1 (no 100-subject pair)
#   bash tools/gpu.sh fits [BUILD]      featurematch's pair fits (issue 14): the CPU bench
#                                       bench_pairfit (4K scene), the live 4K chain paced
#                                       at 30 fps, 4 streams paced and unpaced, each with
#                                       featurematch's phases (about 2 minutes)
#   bash tools/gpu.sh nccl [BUILD]      the NCCL matcher's test and benchmark over every
#                                       GPU of the host (~150 s; docs/multi-gpu.md)
#   bash tools/gpu.sh multistream [BUILD]  4, 8 and 16 live 4K streams placed over every
#                                       GPU (cuda-device-id=-1), paced, and 16 unpaced,
#                                       on a 10 s stream made there (~3 min)
#   bash tools/gpu.sh matcher [BUILD]   issue 14's sparse batch matcher: test_matcher_gpu,
#                                       then (a) and (b) dense and sparse with checks
#                                       and goal lines, and a line per list-mode
#                                       variant (about 5 minutes at most)
#   bash tools/gpu.sh multigpu [BUILD]  both (a host with several GPUs: nvidia-h100-x4;
#                                       ~6 min, bounded by GPU_BUDGET_S, default 540 s)
#   bash tools/gpu.sh pairs [BUILD]     pair pruning by footprint overlap on CUDA
#                                       (test_matcher_pairs_gpu: CUDA == CPU entry for
#                                       entry, and a survey of 1000 x 500 timed pruned vs
#                                       full), then 10,000 x 500 pruned on 1 GPU and on
#                                       every GPU (NCCL); ~2 min, bounded 300 s
#   bash tools/gpu.sh loopback [BUILD]  a 4K stream and its KLV (MPEG-TS, RTP over UDP on
#                                       127.0.0.1) into a GPU pipeline: its results and
#                                       KLV equal the local pipeline's (~1-2 min, bounded
#                                       240 s; tests/network_loopback.sh)
#   bash tools/gpu.sh all [BUILD]       suite and sanitize side by side, then bench, then
#                                       live: about 8 minutes on an H100 host with 16
#                                       cores, bounded by GPU_BUDGET_S (default 560 s)
#                                       so that it ends inside the device tool's 10 min
#   bash tools/gpu.sh flightacc [BUILD] issue 13's accuracy: test_nmilocalize_pose on
#                                       CUDA and CPU, 100 frames per prior kind, one
#                                       table row each (needs a BUILD with GDAL)
#   bash tools/gpu.sh exec BUILD CMD... CMD in the steps' environment (libraries,
#                                       plugins, GDAL, data), for a one-off run
#   bash tools/gpu.sh onboard [BUILD]   issue 14's CPU onboard chain: the CUDA detector
#                                       against the (sped-up) CPU one (features_gpu),
#                                       register_gpu, frameshare on CUDA and CPU, then the
#                                       onboard bench (pipelines/onboard.sh) on 2 cores of
#                                       the idle host (taskset); 3 to 5 minutes
# Environment: OUT (default ./gpu-out), GPU_BUDGET_S, SUITE_TIMEOUT (default 480 s),
# SANITIZER_JOBS (default 6),
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
  gstroot_ts || return 1
  # GDAL: the GPU machine has none, so its closure is carried packed (gdal_pack);
  # GPU_GDAL=0 builds without it as before
  local gdal=enabled
  [ "${GPU_GDAL:-1}" = 0 ] && gdal=disabled
  [ -f "$build/build.ninja" ] && meson configure "$build" -Dgdal=$gdal > /dev/null
  [ -f "$build/build.ninja" ] || meson setup "$build" -Dcuda=enabled -Dgdal=$gdal \
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
  [ "$gdal" = enabled ] && { gdal_pack || return 1; }
  # objects and static archives are not needed to run: keep them out of the carry
  mkdir -p "$build.objs"
  (cd "$build" && find . \( -name '*.o' -o -name '*.a' \) -print0 | tar -cf - --null -T - |
     tar -C "../$build.objs" -xpf - && find . \( -name '*.o' -o -name '*.a' \) -delete)
  du -sh "$build" .gstroot 2>/dev/null
  local mib
  mib=$(du -scm "$build" .gstroot 2>/dev/null | awk 'END {print $1}')
  [ "${mib:-0}" -gt 60 ] && echo "note: $build is ${mib} MiB with .gstroot; .gstroot travels" \
    "packed (.carry), $build/live-4k can stay behind (GPU_NO_LIVE=1: made there)"
  # the GStreamer runtime packed (27 MB -> 8 MB): beside the GDAL of the build, the two
  # do not fit the device tool's 64 MiB unpacked
  mkdir -p .carry
  grep -qxF '/.carry/' .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
  tar -cf - .gstroot | xz -T0 -6 > .carry/gstroot.tar.xz || return 1
  echo "then: run with carry [\".carry\", \"$build\"] and \"tar -xJf" \
    ".carry/gstroot.tar.xz; source .gstroot/env.sh; bash tools/gpu.sh all $build\""
}

# the MPEG-TS plugins that make-gstroot.sh leaves out (tsdemux and tsparse in
# mpegtsdemux, mpegtsmux), added to .gstroot from this machine's Debian 12 GStreamer
# (the same 1.22 plugins-bad package make-gstroot unpacks): the network loopback
# (tests/network_loopback.sh) carries the video and its KLV in MPEG-TS over RTP (rtp,
# udp are kept already).  Their libraries (libgstmpegts, libgstcodecparsers, GLib...)
# are in .gstroot or BUILD/fallback-lib; any other one is copied beside them, except
# glibc's and the compression libraries every host has (GLib's gio already needs
# them).  About 300 KB.
gstroot_ts () {
  local sys dst=.gstroot/usr/lib/x86_64-linux-gnu p lib n
  sys=$(pkg-config --variable=pluginsdir gstreamer-1.0 2>/dev/null)
  [ -d "$sys" ] || sys=/usr/lib/x86_64-linux-gnu/gstreamer-1.0
  for p in mpegtsdemux mpegtsmux; do
    [ -f "$dst/gstreamer-1.0/libgst$p.so" ] && continue
    [ -f "$sys/libgst$p.so" ] ||
      { echo "no $sys/libgst$p.so (install gstreamer1.0-plugins-bad)" >&2; return 1; }
    cp "$sys/libgst$p.so" "$dst/gstreamer-1.0/" || return 1
    for lib in $(ldd "$sys/libgst$p.so" | awk '$3 ~ /^\// {print $3}'); do
      n=${lib##*/}
      case $n in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libz.so*|liblzma.so*|libbz2.so*|libffi.so*|libpcre2-8.so*) continue ;;
      esac
      [ -e "$dst/$n" ] || [ -e ".gstroot/lib/x86_64-linux-gnu/$n" ] ||
        { cp -L "$lib" "$dst/$n" && echo "gstroot_ts: added $n (for $p)"; }
    done
    echo "gstroot_ts: added the $p plugin to .gstroot"
  done
}

restore () {
  [ -d "$build.objs" ] && tar -C "$build.objs" -cf - . | tar -C "$build" -xpf - &&
    rm -rf "$build.objs"
  return 0
}

# gdal_pack: libgdal and every shared library the build's binaries need that the GPU
# machine lacks (it has glibc, libstdc++ and the CUDA driver; GStreamer comes in
# .gstroot, a few more in BUILD/fallback-lib), plus PROJ's proj.db and GDAL_DATA,
# as BUILD/gdal-root.tar.xz, which setup_env unpacks there (issue 18: windowed
# controls need GDAL).  xz -9e: about 40 MB for Debian 12's GDAL 3.6 and its 100 or so
# libraries (150 MB unpacked); several minutes on a loaded 2-core machine.
gdal_pack () {
  local tmp; tmp=$(mktemp -d) || return 1
  local dir=$tmp/gdal-root f b
  mkdir -p "$dir/lib" "$dir/share/proj" "$dir/share/gdal"
  local have=" "
  for f in .gstroot/usr/lib/x86_64-linux-gnu/* "$build"/fallback-lib/*; do
    have+="$(basename "$f") "
  done
  # the closure (ldd lists it whole) of the library, the plugin and the test binaries
  find "$build/kernels" "$build/gst" -maxdepth 1 -type f -name '*.so*' -print0 |
    xargs -0 ldd 2>/dev/null |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r b f; do
      case "$b" in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|libutil.so*|\
        ld-linux*|libstdc++.so*|libgcc_s.so*|libcuda.so*|libnvidia*|libgeoreg*|libgst*) continue ;;
      esac
      case "$have" in *" $b "*) continue ;; esac
      cp -L "$f" "$dir/lib/$b"
    done
  # ICU's data (31 MB, 7.5 MB packed) is only reached through libxml2's encoding
  # conversions, which reading GeoTIFF and VRT (GDAL's own XML parser) never makes: a
  # library of the same name exporting the same (empty) data symbol stands in for it
  for f in "$dir"/lib/libicudata.so.*; do
    [ -f "$f" ] || continue
    nm -D --defined-only "$f" | awk '$2 ~ /[RDB]/ {print "const unsigned char " $3 "[64] __attribute__ ((aligned (16))) = { 0 };"}' \
      > "$tmp/icudata.c"
    cc -shared -fPIC -Wl,-soname,"$(basename "$f")" -o "$f.stub" "$tmp/icudata.c" &&
      mv "$f.stub" "$f"
  done
  [ -f "$dir/lib/$(ldd "$build"/kernels/libgeoreg-kernels.so | awk '/libgdal/ {print $1; exit}')" ] ||
    { echo "gdal_pack: $build does not link libgdal (configured without GDAL?)" >&2; rm -rf "$tmp"; return 1; }
  # the drivers' libraries a windowed control never uses: stand-ins (tools/gdal_stub.py).
  # Not libcrypto: this folder is on LD_LIBRARY_PATH of every step, and the system's own
  # tools (GNU sort takes MD5_Init from it) would load a stand-in that lacks their symbols
  python3 tools/gdal_stub.py "$dir/lib" "$build"/kernels/libgeoreg-kernels.so \
    "$build"/gst/libgstgeoreg.so -- libpoppler libhdf5 libnetcdf libheif libspatialite \
    libxerces-c libmariadb libpq libodbc libkml libcfitsio libarmadillo libogdi libqhull \
    libfyba libfreexl libblosc libopenjp2 libmfhdfalt libdfalt libgeos_c libgif \
    libodbcinst libcurl libxml2 || { rm -rf "$tmp"; return 1; }
  local proj; proj=$(pkg-config --variable=datadir proj 2>/dev/null)/proj
  [ -f "$proj/proj.db" ] || proj=/usr/share/proj
  cp "$proj/proj.db" "$dir/share/proj/"
  local gd; gd=$(gdal-config --datadir 2>/dev/null)
  [ -d "$gd" ] || gd=/usr/share/gdal
  cp -r "$gd"/. "$dir/share/gdal/"
  echo "gdal_pack: $(ls "$dir/lib" | wc -l) libraries, $(du -sm "$dir" | cut -f1) MiB unpacked"
  # the check: the windowed-control test with GDAL from this folder only (stand-ins
  # that a reading path would call abort with their name)
  if [ -x "$build/tests/test_nmilocalize_window" ]; then
    LD_LIBRARY_PATH=$dir/lib:$root/$build/kernels:$root/$build/gst PROJ_DATA=$dir/share/proj \
      GDAL_DATA=$dir/share/gdal GEOREG_WINDOW_FRAMES=1 GEOREG_WINDOW_REGISTER_FRAMES=1 \
      GEOREG_TEST_BACKEND=cpu GST_PLUGIN_PATH_1_0=$root/$build/gst GST_PLUGIN_SYSTEM_PATH_1_0= \
      GST_REGISTRY=$tmp/registry.bin timeout 300 "$build/tests/test_nmilocalize_window" \
      > "$build/gdal-check.log" 2>&1 ||
      { echo "gdal_pack: the packed GDAL does not read the test's VRT (see $build/gdal-check.log)" >&2
        rm -rf "$tmp"; return 1; }
    echo "gdal_pack: checked (test_nmilocalize_window on the packed libraries)"
  fi
  tar -C "$tmp" -cf - gdal-root | xz ${GDAL_XZ:--9e} -T0 > "$build/gdal-root.tar.xz" || { rm -rf "$tmp"; return 1; }
  rm -rf "$tmp"
  du -m "$build/gdal-root.tar.xz"
}

# -------------------------------------------------------------------------- there

setup_env () {
  mkdir -p "$out"
  export LD_LIBRARY_PATH=$root/$build/kernels:$root/$build/gst${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$root/$build/fallback-lib
  [ -f "$build/georeg-data/aukerman.png" ] && export GEOREG_DATA=$root/$build/georeg-data
  export GST_PLUGIN_SYSTEM_PATH_1_0=
  export GST_PLUGIN_PATH_1_0=$root/$build/gst${GST_PLUGIN_SYSTEM_PATH:+:$GST_PLUGIN_SYSTEM_PATH}
  export GST_REGISTRY=$out/registry.bin CK_FORK=no
  # GDAL and its libraries (gdal_pack), unpacked once beside the build
  if [ -f "$build/gdal-root.tar.xz" ]; then
    [ -d "$build/gdal-root" ] || tar -C "$build" -xJf "$build/gdal-root.tar.xz"
    export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$root/$build/gdal-root/lib
    export PROJ_DATA=$root/$build/gdal-root/share/proj PROJ_LIB=$root/$build/gdal-root/share/proj
    export GDAL_DATA=$root/$build/gdal-root/share/gdal GDAL_CACHEMAX=64
  fi
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
  timeout "$(bounded "${SUITE_TIMEOUT:-480}")" python3 tools/run-tests.py "$build" --suite gpu --suite data \
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

# the live 4K stream, made there when it was not staged (GPU_NO_LIVE=1 keeps it out of
# the carry, which GDAL fills; the carried GStreamer runtime has x264enc): about 20 s
live_data () {
  [ -d "$build/live-4k" ] && return 0
  BUILD=$build bash pipelines/live-4k.sh make "$build/live-4k" > "$out/live-make.log" 2>&1 ||
    rm -rf "$build/live-4k"
}

live () {
  setup_env
  live_data
  if [ ! -d "$build/live-4k" ]; then
    note "live 4K" 0 0 "skipped: no $build/live-4k (see live-make.log)"
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

# flight: issues 13 and 18 on the GPU: test_nmilocalize_window on CUDA, 4K frames
# (scale 0.5: 1920 x 1080 control px each) with pose priors over a 200,000 x 200,000
# px VRT of GeoTIFF tiles with overviews (made on the device): 200 frames windowed alone, then 20
# frames windowed and on the in-memory crop (agreement, and the crop's own speed).
# Each prints the first frame's latency, then ms a frame (warm: the mean of the
# others, the worst), the process's peak RSS (checked < 2048 MiB) and the device
# memory in use (cudaMemGetInfo) before, at peak and after; nvidia-smi samples the
# whole device every 200 ms besides.  The frames are synthesized ahead in batches,
# outside the timings.  Before them, test_frame_downscale_gpu and the small windowed
# test on CUDA.  Bounded to about 250 s (90 + FLIGHT_200_S 130 + FLIGHT_20_S 75).
flight () {
  setup_env
  mkdir -p "$out/flight"
  local t=$build/tests/test_nmilocalize_window rc=0 t0 r log
  [ -x "$t" ] || { note "flight" 1 0 "no $t (stage with GDAL)"; return 1; }
  # the tiles get overviews (gdaladdo -r average 2 4 8 16, as docs/controls.md asks
  # of a control); FLIGHT_OVERVIEWS=0: without, every window cut at full resolution
  local common="GEOREG_TEST_BACKEND=cuda GEOREG_WINDOW_W=3840 GEOREG_WINDOW_H=2160
    GEOREG_WINDOW_SCALE=0.5 GEOREG_WINDOW_CONTROL_W=6144 GEOREG_WINDOW_CONTROL_H=4608
    GEOREG_WINDOW_REGISTER_FRAMES=0 GEOREG_WINDOW_RSS_MIB=2048
    GEOREG_WINDOW_OVERVIEWS=${FLIGHT_OVERVIEWS:-1}"
  # first the GPU tests of the pose path: the device downscales equal the host's bit
  # for bit (what keeps the CUDA path's results), the windowed chain on small frames
  t0=$SECONDS
  timeout "$(bounded 90)" python3 tools/run-tests.py "$build" --log-dir "$out/flight/tests" \
    frame_downscale_gpu nmilocalize_window_cuda > "$out/flight/tests.txt" 2>&1; r=$?
  [ "$r" = 0 ] || rc=1
  note "flight: pose-path GPU tests" "$r" $((SECONDS - t0)) "$(tail -n 1 "$out/flight/tests.txt")"
  # the device the test runs on (nvidia-smi ignores CUDA_VISIBLE_DEVICES)
  local smi_dev=()
  [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && smi_dev=(-i "${CUDA_VISIBLE_DEVICES%%,*}")
  nvidia-smi "${smi_dev[@]}" --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 \
    > "$out/flight/gpumem.txt" 2>/dev/null & local smi=$!
  for run in 200 20; do
    log=$out/flight/flight$run.log
    t0=$SECONDS
    if [ "$run" = 200 ]; then
      timeout "$(bounded "${FLIGHT_200_S:-130}")" env $common GEOREG_WINDOW_FRAMES=200 \
        GEOREG_WINDOW_SKIP_CROP=1 "$t" > "$log" 2>&1; r=$?
    else
      timeout "$(bounded "${FLIGHT_20_S:-75}")" env $common GEOREG_WINDOW_FRAMES=20 \
        "$t" > "$log" 2>&1; r=$?
    fi
    [ "$r" = 0 ] || rc=1
    note "flight $run x 4K (CUDA)" "$r" $((SECONDS - t0)) "$(flight_line "$log")"
  done
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  {
    echo "    nvidia-smi peak over both runs: $(sort -n "$out/flight/gpumem.txt" | tail -n 1) MiB (whole device)"
    grep -hE 'windowed on the VRT|whole on the crop|worst frame|median frame|GPU memory|peak resident|FAIL' \
      "$out"/flight/flight200.log "$out"/flight/flight20.log | sed 's/^ */    /'
  } | tee -a "$out/table.txt"
  return "$rc"
}

# issue 15: populations.  The two GPU tests that check the population kernels against
# the CPU, then bench_shoot's population at 1,000, 100 and 100 subjects the way the
# fifth session ran them (GEOREG_SHOOT_BATCH_GROUPS=1: one engine, no pipeline;
# GEOREG_SHOOT_ROWS=128x1: its block shape; the pair arithmetic is the new one), each
# with subjects refitted alone; the row-kernel shapes' timings (tune_rows), the fit's
# seconds, the floors and the worst relative loss difference alone.
population () {
  setup_env
  mkdir -p "$out/bench"
  deadline=${deadline:-$(( SECONDS + ${POPULATION_BUDGET_S:-420} ))}
  local t0=$SECONDS rc=0 r
  if [ -z "${POPULATION_SKIP_TESTS:-}" ]; then
    timeout "$(bounded 150)" python3 tools/run-tests.py "$build" --log-dir "$out/population-tests" \
      shoot_batch_gpu shoot_gpu > "$out/bench/population_tests.log" 2>&1
    r=$?
    note "shoot_batch_gpu, shoot_gpu" "$r" $((SECONDS - t0)) \
      "$(tail -n 1 "$out/bench/population_tests.log"); logs population-tests/"
    [ "$r" = 0 ] || rc=1
  fi
  local pop="GEOREG_BENCH_BACKENDS=cuda GEOREG_BENCH_SIZES=1847 GEOREG_SHOOT_TUNE_VERBOSE=1"
  # the SM clock and power while the 1,000 subjects run: the floors are computed at the
  # device's nominal clock, the kernels run at whatever it sustains
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 500 \
    > "$out/bench/pop1000_clocks.txt" 2>/dev/null & local smi=$!
  bench_step "population 1000" 230 pop1000.log env $pop GEOREG_BENCH_POPULATION=1000 \
    GEOREG_BENCH_POP_CHECK=3 "$build/tests/bench_shoot" "$out/bench/pop1000.json" || rc=1
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  sort -t, -k1,1n "$out/bench/pop1000_clocks.txt" 2>/dev/null | awk -F, '
    NF >= 2 { c[n] = $1; p += $2; n++ }
    END { if (n) printf "    pop1000: SM clock during the run: median %d MHz (%d samples), mean power %.0f W\n", c[int(n / 2)], n, p / n }' |
    tee -a "$out/table.txt"
  if [ -z "${POPULATION_QUICK:-}" ]; then
    bench_step "population 100" 35 pop100.log env $pop GEOREG_BENCH_POPULATION=100 \
      GEOREG_BENCH_POP_CHECK=1 "$build/tests/bench_shoot" "$out/bench/pop100.json" || rc=1
    bench_step "population 100, as before" 35 pop100_before.log env $pop \
      GEOREG_BENCH_POPULATION=100 GEOREG_BENCH_POP_CHECK=1 GEOREG_SHOOT_BATCH_GROUPS=1 \
      GEOREG_SHOOT_ROWS=128x1 "$build/tests/bench_shoot" "$out/bench/pop100_before.json" ||
      rc=1
  fi
  local f
  for f in pop1000 pop100 pop100_before; do
    [ -f "$out/bench/$f.log" ] || continue
    grep -hE '^cuda: |floors on|one evaluation of all|alone \(|agreement|FAIL|^shoot row kernels' \
      "$out/bench/$f.log" | sed "s/^/    $f: /" | tee -a "$out/table.txt"
  done
  return "$rc"
}

# flight_line LOG: one table cell from a test_nmilocalize_window log: windowed ms a
# frame (fps) and first frame, the crop's when it ran, peak RSS, GPU memory peak
flight_line () {
  local w c rss gpu
  w=$(grep -m1 'nmilocalize ! nmiregister windowed on the VRT' "$1" |
    sed -E 's/.*: ([0-9]+ of [0-9]+) registered.*first frame ([0-9]+) ms, then ([0-9.]+) ms a frame.*/\3 \2 \1/')
  c=$(grep -m1 'nmilocalize ! nmiregister whole on the crop' "$1" |
    sed -E 's/.*first frame ([0-9]+) ms, then ([0-9.]+) ms a frame; ([0-9]+ of [0-9]+) frames agree.*/\2 \1 \3/')
  rss=$(grep -o 'peak resident memory: [0-9.]*' "$1" | awk '{print $4}')
  gpu=$(grep -m1 -o 'peak [0-9]* MiB (+[0-9]* MiB)' "$1")
  awk -v w="$w" -v c="$c" -v rss="${rss:-?}" -v gpu="${gpu:-?}" 'BEGIN {
    n = split(w, a, " "); m = split(c, b, " ")
    if (n >= 2) printf "windowed %.1f ms a frame (%.1f fps), first %d ms, %s of %s registered; ", a[1], 1000 / a[1], a[2], a[3], a[5]
    else printf "windowed: no result; "
    if (m >= 2) printf "crop %.1f ms a frame (%.1f fps), first %d ms, %s of %s agree with the windowed; ", b[1], 1000 / b[1], b[2], b[3], b[5]
    printf "peak RSS %s MiB; GPU %s", rss, gpu }'
}

# issue 15: the varifold shooting test, then CUDA and PyTorch on the same matching
# problems and iteration counts, with the speed-up per size
varifold () {
  setup_env
  mkdir -p "$out/bench"
  local rc=0 iters=${VARIFOLD_ITERS:-100,3} sizes=${VARIFOLD_SIZES:-10000,100000}
  # the whole step within VARIFOLD_BUDGET_S (default 200 s): each part gets at most
  # what is left (bounded)
  deadline=${deadline:-$(( SECONDS + ${VARIFOLD_BUDGET_S:-200} ))}
  # the device test, and the element's tests (backend=cuda and auto: the varifold
  # pipelines shoot on the device here), as meson would run them
  local t0=$SECONDS
  timeout "$(bounded 70)" python3 tools/run-tests.py "$build" --log-dir "$out/varifold-tests" \
    shoot_varifold_gpu landmarkshoot > "$out/bench/varifold_tests.log" 2>&1
  local r=$?
  note "shoot_varifold_gpu, landmarkshoot" "$r" $((SECONDS - t0)) \
    "$(tail -n 1 "$out/bench/varifold_tests.log"); logs varifold-tests/"
  [ "$r" = 0 ] || rc=1
  # the device test's figures (CUDA vs the float64 CPU, finite differences, fits)
  grep -hE 'vs CPU float64|finite differences|final losses|float32 on CUDA|^FAIL' \
    "$out/varifold-tests/shoot_varifold_gpu.log" 2>/dev/null | sed 's/^/    /' |
    tee -a "$out/table.txt"
  bench_step "varifold CUDA" 80 varifold_cuda.log "$build/tests/bench_varifold_shoot" \
    --vertices "$sizes" --iters "$iters" --json "$out/bench/varifold_cuda.json" || rc=1
  # PyTorch: the same iterations, then on (up to 3x the iterations, 40 s a size) until
  # it reaches the loss georeg reached
  local targets
  targets=$(python3 -c 'import json, sys
try:
    r = json.load(open(sys.argv[1]))["results"]
    print(",".join("%.9g" % e["loss_after"] for e in r))
except Exception:
    pass' "$out/bench/varifold_cuda.json")
  bench_step "varifold PyTorch" 130 varifold_torch.log python3 tools/bench_varifold_torch.py \
    --vertices "$sizes" --iters "$iters" --target-loss "$targets" --time-limit 40 \
    --out "$out/bench/varifold_torch.json" || rc=1
  python3 - "$out/bench/varifold_cuda.json" "$out/bench/varifold_torch.json" <<'PY' |
import json, sys
def load(p):
    # a run cut by its time limit leaves the JSON unclosed: close it
    try:
        txt = open(p).read()
    except OSError:
        return []
    for tail in ("", "\n]}"):
        try:
            return json.loads(txt + tail)["results"]
        except ValueError:
            pass
    return []
cu, th = load(sys.argv[1]), load(sys.argv[2])
print("| varifold matching | CUDA fit s | PyTorch s, same iterations | speed-up | loss CUDA "
      "| loss PyTorch | PyTorch s to CUDA's loss | speed-up | loss at p0 = 0 CUDA / PyTorch |")
for i, c in enumerate(cu):
    t = th[i] if i < len(th) else {}
    name = f"{c['source_vertices']} onto {c['target_vertices']}, {c['iterations']} it"
    if "fit_s" in t and c.get("ok") and c["fit_s"] > 0:
        ts = t.get("target_s")
        reach = (f"{ts:.2f} | {ts / c['fit_s']:.0f}x" if ts is not None else
                 f"not reached in {t.get('total_s', 0):.1f} s, {t.get('lbfgs_iterations')} it "
                 f"(best {t.get('best_loss', float('nan')):.6g}) | > "
                 f"{t.get('total_s', 0) / c['fit_s']:.0f}x")
        print(f"| {name} | {c['fit_s']:.3f} | {t['fit_s']:.2f} | {t['fit_s'] / c['fit_s']:.0f}x "
              f"| {c['loss_after']:.6g} | {t['loss_after']:.6g} | {reach} "
              f"| {c['loss_before']:.7g} / {t['loss_before']:.7g} |")
    else:
        print(f"| {name} | {c['fit_s']:.3f} | {t.get('error', 'not run (time limit?)')} | - "
              f"| {c['loss_after']:.6g} | - | - | - | {c['loss_before']:.7g} / - |")
PY
    tee "$out/bench/varifold_summary.log"
  return "$rc"
}

# featurematch's phases (median ms) from a georeg-live-bench output (its first chain:
# CUDA memory)
fm_phases () {
  grep -m1 'element timings' "$1" | grep -o -E 'featurematch\.(read|extract-wall|patches|match-wall|fits|fit-first|refine|refit)-ms [0-9.]+' \
    | sed 's/featurematch\.//' | tr '\n' ' '
}

fits () {
  setup_env
  mkdir -p "$out/fits"
  local t0=$SECONDS rc=0 r
  timeout "$(bounded 150)" "$build/tests/bench_pairfit" --bench > "$out/fits/bench_pairfit.txt" 2>&1
  r=$?; rc=$((rc | r))
  note "pairfit CPU bench (4K, 500 kp, 8)" "$r" $((SECONDS - t0)) "$(grep -m1 '^| 1 |' "$out/fits/bench_pairfit.txt")"
  live_data
  if [ ! -d "$build/live-4k" ]; then
    note "live 4K fits" 0 0 "skipped: no $build/live-4k (see live-make.log)"
    return "$rc"
  fi
  local name env
  for name in paced-1 paced-4 unpaced-4; do
    t0=$SECONDS
    case $name in
    paced-1) PACED=1 BUILD=$build timeout "$(bounded 90)" bash pipelines/live-4k.sh bench \
        "$build/live-4k" "$out/fits" > "$out/fits/$name.txt" 2>&1 ;;
    paced-4) PACED=1 STREAMS=4 BUILD=$build timeout "$(bounded 90)" bash pipelines/live-4k.sh \
        streams "$build/live-4k" "$out/fits" > "$out/fits/$name.txt" 2>&1 ;;
    unpaced-4) STREAMS=4 BUILD=$build timeout "$(bounded 90)" bash pipelines/live-4k.sh \
        streams "$build/live-4k" "$out/fits" > "$out/fits/$name.txt" 2>&1 ;;
    esac
    r=$?; rc=$((rc | r))
    note "live 4K $name" "$r" $((SECONDS - t0)) "$(grep -m1 -o -E '(slowest [0-9.]+ fps, worst p99 [0-9.]+ ms|fps [0-9.]+ .*p99 [0-9.]+)' "$out/fits/$name.txt")"
    echo "    featurematch ms: $(fm_phases "$out/fits/$name.txt")" | tee -a "$out/table.txt"
  done
  return "$rc"
}

# ---- issue 16 (docs/multi-gpu.md): several GPUs of one host
# multistream: N concurrent live 4K streams (STREAMS, default "4 8 16"), each its own
# pipeline placed by cuda-device-id=-1 over every GPU of the host, paced at 30 fps (the
# streams' phases spread), then the largest N unpaced and in phase; each row with the
# steady figures (after each stream's first 30 frames).  MULTISTREAM_FRAMES (default 300: 10 s) makes a stream of that length here
# (x264enc from the carried runtime, ~40-60 s) unless it is 90 (the staged one).
multistream () {
  setup_env
  local dir=$build/live-4k frames=${MULTISTREAM_FRAMES:-300}
  mkdir -p "$out/multistream"
  local t0=$SECONDS rc=0 n
  if [ "$frames" != 90 ]; then
    dir=/tmp/georeg-live-4k-$frames
    [ -f "$dir/flight.h264" ] || FRAMES=$frames BUILD=$build timeout "$(bounded 120)" \
      bash pipelines/live-4k.sh make "$dir" > "$out/multistream/make.txt" 2>&1 ||
      { note "multistream: a $frames-frame stream" 1 $((SECONDS - t0)) "make failed"; return 1; }
  fi
  if [ ! -f "$dir/flight.h264" ]; then
    note "multistream" 0 0 "skipped: no $dir (tools/gpu.sh stage makes it)"
    return 0
  fi
  local all=(${STREAMS:-4 8 16})
  # uN: N unpaced; iN: N paced with every stream's frames due together (the worst case)
  for n in "${all[@]}" "u${all[-1]}" "i${all[-1]}"; do
    local paced=1 k=$n r inphase=0 how=paced
    [ "${n#u}" != "$n" ] && { paced=0; k=${n#u}; how=unpaced; }
    [ "${n#i}" != "$n" ] && { inphase=1; k=${n#i}; how="paced, in phase"; }
    t0=$SECONDS
    BUILD=$build STREAMS=$k PACED=$paced IN_PHASE=$inphase timeout "$(bounded 100)" \
      bash pipelines/multi-stream.sh "$dir" "$out/multistream" \
      > "$out/multistream-$n.txt" 2> "$out/multistream/err-$n.txt"; r=$?
    [ "$r" = 0 ] || rc=1
    note "multistream $k ($how, $(nvidia-smi -L 2>/dev/null | wc -l) GPUs)" \
      "$r" $((SECONDS - t0)) "$(grep -E '^[0-9]+ streams|^after' "$out/multistream-$n.txt" |
        sed 's/streams per device:.*//' | tr '\n' ' ')"
  done
  return "$rc"
}

# the machine's libnccl.so.2 on LD_LIBRARY_PATH (it is not carried: 218 MB): its CUDA
# toolkit's, or the nvidia-nccl wheel beside PyTorch (NCCL_LIB says which, "" = none
# found)
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

# nccl: the NCCL matcher's gpu test (1 rank == one GPU, every GPU == one GPU) and its
# benchmark (m = 4000 x 500, k = 64, sparse: 1 GPU vs all); bounded 150 s
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
  # the unique id across separate processes (env, then a file by rank 0)
  local r2=0 t1=$SECONDS
  timeout "$(bounded 150)" "$t/test_matcher_nccl_procs_gpu" > "$out/nccl-procs.txt" 2>&1 || r2=1
  note "nccl ranks as processes" "$r2" $((SECONDS - t1)) \
    "$(grep -cE 'identical' "$out/nccl-procs.txt") identical of 4, $(tail -n 1 "$out/nccl-procs.txt")"
  rc=$((rc | r2))
  bench_step "matcher_nccl 4000x500 k64" 110 matcher_nccl.log "$t/bench_matcher_nccl" \
    4000 500 64 2 || rc=1
  grep -E '^(single|NCCL|speed-up)' "$out/bench/matcher_nccl.log" | tee -a "$out/table.txt"
  return "$rc"
}

# matcher: issue 14's sparse batch goals.  test_matcher_gpu (every sparse list entry,
# list mode and slab path, against the CPU backend bit for bit and the float64
# reference; about a minute), then bench_matcher --sparse-goals with
# GEOREG_MATCHER_TIMING=1: (a) and (b), dense and sparse, kernel and wall medians,
# differences against the dense form and float64 (at most 120 s).  Pass: both rc 0,
# every "check" line 0 differences; the "goal" lines say MET or NOT MET.
matcher () {
  setup_env
  mkdir -p "$out/bench"
  local t=$build/tests rc=0 t0=$SECONDS
  timeout "$(bounded 180)" "$t/test_matcher_gpu" > "$out/matcher-test.txt" 2>&1 || rc=1
  note "test_matcher_gpu" "$rc" $((SECONDS - t0)) "$(tail -n 1 "$out/matcher-test.txt")"
  bench_step "matcher sparse goals" 200 matcher_goals.log env GEOREG_MATCHER_TIMING=1 \
    "$t/bench_matcher" --no-cpu --sparse-goals --json "$out/bench/matcher_goals.json" ||
    rc=1
  # the goal lines are the default kernel's; a "variant" line each for the list mode's
  # run-time variants (GEOREG_MATCHER_VARIANT / _UPLOAD: kernels/matcher_cuda.cu); the
  # timing lines say which variant each call ran, at their end: the default's second
  # call (after its warm-up) for each case
  { grep -E '^(goal|  check|variant)' "$out/bench/matcher_goals.log"
    for mm in 1024 1000; do
      grep -E "^matcher sparse \(list\): m $mm .*variant min \(" \
        "$out/bench/matcher_goals.log" | sed -n 2p
    done; } | tee -a "$out/table.txt"
  return "$rc"
}

# loopback: issue 16's "Done when": the loopback RTP pair carries a 4K stream and its
# KLV into a GPU pipeline (nvh264dec into CUDA memory, nmilocalize ! nmiregister on
# CUDA), whose results (each frame's nmiregister message less timings and timestamp)
# and KLV bytes must equal the local pipeline's on the same frames
# (tests/network_loopback.sh cuda, GEOREG_LOOPBACK_4K=1, GEOREG_LOOPBACK_REQUIRE_KLV=1:
# no falling back to the video alone).  Needs the MPEG-TS plugins in .gstroot
# (stage's gstroot_ts) and a BUILD with GDAL (georegklvenc).  ~1-2 min, bounded 240 s
loopback () {
  setup_env
  local t0=$SECONDS rc verdict
  GEOREG_BUILD_ROOT=$root/$build GEOREG_SOURCE_ROOT=$root GEOREG_LOOPBACK_4K=1 \
    GEOREG_LOOPBACK_REQUIRE_KLV=1 timeout "$(bounded 240)" \
    bash tests/network_loopback.sh cuda > "$out/loopback.txt" 2>&1
  rc=$?
  case $rc in
    0) verdict="equal" ;;
    77) verdict="skipped" ;;
    124) verdict="timed out" ;;
    *) verdict="NOT equal" ;;
  esac
  note "loopback 4K + KLV, CUDA receiver" "$rc" $((SECONDS - t0)) \
    "$verdict: $(grep -E '^(loopback|FAIL|SKIP|frames)' "$out/loopback.txt" | tr '\n' ' ')"
  return "$rc"
}

# pairs: pair pruning by footprint overlap on CUDA (test_matcher_pairs_gpu): the pruned
# list on CUDA == the CPU's entry for entry (random and footprint lists, the debug
# paths, k = 32, 64, 128), == CUDA's full list restricted to the pairs, and a survey of
# GEOREG_PAIRS_M (1000) images x 500 descriptors, k = 64, timed pruned vs full; ~1 min
pairs () {
  setup_env
  local t0=$SECONDS rc
  timeout "$(bounded 180)" "$build/tests/test_matcher_pairs_gpu" > "$out/pairs.txt" 2>&1
  rc=$?
  note "pair pruning on CUDA" "$rc" $((SECONDS - t0)) \
    "$(grep -c 'identical' "$out/pairs.txt") cases identical; $(grep -m1 '^survey' "$out/pairs.txt")"
  # a day's survey (10,000 frames x 500, k = 64) pruned, on one GPU and on every GPU
  # (NCCL), lists identical: where the NCCL matcher is built and libnccl found
  if [ -x "$build/tests/bench_matcher_nccl" ] && [ -n "$NCCL_LIB" ]; then
    mkdir -p "$out/bench"
    bench_step "matcher_nccl pruned 10000x500" 120 matcher_nccl_pairs.log \
      env GEOREG_BENCH_PAIRS=1 "$build/tests/bench_matcher_nccl" 10000 500 64 2 || rc=1
    grep -E '^(pair|single|NCCL|speed-up)' "$out/bench/matcher_nccl_pairs.log" |
      tee -a "$out/table.txt"
  fi
  return "$rc"
}

# issue 14: the CPU keypoint detector was sped up and its responses are shared by
# nmiregister and featurematch; the CUDA detector must still find its keypoints bit for
# bit (features_gpu), the CUDA chains must give what they gave (register_gpu,
# frameshare_cuda), the CPU chain shares its responses (frameshare).  Then the onboard
# chain's CPU figure on an idle machine: 2 of its cores (taskset), 1080p frames with a
# prior, default vs onboard preset; bounded 330 s (ONBOARD_BUDGET_S)
onboard () {
  setup_env
  local rc=0 t0=$SECONDS
  deadline=${deadline:-$(( SECONDS + ${ONBOARD_BUDGET_S:-330} ))}
  timeout "$(bounded 110)" python3 tools/run-tests.py "$build" --log-dir "$out/onboard-tests" \
    features_gpu register_gpu frameshare_cuda keypoints frameshare \
    > "$out/onboard-tests.txt" 2>&1
  local r=$?
  note "onboard tests (features_gpu ...)" "$r" $((SECONDS - t0)) \
    "$(tail -n 1 "$out/onboard-tests.txt"); logs onboard-tests/"
  [ "$r" = 0 ] || rc=1
  grep -hE 'identical|bit for bit|differ|^FAIL' "$out"/onboard-tests/features_gpu.log \
    2>/dev/null | head -n 8 | sed 's/^/    /' | tee -a "$out/table.txt"
  t0=$SECONDS
  mkdir -p "$out/onboard"
  local cores
  cores=$(taskset -pc $$ 2>/dev/null | sed 's/.*: //' | cut -d, -f1 | cut -d- -f1)
  cores="${cores:-0},$(( ${cores:-0} + 1 ))"
  BUILD=$build FRAMES=20 timeout "$(bounded 70)" bash pipelines/onboard.sh make \
    "$out/onboard/data" > "$out/onboard/make.txt" 2>&1
  BUILD=$build RUNS=3 DEF_FRAMES=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive \
    timeout "$(bounded 150)" taskset -c "$cores" bash pipelines/onboard.sh bench \
    "$out/onboard/data" "$out/onboard" > "$out/onboard.txt" 2>&1
  r=$?
  note "onboard CPU chain, 2 cores ($cores)" "$r" $((SECONDS - t0)) \
    "$(grep -o 'process CPU [0-9.]* ms' "$out/onboard.txt" | tail -n 3 | tr '\n' ';')"
  [ "$r" = 0 ] || rc=1
  grep -E 'run [0-9]|process CPU|accuracy' "$out/onboard.txt" | sed 's/^/    /' |
    tee -a "$out/table.txt"
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

# flightacc: issue 13's "Done when" accuracy through `nmilocalize ! nmiregister` at
# their defaults (tests/test_nmilocalize_pose.c): synthesized frames at any heading,
# 0.5-2 px/px, pitch and roll to 15 degrees, lens distortion, priors off by 10 m, 10
# degrees, 10%; error over every frame pixel against the truth.  Every (backend, prior
# kind, placement) runs as its own process, all at once: CUDA, and the CPU (frames
# inside the control) with the remaining cores shared out; each stops taking new frames at FLIGHTACC_BUDGET_S (240) and
# reports the frames it did.  Rows: n, within 0.5 px (unflagged), flagged, more than 2
# px wrong without a flag, median/worst RMS of the unflagged, ms per frame (wall, under
# this shared load).  Pass: every process exits 0 (no wrong result without a flag);
# the 98/95/95 per cent goals are read off the table (FLIGHTACC_REQUIRE=980,950,950
# makes them a failure).  The pose path needs GDAL: a BUILD without it skips, saying so.
# FLIGHTACC_FRAMES (100), FLIGHTACC_EDGE_FRAMES (50), FLIGHTACC_KINDS ("full position
# none"), FLIGHTACC_CPU_EDGE, FLIGHTACC_BUDGET_S, FLIGHTACC_REQUIRE; FLIGHTACC_SCALE_MIN /
# FLIGHTACC_SCALE_MAX (0.5 / 2: the draw of ground-resolution ratios; the issue's range
# is 0.25 / 4, which grows the control to fit), FLIGHTACC_SEED (9000: frames the
# flags were not tuned on; the sixth session's figures were seed 4000),
# FLIGHTACC_WIDTH / FLIGHTACC_HEIGHT (240 / 180: the frames' size; at 0.25 control px a
# frame px a 240 x 180 frame covers 60 x 45 control px, too little to pin a homography
# to 0.5 frame px, where 640 x 480 frames registered 30 of 30: docs/benchmarks.md).
flightacc () {
  setup_env
  local exe=$build/tests/test_nmilocalize_pose t0=$SECONDS rc=0
  mkdir -p "$out/flightacc"
  rm -f "$out/flightacc.skips"
  if ! grep -q '^#define GR_HAVE_GDAL 1' "$build/config.h" 2>/dev/null; then
    note "flightacc" 0 0 "SKIPPED: $build was built without GDAL (the pose priors need it: stage a build with GDAL)"
    return 0
  fi
  [ -x "$exe" ] || { note "flightacc" 1 0 "no $exe"; return 1; }
  local frames=${FLIGHTACC_FRAMES:-100} edge_frames=${FLIGHTACC_EDGE_FRAMES:-50}
  local budget=${FLIGHTACC_BUDGET_S:-240} cores
  cores=$(nproc)
  # the six CUDA processes need a core each; the CPU's three share the rest (the CPU
  # runs only the frames inside the control unless FLIGHTACC_CPU_EDGE=1)
  local cpu_threads=$(( (cores - 6) / 3 > 1 ? (cores - 6) / 3 : 1 ))
  local be kind place n pids=() logs=()
  for be in cuda cpu; do
    for place in inside edge; do
      [ "$be" = cpu ] && [ "$place" = edge ] && [ -z "${FLIGHTACC_CPU_EDGE:-}" ] && continue
      for kind in ${FLIGHTACC_KINDS:-full position none}; do
        n=$frames; [ "$place" = edge ] && n=$edge_frames
        local log=$out/flightacc/$be-$kind-$place.log
        ( [ "$be" = cpu ] && export OMP_NUM_THREADS=$cpu_threads
          [ "$be" = cuda ] && export OMP_NUM_THREADS=1
          GEOREG_TEST_BACKEND=$be GEOREG_POSE_PRIORS=$kind GEOREG_POSE_FRAMES=$n \
          GEOREG_POSE_PLACE=$place GEOREG_POSE_BUDGET_S=$budget \
          GEOREG_POSE_REQUIRE=${FLIGHTACC_REQUIRE:-} \
          GEOREG_POSE_SCALE_MIN=${FLIGHTACC_SCALE_MIN:-0.5} \
          GEOREG_POSE_SCALE_MAX=${FLIGHTACC_SCALE_MAX:-2} \
          GEOREG_POSE_SEED=${FLIGHTACC_SEED:-9000} \
          GEOREG_POSE_WIDTH=${FLIGHTACC_WIDTH:-240} \
          GEOREG_POSE_HEIGHT=${FLIGHTACC_HEIGHT:-180} \
          GST_REGISTRY=$out/flightacc/registry-$be-$kind-$place.bin \
          timeout "$(bounded $(( budget + 60 )))" "$exe" ) > "$log" 2>&1 &
        pids+=($!); logs+=("$log")
      done
    done
  done
  local i
  local r
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; r=$?
    # 77: the test skipped (no usable CUDA device): said, not a failure
    [ "$r" = 77 ] && echo "    skipped: ${logs[$i]##*/} ($(tail -n 1 "${logs[$i]}"))" >> "$out/flightacc.skips"
    [ "$r" = 0 ] || [ "$r" = 77 ] || { rc=1; echo "    FAIL (rc $r): ${logs[$i]##*/}" >> "$out/flightacc.skips"; }
  done
  {
    printf '| %-7s | %-8s | %-6s | %4s | %10s | %7s | %15s | %8s | %8s | %8s | %-9s |\n' backend \
      prior place n "<= 0.5 px" flagged "wrong, no flag" "median" "worst" "ms/frame" scales
    cat "$out"/flightacc/*.log | grep -h '^FLIGHTACC ' | sed 's/[a-z_]*=//g' |
      awk '{printf "| %-7s | %-8s | %-6s | %4d | %10d | %7d | %15d | %8s | %8s | %8s | %-9s |\n", $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12}'
    grep -h 'stopped after' "$out"/flightacc/*.log | sed 's/^/    /'
    cat "$out/flightacc.skips" 2>/dev/null
  } > "$out/flightacc.txt"
  note "flightacc" "$rc" $((SECONDS - t0)) "table in flightacc.txt; logs flightacc/"
  return "$rc"
}

case "$cmd" in
  stage) stage ;;
  restore) restore ;;
  suite) suite; rc=$?; table; exit "$rc" ;;
  sanitize) sanitize "${3:-}"; rc=$?; table; exit "$rc" ;;
  bench) bench; rc=$?; table; exit "$rc" ;;
  live) live; rc=$?; table; exit "$rc" ;;
  flight) flight; rc=$?; table; exit "$rc" ;;
  varifold) varifold; rc=$?; table; exit "$rc" ;;
  fits) fits; rc=$?; table; exit "$rc" ;;
  population) population; rc=$?; table; exit "$rc" ;;
  flightacc) flightacc; rc=$?; table; cat "$out/flightacc.txt" 2>/dev/null; exit "$rc" ;;
  multistream) multistream; rc=$?; table; exit "$rc" ;;
  nccl) nccl; rc=$?; table; exit "$rc" ;;
  matcher) matcher; rc=$?; table; exit "$rc" ;;
  loopback) loopback; rc=$?; table; exit "$rc" ;;
  pairs) pairs; rc=$?; table; exit "$rc" ;;
  onboard) onboard; rc=$?; table; exit "$rc" ;;
  # exec BUILD CMD...: CMD in the environment the steps above run in (the build's
  # libraries, plugins, GDAL and data): a one-off diagnostic run on the GPU machine
  exec) shift 2; setup_env; "$@"; exit $? ;;
  multigpu) deadline=$(( SECONDS + ${GPU_BUDGET_S:-540} )); setup_env; : > "$out/table.txt"
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
    sed -n '2,/SPDX/p' "$0" | sed 's/^# \{0,1\}//'
    exit 2 ;;
esac
