#!/usr/bin/env bash
# The main job: synthesized drone frames (another band through a non-linear tone curve,
# noise, small rotations) localized over a control image by nmilocalize, one line per
# frame: offset, map position, score, error against the known truth.
# CPU by default; CUDA when a usable GPU is there (backend=auto).
#   GEOREG_DATA=<folder with aukerman.png>  use the real orthomosaic as control
#   GEOREG_BACKEND=cpu|cuda|auto            force a backend (default auto)
#   GEOREG_DEMO_FRAMES=N                    number of frames (default 20)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${GEOREG_BUILD:-build}
bash tools/bootstrap.sh >/dev/null
work=$(mktemp -d /tmp/georeg-demo-XXXXXX)
synth=$build/pipelines/georeg-synth
export GST_PLUGIN_PATH=$PWD/$build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

if [ -n "${GEOREG_DATA:-}" ] && [ -f "$GEOREG_DATA/aukerman.png" ]; then
  control=$GEOREG_DATA/aukerman.png          # real survey orthomosaic, alpha = no data
  size=(--width 512 --height 384); scale=0.25; nodata=255   # opaque white background
else
  control=$work/control.png                  # procedural, georeferenced (world file)
  "$synth" control --out "$control" --width 1600 --height 1200 --seed 3
  size=(--width 640 --height 480); scale=0.2; nodata=-1
fi
"$synth" frames --control "$control" --out "$work/frames" --count "${GEOREG_DEMO_FRAMES:-20}" \
  "${size[@]}" --control-band 1 --frame-band 2 --tone scurve --noise 3 \
  --rotation-max 2 --format gray8 --seed 11
echo
"$build/pipelines/georeg-demo" --frames "$work/frames" --control "$control" --band 1 \
  --control-nodata "$nodata" --frame-scale "$scale" --control-scale "$scale" --backend "${GEOREG_BACKEND:-auto}"
echo "frames, truth and control in $work"
