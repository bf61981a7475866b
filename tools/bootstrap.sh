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
      python3          # pipelines/demo.sh's per-frame table; JSON/CSV checks in the tests
      gdal-bin         # test oracles: ogrinfo, gdalinfo, gdaltransform (tests/test_geo.c, test_georegexport.c)
      libopencv-dev    # test-only (matcher_opencv); already pulled in by plugins-bad-dev
      valgrind         # test-only (suite valgrind: tests/run-valgrind.sh)
      gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly ffmpeg python3-pip
      gobject-introspection libgirepository1.0-dev   # the Georeg-1.0 typelib (gst/meson.build)
      python3-gi gir1.2-gstreamer-1.0 python3-gst-1.0  # examples/capture.py and its test
                       # test-only: mpegtsmux/tsdemux, x264enc, ffprobe and PyPI's klvdata
                       # check georegklvenc's KLV (tests/test_georegklvenc.c)
      crossbuild-essential-arm64 qemu-user)  # test-only: tests/run-aarch64.sh
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

# test oracle: PyPI's klvdata decodes the MISB ST 0601 KLV that georegklvenc writes
if ! python3 -c 'import klvdata' 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo python3 -m pip install -q --break-system-packages klvdata \
    || echo "georeg: klvdata not installed: test_georegklvenc skips its klvdata check"
fi

[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release
fi
ninja -C "$build"
