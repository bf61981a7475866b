#!/usr/bin/env bash
# Accuracy of nmilocalize on the real orthomosaic (issue: >= 95 of 100 frames within
# 1 px of the truth at the search scale).  Frames come from band 2 (green) through a
# random monotone tone curve with noise and small rotations; the control is band 1
# (red) of the same survey.  usage: localize_accuracy.sh BACKEND [FRAMES] [REQUIRED]
set -euo pipefail
backend=${1:-cpu}; count=${2:-100}; need=${3:-95}
if [ -z "${GEOREG_DATA:-}" ] || [ ! -f "$GEOREG_DATA/aukerman.png" ]; then
  echo "SKIP: GEOREG_DATA does not name a folder holding aukerman.png"; exit 77
fi
build=${GEOREG_BUILD_ROOT:?run through meson test}
work=$(mktemp -d /tmp/georeg-accuracy-XXXXXX)
trap 'rm -rf "$work"' EXIT
ctl=$GEOREG_DATA/aukerman.png
"$build/pipelines/georeg-synth" frames --control "$ctl" --out "$work" --count "$count" \
  --width 512 --height 384 --control-band 1 --frame-band 2 --tone lut --noise 4 \
  --rotation-max 2 --format gray8 --seed 2026
"$build/pipelines/georeg-demo" --frames "$work" --control "$ctl" --band 1 \
  --control-nodata 255 --frame-scale 0.25 --control-scale 0.25 --backend "$backend" --require "$need"
