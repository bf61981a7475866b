#!/usr/bin/env bash
# The onboard preset: 1920x1080 frames with a navigation prior through
# nmilocalize ! nmiregister ! featurematch on the CPU (a companion computer or a
# Jetson-class module without its GPU), and the benchmark that measures its speed
# beside its accuracy, against the live chain's settings.
#
#   pipelines/onboard.sh make  [DIR]          control + 1080p flight (raw I420) + truth
#   pipelines/onboard.sh bench [DIR] [OUT]    default and onboard, each through
#                                             georeg-live-bench --truth: fps, p50/p99
#                                             latency and RMS error vs truth over the
#                                             frame; JSON under OUT
#   pipelines/onboard.sh launch [DIR]         the onboard chain through gst-launch-1.0
#   pipelines/onboard.sh props [loc|reg|fm]   print the onboard property set
#
# DIR defaults to $BUILD/onboard-data, BUILD (environment) to build-cpu.  FRAMES
# (environment, default 30) frames for make; RUNS (default 3) runs of each chain in
# bench (take the best: the machine may be shared); DEF_FRAMES (default 6) frames
# the default chain reads (it takes seconds a frame on a CPU); SIGMA (default 40)
# the prior's standard deviation per axis in control pixels (what the aircraft's
# navigation gives: GNSS plus attitude times height); BACKEND (default cpu).
# Besides fps and latency, georeg-live-bench prints the process CPU time a frame:
# on a shared machine that, not the wall time, says what the chain costs.
#
# The onboard preset (why each value):
#   nmilocalize  search-radius = 3 SIGMA around the prior's frame centre (set per frame
#                from telemetry; georeg-live-bench --prior emulates it): the search
#                covers what the prior allows, not the whole control.  frame-scale =
#                control-scale = 0.05 as the live chain: a 96x54 search template,
#                above the few thousand pixels NMI needs.
#   nmiregister  max-keypoints=200 (a homography needs 4; 200 spread by the 8x6 grid
#                keep it well conditioned and LO-RANSAC well fed); window-size=31:
#                nmilocalize's sub-pixel peak at 1/20 scale leaves the prior within
#                half a search pixel (10 frame pixels), so +-10 px of search per
#                keypoint covers it, 441 offsets instead of 3,969; refine-window=15
#                (+-2 px around the first fit, which is sub-pixel).
#   featurematch max-features=200 max-images=3: the pair fits against the held frames
#                are most of featurematch's time on a CPU; 3 recent frames keep the
#                chain of overlaps that a stitcher needs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmd=${1:-}
build=${BUILD:-build-cpu}
dir=${2:-$build/onboard-data}
sigma=${SIGMA:-40}
backend=${BACKEND:-cpu}
export GST_PLUGIN_PATH_1_0=$PWD/$build/gst${GST_PLUGIN_PATH_1_0:+:$GST_PLUGIN_PATH_1_0}

W=1920; H=1080
# properties the two chains share
LOC_COMMON="control-location=$dir/control.png frame-scale=0.05 control-scale=0.05 backend=$backend"
REG_COMMON="control-location=$dir/control.png backend=$backend"
FM_COMMON="backend=$backend"
# the live chain's settings (pipelines/live-4k.sh): whole-control search, 2,000
# keypoints, 73-pixel windows, 500 features against 8 held frames
DEF_LOC=""
DEF_REG="max-keypoints=2000"
DEF_FM="max-features=500 max-images=8"
# the onboard preset (see above)
ONB_LOC=""                      # search-x/-y/-radius come from the prior, per frame
ONB_REG="max-keypoints=200 window-size=31 refine-window=15"
ONB_FM="max-features=200 max-images=3"

src () {        # $1 = frames to read (-1: all)
  echo "filesrc location=$dir/flight.i420 blocksize=$((W * H * 3 / 2)) num-buffers=$1" \
    "! rawvideoparse format=i420 width=$W height=$H framerate=30/1"
}

chain () {      # $1 = def|onb
  local l r f n
  if [ "$1" = def ]; then l=$DEF_LOC; r=$DEF_REG; f=$DEF_FM; n=${DEF_FRAMES:-6}
  else l=$ONB_LOC; r=$ONB_REG; f=$ONB_FM; n=-1; fi
  echo "$(src "$n") ! nmilocalize name=first $LOC_COMMON $l ! nmiregister $REG_COMMON $r" \
    "! featurematch name=last $FM_COMMON $f ! fakesink sync=false"
}

case "$cmd" in
make)
  mkdir -p "$dir"
  # the elements and georeg-flight read its luminance (band 0)
  "$build/pipelines/georeg-synth" control --out "$dir/control.png" --width 3200 \
    --height 2000 --seed 7
  # a straight diagonal flight; truth = each frame's top-left on the control
  "$build/pipelines/georeg-flight" "$dir/control.png" --width $W --height $H \
    --frames "${FRAMES:-30}" > "$dir/flight.i420" 2> "$dir/truth.txt"
  ls -l "$dir"
  ;;
bench)
  out=${3:-$dir}; mkdir -p "$out"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
  for mode in def onb; do
    prior=""; [ "$mode" = onb ] && prior="--prior $sigma"
    for ((r = 1; r <= ${RUNS:-3}; r++)); do
      printf '%-8s run %d: ' "$([ $mode = def ] && echo default || echo onboard)" "$r"
      # shellcheck disable=SC2086
      "$build/pipelines/georeg-live-bench" --json "$out/onboard-$mode-$r.json" \
        --truth "$dir/truth.txt" $prior "$(chain $mode)"
    done
  done
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  ;;
launch)
  # without the benchmark's per-frame prior: a fixed search centre in the middle of
  # the flight, radius over the whole path
  eval gst-launch-1.0 "$(chain onb | sed 's/nmilocalize name=first/nmilocalize name=first search-x=1600 search-y=1000 search-radius=1000/')"
  ;;
props)
  case "${2:-}" in
  loc) echo "$ONB_LOC search-radius=$((3 * sigma))" ;;
  reg) echo "$ONB_REG" ;;
  fm) echo "$ONB_FM" ;;
  *) echo "nmilocalize: search-radius=$((3 * sigma)) (3 x the prior's sigma)"
     echo "nmiregister: $ONB_REG"
     echo "featurematch: $ONB_FM" ;;
  esac
  ;;
*)
  sed -n '2,38p' "$0"; exit 2 ;;
esac
