#!/usr/bin/env bash
# aarch64 (Jetson-class modules, Arm boards): cross-builds the CPU-only plugin, kernels
# and tests with Debian's cross toolchain (crossbuild-essential-arm64) and runs the
# tests under qemu-user.  Ends with one line: "N passed, N failed, N skipped".
#
# The arm64 libraries come from Debian's archive but are NOT installed into the system:
# arm64 is added as a dpkg architecture (so that apt can fetch arm64 packages), the
# packages below are downloaded (apt-get download: no dependency resolution, nothing
# installed or removed) and unpacked into a sysroot, build-aarch64-sysroot/.  (Installing
# them multiarch is not possible next to the amd64 -dev packages: the gir1.2-* packages
# they depend on are not co-installable, and apt would remove amd64 -dev packages.)
# The sysroot is named to meson by a second cross file written into it
# (meson-cross.ini, beside tests/cross/aarch64-linux-gnu.ini).
# -fno-tree-loop-vectorize: Debian 12's aarch64 gcc 12.2 stops with an internal
# compiler error (vect_transform_reduction, at -O2 and -O3)
# on loops of tests/test_raster.c and tests/test_shoot.c (the kernels' SIMD code uses
# explicit vector types and is not affected).  Everything is built (the element tests
# too: a compile check); the tests below run.
#
# Tests: GEOREG_AARCH64_TESTS (space-separated meson test names) or, by default, the
# kernel tests of the cpu suite (plain C, no GStreamer plugin loading).  The element
# tests are left out: they need the arm64 GStreamer plugin set (plugins-base/good and
# their dependency tree) in the sysroot and a plugin scanner under qemu; the kernels
# are where the architecture matters (SIMD paths, OpenMP, float behaviour).  `synth` is
# left out too: it spawns the arm64 georeg-synth tool through sh, which needs qemu
# registered with binfmt_misc (a machine-wide setting this script does not make); and
# `shoot`, which takes about 12 minutes under qemu on 2 cores (add it with
# GEOREG_AARCH64_TESTS="... shoot" where time allows).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
build=${GEOREG_AARCH64_BUILD:-build-aarch64}
sysroot=$root/build-aarch64-sysroot
tests=${GEOREG_AARCH64_TESTS:-"nmi_dense image peak raster keypoints fit nmi_sparse pointset matcher pairfit"}
fail() { echo "run-aarch64: $*" >&2; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

# runtime libraries (the closure of glib, gstreamer, gstreamer-plugins-base, libpng and
# libjpeg, without libc / libgcc, which the cross toolchain provides) and the -dev
# packages whose headers and .pc files the build reads
pkgs=(libglib2.0-0 libffi8 libpcre2-8-0 libmount1 libblkid1 libselinux1 zlib1g
      libgstreamer1.0-0 libunwind8 libdw1 libelf1 liblzma5 libbz2-1.0 libzstd1 libcap2
      libgstreamer-plugins-base1.0-0 liborc-0.4-0 libpng16-16 libjpeg62-turbo libgomp1
      libglib2.0-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
      libpng-dev libjpeg62-turbo-dev zlib1g-dev liborc-0.4-dev libffi-dev libpcre2-dev
      libmount-dev libblkid-dev libselinux1-dev libsepol-dev libunwind-dev libdw-dev
      libelf-dev liblzma-dev libbz2-dev libzstd-dev
      # telemetry priors and calibration files (kernels/telemetry.c, camera.c)
      libexif12 libexif-dev libexempi8 libexempi-dev libexpat1 libyaml-0-2 libyaml-dev)

command -v aarch64-linux-gnu-gcc >/dev/null || fail "no aarch64-linux-gnu-gcc (apt-get install crossbuild-essential-arm64)"
command -v qemu-aarch64 >/dev/null || fail "no qemu-aarch64 (apt-get install qemu-user)"

if [ ! -f "$sysroot/.complete" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo dpkg --add-architecture arm64 || fail "dpkg --add-architecture arm64"
    $sudo apt-get update -q || fail "apt-get update"
  fi
  debs=$root/build-aarch64-debs
  rm -rf "$sysroot" "$debs"
  mkdir -p "$sysroot" "$debs"
  arm=()
  for p in "${pkgs[@]}"; do arm+=("$p:arm64"); done
  (cd "$debs" && apt-get download "${arm[@]}") ||
    { $sudo apt-get update -q && (cd "$debs" && apt-get download "${arm[@]}"); } ||
    fail "apt-get download of the arm64 packages"
  for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$sysroot" || fail "unpacking $d"; done
  # absolute symlinks (e.g. lib -> /lib/...) would point into the build machine
  find "$sysroot" -type l -lname '/*' | while read -r l; do
    ln -sfn "$sysroot$(readlink "$l")" "$l"
  done
  rm -rf "$debs"
  touch "$sysroot/.complete"
fi

libdirs="$sysroot/usr/lib/aarch64-linux-gnu:$sysroot/lib/aarch64-linux-gnu"
mkdir -p "$build"
cat > "$sysroot/meson-cross.ini" <<EOF
# written by tests/run-aarch64.sh
[properties]
sys_root = '$sysroot'
pkg_config_libdir = ['$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig', '$sysroot/usr/share/pkgconfig']

[built-in options]
c_args = ['-I$sysroot/usr/include/aarch64-linux-gnu', '-fno-tree-loop-vectorize']
cpp_args = ['-I$sysroot/usr/include/aarch64-linux-gnu']
c_link_args = ['-Wl,-rpath-link,$libdirs']
cpp_link_args = ['-Wl,-rpath-link,$libdirs']

[binaries]
exe_wrapper = ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu', '-E', 'LD_LIBRARY_PATH=$libdirs']
EOF
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --cross-file tests/cross/aarch64-linux-gnu.ini \
      --cross-file "$sysroot/meson-cross.ini" -Dcuda=disabled -Dgdal=disabled \
      --buildtype=release || fail "meson setup (cross)"
fi
ninja -C "$build" || fail "cross build"
readelf -h "$build/gst/libgstgeoreg.so" | grep -q AArch64 || fail "the plugin is not an aarch64 binary"

log=$(mktemp)
# shellcheck disable=SC2086
meson test -C "$build" --no-rebuild --print-errorlogs --num-processes "$(nproc)" \
    --timeout-multiplier 4 $tests 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
count() { sed -n "s/^$1:[[:space:]]*\([0-9]*\).*/\1/p" "$log" | tail -n 1; }
ok=$(count Ok); failn=$(count Fail); skip=$(count Skipped); tout=$(count Timeout)
rm -f "$log"
echo "${ok:-0} passed, $(( ${failn:-0} + ${tout:-0} )) failed, ${skip:-0} skipped"
exit "$rc"
