#!/usr/bin/env bash
# Installs what georeg needs on Debian 12 and builds it into ./build (or $GEOREG_BUILD).
# Run as root (or with sudo available).  CUDA kernels are built when nvcc is found
# (PATH or /usr/local/cuda/bin); otherwise the CPU-only plugin is built.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${GEOREG_BUILD:-build}

pkgs=(build-essential meson ninja-build pkg-config libglib2.0-dev
      libexif-dev libexempi-dev   # telemetry priors: EXIF and XMP of drone photos (kernels/telemetry.c)
      libyaml-dev      # camera calibration files, OpenCV YAML/JSON (kernels/camera.c)
      libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev
      gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
      libgdal-dev libpng-dev libjpeg-dev
      libopencv-dev    # test-only (matcher_opencv); already pulled in by plugins-bad-dev
      valgrind)        # test-only (suite valgrind: tests/run-valgrind.sh)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "georeg: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release
fi
ninja -C "$build"
