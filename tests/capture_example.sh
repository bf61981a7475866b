#!/usr/bin/env bash
# examples/capture.py in CI: a synthesized control and frames, the example registers
# them through PyGObject (Georeg typelib, no ctypes) and writes GeoJSON; this checks its
# per-frame lines, its summary, that ogrinfo reads the GeoJSON as WGS84, and that every
# field of the result types reads from Python.
#   capture_example.sh PYTHON     (meson passes the interpreter that has python3-gi)
set -euo pipefail
py=$1
build=${GEOREG_BUILD_ROOT:?}
src=${GEOREG_SOURCE_ROOT:?}
if ! "$py" -c 'import gi; gi.require_version("Gst", "1.0")' 2>/dev/null; then
  echo "SKIP: $py has no python3-gi / gir1.2-gstreamer-1.0"; exit 77
fi
export GI_TYPELIB_PATH=$build/gst${GI_TYPELIB_PATH:+:$GI_TYPELIB_PATH}
export LD_LIBRARY_PATH=$build/gst${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
work=$(mktemp -d /tmp/georeg-capture-XXXXXX)
trap 'rm -rf "$work"' EXIT
synth=$build/pipelines/georeg-synth
"$synth" control --out "$work/control.png" --width 640 --height 480 --seed 3 >/dev/null
"$synth" frames --control "$work/control.png" --out "$work/frames" --count 3 --width 256 \
  --height 192 --control-band 1 --frame-band 2 --tone gamma --seed 5 >/dev/null
"$py" "$src/examples/capture.py" --control "$work/control.png" --crs EPSG:32617 \
  --frames "$work/frames" --geojson "$work/out.geojson" | tee "$work/log"
[ "$(grep -c '^frame ' "$work/log")" -eq 3 ] || { echo "FAIL: 3 frame lines expected"; exit 1; }
grep -q '^3 frames, 3 registered, 3 features' "$work/log" || { echo "FAIL: summary"; exit 1; }
if command -v ogrinfo >/dev/null; then
  info=$(ogrinfo -ro -al -so "$work/out.geojson")
  grep -q 'Feature Count: 3' <<<"$info" && grep -q 'WGS 84' <<<"$info" \
    || { echo "FAIL: ogrinfo: $info"; exit 1; }
fi
# every documented field and flag of the result types reads from Python (the values
# of a real run were printed above)
"$py" - <<'PY'
import gi, math
gi.require_version("Gst", "1.0"); gi.require_version("Georeg", "1.0")
from gi.repository import Gst, Georeg
Gst.init(None)
reg_fields = ["flags", "model", "has_transform", "has_map", "keypoints", "matches",
              "inliers", "rms", "prior_x", "prior_y", "prior_scale"]
loc_fields = ["flags", "offset_x", "offset_y", "control_x", "control_y", "center_x",
              "center_y", "frame_scale", "control_scale", "score", "second_score",
              "peak_ratio", "valid_pixels", "has_map", "map_x", "map_y"]
pair_fields = ["frame", "matches", "inliers", "flags", "rms"]
for cls, fields in ((Georeg.Registration, reg_fields), (Georeg.Localization, loc_fields),
                    (Georeg.MatchPair, pair_fields)):
    obj = cls()
    for f in fields:
        getattr(obj, f)
for m in ("get_frame_to_control", "get_frame_to_map", "get_footprint_control",
          "get_footprint_map"):
    assert len(getattr(Georeg.Registration(), m)()) in (8, 9), m
assert len(Georeg.MatchPair().get_homography()) == 9
b = Gst.Buffer.new_allocate(None, 16, None)
assert Georeg.buffer_get_registration(b) is None
assert Georeg.buffer_get_localization(b) is None
assert Georeg.buffer_get_match_pairs(b)[0] is False
assert int(Georeg.NmiRegisterFlags.LOW_INLIERS) == 1 << 9
assert int(Georeg.NmiLocalizeFlags.AMBIGUOUS) == 1 << 3
print("every field readable")
PY
