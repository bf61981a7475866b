#!/usr/bin/env bash
# georeg-photos on photos synthesized from the real orthomosaic (GEOREG_DATA): a
# georeferenced GeoTIFF copy of aukerman.png (UTM 17N, 0.1 m, made here), 5 photos
# (another band through a gamma curve, noise, small rotations) and one corrupt file.
# Checks: the corrupt file is reported and skipped, the others come out in the GeoJSON
# (ogrinfo: WGS84), the CSV and as GeoTIFFs with the control's CRS, and every
# footprint corner lies within 0.5 photo pixel (in metres) of the truth.
#   photos_data.sh PYTHON
set -euo pipefail
py=$1
build=${GEOREG_BUILD_ROOT:?}
if [ -z "${GEOREG_DATA:-}" ] || [ ! -f "$GEOREG_DATA/aukerman.png" ]; then
  echo "SKIP: GEOREG_DATA (with aukerman.png) is not set"; exit 77
fi
for t in gdal_translate ogrinfo gdalinfo; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (gdal-bin)"; exit 77; }
done
work=$(mktemp -d /tmp/georeg-photos-XXXXXX)
trap 'rm -rf "$work"' EXIT
gdal_translate -q -of GTiff -a_srs EPSG:32617 -a_ullr 431000 4577000 431105.3 4576919 \
  "$GEOREG_DATA/aukerman.png" "$work/ortho.tif"
"$build/pipelines/georeg-synth" frames --control "$work/ortho.tif" --out "$work/photos" \
  --count 5 --width 512 --height 384 --control-band 1 --frame-band 2 --tone gamma \
  --noise 2 --rotation-max 3 --margin 10 --seed 4 >/dev/null
head -c 4000 /dev/urandom > "$work/photos/DJI_corrupt.JPG"
set +e
"$build/pipelines/georeg-photos" --control "$work/ortho.tif" --band 1 --out "$work/out" \
  "$work"/photos/frame_*.png "$work/photos/DJI_corrupt.JPG" > "$work/log" 2> "$work/err"
rc=$?
set -e
cat "$work/log" "$work/err"
[ "$rc" -eq 0 ] || { echo "FAIL: exit status $rc"; exit 1; }
grep -q '6 photos: 5 registered, 0 doubtful, 0 not registered, 1 unreadable' "$work/log" \
  || { echo "FAIL: summary"; exit 1; }
grep -q "skipping '.*DJI_corrupt.JPG'" "$work/err" || { echo "FAIL: corrupt file not reported"; exit 1; }
info=$(ogrinfo -ro -al -so "$work/out/footprints.geojson")
grep -q 'Feature Count: 5' <<<"$info" && grep -q 'WGS 84' <<<"$info" \
  || { echo "FAIL: ogrinfo: $info"; exit 1; }
for i in 0 1 2 3 4; do
  gdalinfo "$work/out/frame_000$i.tif" | grep -q 'ID\["EPSG",32617\]' \
    || { echo "FAIL: frame_000$i.tif has not the control's CRS"; exit 1; }
done
"$py" - "$work/photos/truth.csv" "$work/out/footprints.csv" <<'PY'
import csv, math, sys
truth = {r["file"]: r for r in csv.DictReader(open(sys.argv[1]))}
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 5, len(rows)
g = (431000.0, 0.1, 0.0, 4577000.0, 0.0, -0.1)    # the control's geotransform
W, H = 512, 384
worst = 0.0
for r in rows:
    t = truth[r["file"].split("/")[-1]]
    h = [float(t[k]) for k in ("h00", "h01", "h02", "h10", "h11", "h12", "h20", "h21", "h22")]
    px_m = float(t["scale"]) * 0.1                   # one photo pixel on the ground
    for name, (x, y) in zip(("tl", "tr", "br", "bl"), ((0, 0), (W, 0), (W, H), (0, H))):
        # the truth maps pixel indices: corners are index - 0.5, results + 0.5
        u, v = x - 0.5, y - 0.5
        w = h[6] * u + h[7] * v + h[8]
        cx = (h[0] * u + h[1] * v + h[2]) / w + 0.5
        cy = (h[3] * u + h[4] * v + h[5]) / w + 0.5
        mx, my = g[0] + cx * g[1] + cy * g[2], g[3] + cx * g[4] + cy * g[5]
        err = math.hypot(float(r[name + "_x"]) - mx, float(r[name + "_y"]) - my) / px_m
        worst = max(worst, err)
print(f"footprints: worst corner {worst:.3f} photo pixels from the truth")
sys.exit(0 if worst <= 0.5 else 1)
PY
