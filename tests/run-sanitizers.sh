#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build of georeg (CPU only) running the
# cpu test suite, and the data suite when GEOREG_DATA names shared/data's folder.
# Called by .ci/run after tests/run.sh (which installs the packages); by hand:
#
#   bash tests/run-sanitizers.sh [meson test args...]    # build dir: ./build-asan
#                                        (or $GEOREG_ASAN_BUILD)
#
# Any ASan report (heap/stack/global overflow, use after free, double free, ...), any
# UBSan report (also float-cast-overflow) and any leak at exit fails the test that
# triggered it.  GLib and GStreamer under the sanitizers:
#  - G_SLICE=always-malloc: GSlice's own allocator would hide overflows and leaks;
#  - CK_FORK=no (set by the tests' environment too): one process per test, so the
#    leak check runs once, on the whole test;
#  - the plugin scanner (gst-plugin-scanner, not instrumented) must load the
#    instrumented plugin: it runs through a wrapper that preloads libasan (leak
#    checking off there: it only loads plugins);
#  - LeakSanitizer suppressions: tests/lsan.supp (GLib's and GStreamer's one-time
#    allocations; each entry documented).
# Ends with one line: "N passed, N failed, N skipped".
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$src"
build=${GEOREG_ASAN_BUILD:-build-asan}
case $build in /*) ;; *) build=$src/$build ;; esac

if ! command -v meson >/dev/null || ! pkg-config --exists gstreamer-check-1.0; then
  bash tools/bootstrap.sh >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
fi
cc=${CC:-cc}
if [ ! -f "$build/build.ninja" ]; then
  # float-cast-overflow is not part of -fsanitize=undefined in GCC: asked for here
  # (NaN or out-of-range coordinates cast to int are undefined behaviour)
  meson setup "$build" -Db_sanitize=address,undefined -Dcuda=disabled \
    -Dbuildtype=debugoptimized -Dc_args=-fsanitize=float-cast-overflow \
    -Dcpp_args=-fsanitize=float-cast-overflow \
    -Dc_link_args=-fsanitize=float-cast-overflow \
    -Dcpp_link_args=-fsanitize=float-cast-overflow \
    || { echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C "$build" || { echo "0 passed, 1 failed"; exit 1; }

libasan=$("$cc" -print-file-name=libasan.so)
scanner=$(pkg-config --variable=pluginscannerdir gstreamer-1.0)/gst-plugin-scanner
if [ ! -f "$libasan" ] || [ ! -x "$scanner" ]; then
  echo "run-sanitizers: libasan ($libasan) or gst-plugin-scanner ($scanner) not found"
  echo "0 passed, 1 failed"
  exit 1
fi
cat > "$build/asan-plugin-scanner" <<EOF
#!/bin/sh
# gst-plugin-scanner with the ASan runtime first, so that it can load the instrumented
# plugin (written by tests/run-sanitizers.sh)
LD_PRELOAD="$libasan\${LD_PRELOAD:+:\$LD_PRELOAD}" ASAN_OPTIONS=detect_leaks=0 exec "$scanner" "\$@"
EOF
chmod +x "$build/asan-plugin-scanner"
export GST_PLUGIN_SCANNER="$build/asan-plugin-scanner"
# a registry written by another scanner may hold the plugin as blacklisted
rm -f "$build/tests/registry.bin"

export G_SLICE=always-malloc G_DEBUG=gc-friendly CK_FORK=no
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS=suppressions=$src/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

suites=(--suite cpu)
if [ -n "${GEOREG_DATA:-}" ] && [ -f "$GEOREG_DATA/aukerman.png" ]; then
  suites+=(--suite data)
fi
log=$(mktemp)
# instrumented code runs 2-4x slower: the tests' timeouts are tripled
meson test -C "$build" "${suites[@]}" --print-errorlogs --num-processes "$(nproc)" \
  --timeout-multiplier 3 "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
count() { sed -n "s/^$1:[[:space:]]*\([0-9]*\).*/\1/p" "$log" | tail -n 1; }
ok=$(count Ok); fail=$(count Fail); skip=$(count Skipped); tout=$(count Timeout)
rm -f "$log"
if [ -z "$ok" ] && [ "$rc" -ne 0 ]; then fail=1; fi
echo "${ok:-0} passed, $(( ${fail:-0} + ${tout:-0} )) failed, ${skip:-0} skipped"
exit "$rc"
