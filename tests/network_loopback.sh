#!/usr/bin/env bash
# A capture node and a GPU host on the loopback (issue 16, item 3; docs/multi-gpu.md):
# a flight recorded as MPEG-TS (H.264 video + its MISB ST 0601 KLV from georegklvenc)
# is sent by a sender pipeline as RTP over UDP (tsparse ! rtpmp2tpay ! udpsink),
# received by a receiver pipeline (udpsrc ! rtpmp2tdepay ! tsdemux) that decodes the
# video and registers it (nmilocalize ! nmiregister); the receiver's results (each
# frame's nmiregister message, less its timings and timestamp) and its KLV packets must
# equal those of the local pipeline on the same file (filesrc ! tsdemux).  127.0.0.1
# only; bounded: every pipeline runs under a timeout, and the receiver is stopped (EOS)
# once the sender is done.
# Arguments: BACKEND (cpu|cuda, default cpu: cuda decodes with nvh264dec into CUDA
# memory).  GEOREG_LOOPBACK_4K=1: 3840 x 2160 frames.  Needs x264enc, an H.264
# decoder, Matroska, the udp and tcp elements: skipped (77) without; the KLV needs
# GDAL (georegklvenc) and the MPEG-TS elements, else the video alone goes, recorded in
# Matroska and sent over TCP, and its results are compared.
# SPDX-License-Identifier: LGPL-2.1-or-later
set -uo pipefail
backend=${1:-cpu}
B=${GEOREG_BUILD_ROOT:?}
for e in x264enc udpsrc tcpserversrc tcpclientsink matroskamux matroskademux; do
  gst-inspect-1.0 "$e" > /dev/null 2>&1 || { echo "SKIP: no $e element"; exit 77; }
done
have () { gst-inspect-1.0 "$1" > /dev/null 2>&1; }
# MPEG-TS with KLV as RTP over UDP where the elements exist (georegklvenc: builds with
# GDAL); else (the GPU machine: no GDAL, no MPEG-TS plugins in its GStreamer runtime)
# the video alone, recorded in Matroska and sent over TCP (tcpclientsink to the
# receiver's tcpserversrc: reliable, and the receiver ends when the sender closes)
ts=0; klv=0
have mpegtsmux && have tsdemux && have tsparse && have rtpmp2tpay && ts=1
[ "${GEOREG_LOOPBACK_TRANSPORT:-}" = tcp ] && ts=0     # the other path, on demand
[ $ts = 1 ] && have georegklvenc && klv=1
# GEOREG_LOOPBACK_REQUIRE_KLV=1 (tools/gpu.sh loopback): the KLV must go, no fallback
if [ "${GEOREG_LOOPBACK_REQUIRE_KLV:-0}" = 1 ] && [ $klv = 0 ]; then
  missing=""
  for e in mpegtsmux tsdemux tsparse rtpmp2tpay rtpmp2tdepay georegklvenc; do
    have $e || missing+=" $e"
  done
  echo "FAIL: the KLV path is required; missing:${missing:- (GEOREG_LOOPBACK_TRANSPORT=tcp)}"
  exit 1
fi
[ "$backend" = cuda ] && ! gst-inspect-1.0 nvh264dec > /dev/null 2>&1 &&
  { echo "SKIP: no nvh264dec"; exit 77; }
d=$(mktemp -d)
rpid=""
cleanup () { [ -n "$rpid" ] && kill "$rpid" 2> /dev/null; rm -rf "$d"; }
trap cleanup EXIT
frames=6
# small frames in CI; GEOREG_LOOPBACK_4K=1: 3840 x 2160 frames over a 5120 x 3072
# control, searched at 1/20 scale as pipelines/live-4k.sh does (the gpu suite)
cw=800; ch=600; fw=320; fh=240; scale=0.25; kp=100
[ "${GEOREG_LOOPBACK_4K:-0}" = 1 ] && { cw=5120; ch=3072; fw=3840; fh=2160; scale=0.05; kp=500; }
"$B/pipelines/georeg-synth" control --out "$d/control.png" --width $cw --height $ch \
  --seed 3 > /dev/null &&
  "$B/pipelines/georeg-synth" frames --control "$d/control.png" --out "$d/f" \
    --count $frames --width $fw --height $fh --seed 4 > /dev/null || exit 1
CTL="control-location=$d/control.png"
# the capture node's recording: video + KLV (from a coarse position: what the node's
# own telemetry would give) in MPEG-TS
kbranch=""
[ $klv = 1 ] && kbranch="t. ! queue ! videoconvert ! video/x-raw,format=GRAY8 \
  ! nmilocalize $CTL frame-scale=$scale control-scale=$scale backend=cpu \
  ! georegklvenc $CTL crs=EPSG:32617 ! mux."
mux="mpegtsmux name=mux"; rec=$d/flight.ts
[ $ts = 1 ] || { mux="matroskamux name=mux"; rec=$d/flight.mkv; }
# shellcheck disable=SC2086
timeout 120 gst-launch-1.0 -q multifilesrc location="$d/f/frame_%04d.png" index=0 \
  stop-index=$((frames - 1)) caps=image/png,framerate=5/1 ! pngdec ! videoconvert \
  ! video/x-raw,format=I420 ! tee name=t \
  t. ! queue ! x264enc speed-preset=veryfast key-int-max=5 tune=zerolatency ! h264parse ! mux. \
  $kbranch $mux ! filesink location="$rec" || { echo "recording failed"; exit 1; }
# decoded on the CPU, or by nvh264dec into CUDA memory that the georeg elements read
# in place (a GPU pipeline)
# (a named decoder, not decodebin: decodebin plugging its decoder in a live pipeline
# left it in PAUSED now and then, and the receiver decoded nothing)
cpudec=""
for e in avdec_h264 openh264dec; do have $e && { cpudec=$e; break; }; done
[ -z "$cpudec" ] && [ "$backend" = cpu ] && { echo "SKIP: no H.264 decoder"; exit 77; }
dec="$cpudec ! videoconvert ! video/x-raw,format=GRAY8"
[ "$backend" = cuda ] && dec="nvh264dec ! video/x-raw(memory:CUDAMemory),format=NV12"
# the GPU host's chain (the same on both sides; no spaces inside an element's
# arguments: the description is split on spaces, never eval'ed)
chain () {
  # an unbounded queue: a slow analysis must never stall the socket's reader (the
  # kernel would drop datagrams)
  echo "queue max-size-buffers=0 max-size-bytes=0 max-size-time=0 ! h264parse ! $dec \
    ! nmilocalize $CTL frame-scale=$scale control-scale=$scale backend=$backend \
    ! nmiregister $CTL max-keypoints=$kp backend=$backend ! fakesink sync=false async=false"
  # async=false: in the live receiver, a sink linked late (tsdemux's pads come with the
  # PMT) could miss the pipeline's move to PLAYING and wait in preroll for ever; the
  # KLV's queue then filled (its 1 s limit), tsdemux blocked on it and no frame reached
  # the decoder (seen in 2 runs of 6 on the loaded CPU machine, gdb: the KLV filesink
  # in gst_base_sink_wait_preroll, tsdemux's thread in the full queue)
  [ $klv = 1 ] && echo "dm. ! queue ! meta/x-klv ! filesink sync=false async=false location=$d/$1.klv"
}
# each frame's result: nmiregister's element message (gst-launch -m), less the fields
# that differ from run to run (the timings, *-ms) or with the receiver's clock
# (timestamp)
results () {
  grep -o '(element): nmiregister, .*' "$1" |
    sed -E 's/timestamp=\(guint64\)[0-9]+, //; s/[a-z-]+-ms=\(double\)[-0-9.e+]+, //g'
}
t0=$SECONDS
local="filesrc location=$rec ! tsdemux name=dm dm. ! $(chain local)"
[ $ts = 1 ] || local="filesrc location=$rec ! matroskademux ! $(chain local)"
# shellcheck disable=SC2086
timeout 120 gst-launch-1.0 -m $local > "$d/local.log" 2>&1 ||
  { tail -n 20 "$d/local.log"; echo "local pipeline failed"; exit 1; }
echo "local pipeline: $((SECONDS - t0)) s"
# the receiver first (it binds the port), then the sender, paced at the stream's rate
port=$((20000 + RANDOM % 20000))
t0=$SECONDS
# the socket's reader only queues (unbounded): a streaming thread busy plugging the
# decoder or analysing would leave datagrams to the kernel, which drops them
uq="queue max-size-buffers=0 max-size-bytes=0 max-size-time=0"
recv="udpsrc address=127.0.0.1 port=$port buffer-size=8388608 \
  caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=MP2T,payload=33 \
  ! $uq ! rtpmp2tdepay ! tsdemux name=dm dm. ! $(chain remote)"
[ $ts = 1 ] || recv="tcpserversrc host=127.0.0.1 port=$port ! $uq ! matroskademux \
  ! $(chain remote)"
send="filesrc location=$rec ! tsparse set-timestamps=true ! rtpmp2tpay ! udpsink \
  host=127.0.0.1 port=$port sync=true"
[ $ts = 1 ] || send="filesrc location=$rec ! tcpclientsink host=127.0.0.1 port=$port"
# (no eval, no subshell: $rpid is gst-launch itself, which the SIGINT must reach)
# shellcheck disable=SC2086
env --default-signal=INT stdbuf -oL gst-launch-1.0 -m -e $recv > "$d/receiver.log" 2>&1 &
rpid=$!
# the UDP socket is bound once the receiver is PLAYING (datagrams sent before are
# lost); the TCP one listens from PAUSED on (its preroll waits for the sender)
ready="Setting pipeline to PLAYING"
[ $ts = 1 ] || ready="Setting pipeline to PAUSED"
for ((i = 0; i < 600; i++)); do
  grep -q "$ready" "$d/receiver.log" 2> /dev/null && break
  kill -0 "$rpid" 2> /dev/null || break
  sleep 0.1
done
sleep 0.5
# (a few tries: over TCP the receiver's socket may not listen yet)
for ((try = 0; try < 10; try++)); do
  # shellcheck disable=SC2086
  timeout 60 gst-launch-1.0 -q $send > "$d/sender.log" 2>&1 && break
  sleep 1
done
[ $try -lt 10 ] || { cat "$d/sender.log"; echo "sender failed"; exit 1; }
# the receiver ends with an EOS (gst-launch -e on SIGINT: a background job of a
# script starts with SIGINT ignored, hence env --default-signal) once results flow and
# no new one came for 3 s (the decoder holds the last frames until the EOS; an EOS
# before tsdemux has exposed its pads would never reach the sinks; frames still
# in flight are processed before the EOS, which follows them), or after 90 s
# (over TCP the receiver ends by itself when the sender closes)
last=-1; still=0
for ((i = 0; i < 900 && still < 30; i++)); do
  kill -0 "$rpid" 2> /dev/null || break
  n=$(grep -ac "(element): nmiregister, " "$d/receiver.log")
  if [ "$n" -ge 1 ] && [ "$n" = "$last" ]; then still=$((still + 1)); else still=0; fi
  last=$n
  sleep 0.1
done
kill -INT "$rpid" 2> /dev/null
for ((i = 0; i < 30; i++)); do kill -0 "$rpid" 2> /dev/null || break; sleep 1; done
kill -0 "$rpid" 2> /dev/null && { echo "receiver did not stop: killed"; kill -9 "$rpid";
  tail -n 20 "$d/receiver.log"; }
wait "$rpid"; rrc=$?
rpid=""
echo "receiver: $((SECONDS - t0)) s, rc $rrc"
[ "$rrc" = 0 ] || { cat "$d/receiver.log"; echo "receiver failed"; exit 1; }
fail=0
results "$d/local.log" > "$d/local.txt"
results "$d/receiver.log" > "$d/remote.txt"
nl=$(wc -l < "$d/local.txt"); nr=$(wc -l < "$d/remote.txt")
echo "frames: local $nl, received $nr (sent $frames)"
[ "$nl" = $frames ] || { echo "FAIL: local pipeline registered $nl frames"; fail=1; }
grep -q "has-transform=(boolean)true" "$d/local.txt" ||
  { echo "FAIL: no frame registered"; fail=1; }
if ! diff "$d/local.txt" "$d/remote.txt" > "$d/diff.txt"; then
  head -c 2000 "$d/diff.txt"
  echo "FAIL: the received stream's results differ from the local ones"; fail=1
fi
kb=0
if [ $klv = 1 ]; then
  if [ ! -s "$d/local.klv" ] || ! cmp "$d/local.klv" "$d/remote.klv"; then
    echo "FAIL: KLV differs (or none)"; fail=1
  fi
  kb=$(stat -c %s "$d/remote.klv")
fi
[ $fail = 0 ] && echo "loopback ($backend, $([ $ts = 1 ] && echo MPEG-TS, RTP/UDP ||
  echo Matroska, TCP)): $nr frames of ${fw}x$fh, results and $kb bytes of KLV identical to" \
  "the local pipeline's"
exit $fail
