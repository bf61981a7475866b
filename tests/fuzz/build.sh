#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) into
# build-fuzz/ (or $1), outside meson: the kernels' parsers and loaders are compiled
# straight into each target, instrumented; GDAL, libpng, libjpeg and GLib are the
# system's (not instrumented).  Needs clang and libclang-rt-dev (Debian 12: clang-14,
# libclang-rt-14-dev); installs them when missing.  Then, for example:
#   build-fuzz/fuzz_pointset -max_total_time=600 -rss_limit_mb=2048 \
#       build-fuzz/corpus/pointset tests/fuzz/corpus/pointset
# (tests/fuzz/run.sh does that for every target).  CI does not need clang: the meson
# suite 'fuzz' replays the committed corpora through the same targets (replay_main.c).
# SPDX-License-Identifier: LGPL-2.1-or-later
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$src/build-fuzz}
CC=${CC:-clang}

if ! command -v "$CC" >/dev/null || ! echo 'int LLVMFuzzerTestOneInput(const char*d,long n){return 0;}' \
    | "$CC" -x c - -fsanitize=fuzzer -o /dev/null 2>/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
    clang libclang-rt-dev
fi

mkdir -p "$out"
have_gdal=0
pkgs="glib-2.0 libpng libjpeg zlib"
if pkg-config --exists gdal; then have_gdal=1; pkgs="$pkgs gdal"; fi
# the kernels' config.h, as meson writes it, for a CPU-only build
cat > "$out/config.h" <<CONF
#pragma once
#define GR_HAVE_CUDA 0
#define GR_HAVE_GDAL $have_gdal
CONF

flags=(-g -O1 -fno-omit-frame-pointer -std=gnu11
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -I"$out" -I"$src/kernels" -I"$src/tests/fuzz" $(pkg-config --cflags $pkgs))
libs=($(pkg-config --libs $pkgs) -lm)

build() {  # name sources...
  local name=$1; shift
  echo "fuzz: $name"
  "$CC" "${flags[@]}" -o "$out/$name" "$@" "${libs[@]}"
}
build fuzz_pointset "$src/tests/fuzz/fuzz_pointset.c" "$src/kernels/pointset_io.c" "$src/kernels/gr_error.c"
# the raster loaders: dispatch, world files, PNG, JPEG (and GDAL when found)
raster=("$src/kernels/raster.c" "$src/kernels/raster_worldfile.c" "$src/kernels/raster_png.c"
  "$src/kernels/raster_jpeg.c" "$src/kernels/gr_error.c")
[ "$have_gdal" = 1 ] && raster+=("$src/kernels/raster_gdal.c")
build fuzz_worldfile "$src/tests/fuzz/fuzz_worldfile.c" "${raster[@]}"
build fuzz_raster "$src/tests/fuzz/fuzz_raster.c" "${raster[@]}"
if [ "$have_gdal" = 1 ]; then
  build fuzz_raster_gdal "$src/tests/fuzz/fuzz_raster_gdal.c" "${raster[@]}"
fi
# the point-set elements in a GstHarness (sources compiled in, elements registered
# statically: no plugin loading)
if pkg-config --exists gstreamer-check-1.0; then
  gflags=($(pkg-config --cflags gstreamer-1.0 gstreamer-base-1.0 gstreamer-check-1.0))
  glibs=($(pkg-config --libs gstreamer-1.0 gstreamer-base-1.0 gstreamer-check-1.0))
  echo "fuzz: fuzz_pointset_stream"
  "$CC" "${flags[@]}" "${gflags[@]}" -I"$src/gst" -o "$out/fuzz_pointset_stream" \
    "$src/tests/fuzz/fuzz_pointset_stream.c" "$src/gst/gstpointsetparse.c" \
    "$src/gst/gstpointsetenc.c" "$src/gst/gstpointset.c" "$src/kernels/pointset_io.c" "$src/kernels/gr_error.c" \
    "${glibs[@]}" "${libs[@]}"
fi
echo "fuzz targets in $out"
