#!/usr/bin/env bash
# The main job, end to end on real imagery: drone frames cut from a real orthomosaic
# (another band through a gamma curve, noise, small rotations; the truth is known), and
# two frames buried in noise that the registration flags, go through
#   nmilocalize ! nmiregister ! featurematch ! georegexport
# and come out as files a GIS opens: footprints.geojson (WGS84), footprints.csv, one
# GeoTIFF per registered frame, and footprints.png (the footprints over the control,
# registered in green, flagged in red).  CPU by default; CUDA when a usable GPU is there.
#   GEOREG_DATA=<folder with aukerman.png>  the full-size orthomosaic instead of the
#                                           bundled 80% sample (pipelines/data)
#   GEOREG_BACKEND=cpu|cuda|auto            force a backend (default auto)
#   GEOREG_DEMO_FRAMES=N                    number of frames (default 12)
#   GEOREG_DEMO_OUT=DIR                     where the results go (default: a new folder
#                                           under /tmp)
# The orthomosaic ships without a georeference: the demo gives its GeoTIFF copy a
# nominal one (UTM zone 17N, EPSG:32617, 0.1 m pixels at the full size).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${GEOREG_BUILD:-build}
bash tools/bootstrap.sh >/dev/null
work=$(mktemp -d /tmp/georeg-demo-XXXXXX)
out=${GEOREG_DEMO_OUT:-$work/results}
mkdir -p "$out"
export GST_PLUGIN_PATH=$PWD/$build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}
backend=${GEOREG_BACKEND:-auto}
frames=${GEOREG_DEMO_FRAMES:-12}

if [ -n "${GEOREG_DATA:-}" ] && [ -f "$GEOREG_DATA/aukerman.png" ]; then
  source_png=$GEOREG_DATA/aukerman.png; pixel=0.1
else
  source_png=pipelines/data/aukerman-sample.png; pixel=0.125   # CC0, pipelines/data/README.md
fi
# the nominal georeference: top-left corner at (431000, 4577000) m, north up
size=$(gdalinfo "$source_png" | sed -n 's/^Size is \([0-9]*\), \([0-9]*\)/\1 \2/p')
read -r w h <<<"$size"
control=$work/ortho.tif
gdal_translate -q -of GTiff -a_srs EPSG:32617 \
  -a_ullr 431000 4577000 "$(awk "BEGIN { printf \"%.6f\", 431000 + $w * $pixel }")" \
  "$(awk "BEGIN { printf \"%.6f\", 4577000 - $h * $pixel }")" "$source_png" "$control"

"$build/pipelines/georeg-synth" frames --control "$control" --out "$work/frames" \
  --count "$frames" --width 400 --height 300 --control-band 1 --frame-band 2 --tone gamma \
  --noise 2 --rotation-max 3 --seed 11 >/dev/null
# and two frames buried in noise with inverted tones, which the registration flags
"$build/pipelines/georeg-synth" frames --control "$control" --out "$work/hard" --count 2 \
  --width 400 --height 300 --control-band 1 --frame-band 2 --tone invert --noise 70 \
  --rotation-max 3 --seed 99 >/dev/null
for i in 0 1; do
  cp "$work/hard/frame_000$i.png" "$work/frames/$(printf 'frame_%04d.png' $((frames + i)))"
done
echo "georeg demo: $frames frames (400 x 300) cut from $source_png and 2 noisy ones," \
  "backend $backend"

gst-launch-1.0 -q multifilesrc location="$work/frames/frame_%04d.png" index=0 \
    stop-index=$((frames + 1)) caps=image/png,framerate=5/1 \
  ! pngdec ! videoconvert ! video/x-raw,format=GRAY8 \
  ! nmilocalize control-location="$control" band=1 frame-scale=0.3 control-scale=0.3 \
      backend="$backend" post-messages=false \
  ! nmiregister control-location="$control" band=1 backend="$backend" post-messages=false \
  ! featurematch backend="$backend" \
  ! georegexport control-location="$control" source-location="frame_%04d.png" \
      geojson-location="$out/footprints.geojson" csv-location="$out/footprints.csv" \
      geotiff-dir="$out/geotiff" picture-location="$out/footprints.png" \
  ! fakesink

# one line per frame from the CSV, with the error of the footprint's corners against the
# truth (frame pixels; truth.csv's homography maps pixel indices: corner = index + 0.5)
python3 - "$work/frames/truth.csv" "$out/footprints.csv" "$pixel" <<'PY'
import csv, math, sys
truth = {r["file"]: r for r in csv.DictReader(open(sys.argv[1]))}
px = float(sys.argv[3])
counts = {}
for r in csv.DictReader(open(sys.argv[2])):
    q = r["quality"]
    counts[q] = counts.get(q, 0) + 1
    t, err = truth.get(r["file"]), "-"
    if int(r["frame"]) >= len(truth):
        t = None                     # the noisy frames: no truth kept
    if t and r["tl_x"]:
        h = [float(t[k]) for k in ("h00", "h01", "h02", "h10", "h11", "h12", "h20", "h21", "h22")]
        w_, h_ = 400, 300
        worst = 0.0
        for name, (x, y) in zip(("tl", "tr", "br", "bl"), ((0, 0), (w_, 0), (w_, h_), (0, h_))):
            u, v = x - 0.5, y - 0.5
            d = h[6] * u + h[7] * v + h[8]
            cx = (h[0] * u + h[1] * v + h[2]) / d + 0.5
            cy = (h[3] * u + h[4] * v + h[5]) / d + 0.5
            ex = (float(r[name + "_x"]) - 431000) / px - cx
            ey = (4577000 - float(r[name + "_y"])) / px - cy
            worst = max(worst, math.hypot(ex, ey) / float(t["scale"]))
        err = f"{worst:.2f}"
    print(f"{r['file']:16s} {q:10s} inliers {r['inliers']:>4s}  rms {r['rms_px']:>6s} px  "
          f"heading {r['heading_deg']:>7s}  gsd {r['gsd_m']:>7s} m  worst corner error {err} px")
print("\n" + ", ".join(f"{n} {q}" for q, n in sorted(counts.items())))
PY
echo
echo "results in $out:"
echo "  footprints.geojson  (WGS84; open in QGIS, or: ogrinfo -al $out/footprints.geojson)"
echo "  footprints.csv      one line per frame"
echo "  geotiff/*.tif       each registered frame on the map (EPSG:32617)"
echo "  footprints.png      the footprints over the control (green registered, red flagged)"
