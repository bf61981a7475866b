#!/usr/bin/env bash
# georeg-multistream's start protocols on the CPU (issue 16; docs/multi-gpu.md): three
# paced streams (videotestsrc at 30 fps through featurematch), started and prerolled
# then played on one clock with their phases spread (the default), in phase
# (--in-phase), and played in turn (--no-preroll): every stream delivers every frame at
# its rate, the report names the protocol; out-of-range options are refused (exit 2).
# Needs videotestsrc (gst-plugins-base): skipped (77) without.
# SPDX-License-Identifier: LGPL-2.1-or-later
set -uo pipefail
B=${GEOREG_BUILD_ROOT:?}
tool=$B/pipelines/georeg-multistream
out=$(mktemp -d /tmp/georeg-ms-XXXXXX)
trap 'rm -rf "$out"' EXIT
P='videotestsrc pattern=ball num-buffers=45 ! video/x-raw,format=GRAY8,width=320,height=240,framerate=30/1 ! featurematch name=first backend=cpu max-features=100 post-messages=true ! identity name=last ! fakesink sync=true'
fail=0
check () {  # name, expected protocol line (grep -E, empty: none), options...
  local name=$1 want=$2; shift 2
  timeout 60 "$tool" "$@" --json "$out/$name.json" "$P" "$P" "$P" > "$out/$name.txt" 2>&1
  local rc=$?
  if grep -q 'no element "videotestsrc"' "$out/$name.txt"; then
    echo "SKIP: no videotestsrc (gst-plugins-base)"; exit 77
  fi
  if [ $rc != 0 ]; then
    echo "FAIL $name: exit $rc"; cat "$out/$name.txt"; fail=1; return
  fi
  if [ -n "$want" ] && ! grep -qE "$want" "$out/$name.txt"; then
    echo "FAIL $name: no line matching '$want'"; cat "$out/$name.txt"; fail=1; return
  fi
  # every stream: 45 frames, about 30 fps after its first 30 frames (paced by the sink)
  local bad
  bad=$(awk '/^stream +[0-9]+ +device/ { f = $19 + 0; if ($6 != 45 || f < 27 || f > 33) print }' \
      "$out/$name.txt")
  local n
  n=$(grep -cE '^stream +[0-9]+ +device' "$out/$name.txt")
  if [ "$n" != 3 ] || [ -n "$bad" ]; then
    echo "FAIL $name: $n stream lines, off: $bad"; cat "$out/$name.txt"; fail=1; return
  fi
  [ -s "$out/$name.json" ] || { echo "FAIL $name: no JSON"; fail=1; return; }
  echo "ok $name: $(grep -E '^after the first' "$out/$name.txt")"
}
check spread 'stream i.s frames due i / 3 of 33\.3 ms'
check in-phase 'every stream.s frames due together' --in-phase
check period 'i / 3 of 100\.0 ms' --period-ms 100
check no-preroll '' --no-preroll
for bad in "--period-ms -1" "--period-ms nan" "--period-ms 20000" "--period-ms 33x" \
    "--period-ms abc"; do
  # shellcheck disable=SC2086
  timeout 20 "$tool" $bad "$P" > "$out/bad.txt" 2>&1
  rc=$?
  if [ $rc != 2 ]; then echo "FAIL '$bad': exit $rc, expected 2"; fail=1; else echo "ok '$bad' refused"; fi
done
[ $fail = 0 ] && echo "all checks passed"
exit $fail
