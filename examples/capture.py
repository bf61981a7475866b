#!/usr/bin/env python3
"""georeg capture example (PyGObject): registers a folder of frames onto a control
image, prints each frame's results as they arrive (in control pixels, in the control's
CRS and in WGS84 longitude/latitude) and writes the footprints as GeoJSON.

    python3 examples/capture.py --control ortho.tif --frames DIR --geojson out.geojson

DIR holds frame_0000.png, frame_0001.png, ... (as georeg-synth writes them).  The
results come from the buffers through the Georeg typelib (gst/georeg-results.h), with no
ctypes; docs/python.md lists every field.  Needs python3-gi, gir1.2-gstreamer-1.0 and
the georeg plugin and typelib (GST_PLUGIN_PATH, GI_TYPELIB_PATH when not installed).
"""
import argparse
import json
import math
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("Georeg", "1.0")
from gi.repository import Georeg, GLib, Gst  # noqa: E402


def flag_names(flags_class, value):
    """The names of the bits set in value (Georeg.NmiRegisterFlags etc.)."""
    names = []
    for name in dir(flags_class):
        bit = getattr(flags_class, name)
        if name.isupper() and isinstance(bit, flags_class) and int(bit) and value & int(bit):
            names.append(name.lower().replace("_", "-"))
    return names


class Capture:
    def __init__(self, args):
        self.args = args
        self.frames = 0
        self.registered = 0
        self.crs = None
        control = args.control
        crs = f" crs={args.crs}" if args.crs else ""
        desc = (
            f"multifilesrc location={args.frames}/frame_%04d.png caps=image/png,framerate=5/1 "
            "! pngdec ! videoconvert ! video/x-raw,format=GRAY8 "
            f"! nmilocalize control-location={control} band={args.band} "
            f"frame-scale={args.scale} control-scale={args.scale} "
            f"! nmiregister control-location={control} band={args.band}{crs} "
            f"! georegexport control-location={control}{crs} geojson-location={args.geojson} "
            "! fakesink name=sink"
        )
        self.pipeline = Gst.parse_launch(desc)
        sink = self.pipeline.get_by_name("sink")
        sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, self.on_buffer)
        self.ms = {}

    def on_buffer(self, pad, info):
        buf = info.get_buffer()
        loc = Georeg.buffer_get_localization(buf)
        reg = Georeg.buffer_get_registration(buf)
        line = [f"frame {self.frames:4d}"]
        if loc is not None:
            line.append(f"coarse ({loc.center_x:8.1f}, {loc.center_y:8.1f}) px "
                        f"score {loc.score:.3f} ratio {loc.peak_ratio:.2f}")
        if reg is None:
            line.append("no registration")
        else:
            names = flag_names(Georeg.NmiRegisterFlags, reg.flags)
            if reg.has_transform:
                self.registered += 1
                fp = reg.get_footprint_control()
                line.append(f"registered: {reg.inliers} inliers of {reg.matches}, "
                            f"rms {reg.rms:.2f} px, top-left ({fp[0]:.1f}, {fp[1]:.1f})")
                if reg.has_map:
                    fm = reg.get_footprint_map()
                    line.append(f"map ({fm[0]:.2f}, {fm[1]:.2f})")
                if reg.has_lonlat:
                    # the CRS of the map fields: "EPSG:<code>", or WKT without a code
                    self.crs = reg.get_crs()
                    ll = reg.get_footprint_lonlat()
                    line.append(f"{self.crs if reg.epsg else 'CRS (WKT)'}, centre "
                                f"lon {reg.center_lon:.7f} lat {reg.center_lat:.7f}, "
                                f"top-left lon {ll[0]:.7f} lat {ll[1]:.7f}")
            else:
                line.append("not registered")
            line.append("flags " + (",".join(names) if names else "none"))
        print(" | ".join(line), flush=True)
        self.frames += 1
        return Gst.PadProbeReturn.OK

    def run(self):
        loop = GLib.MainLoop()
        bus = self.pipeline.get_bus()
        bus.add_signal_watch()
        status = {"ok": True}

        def on_message(_bus, msg):
            if msg.type == Gst.MessageType.EOS:
                loop.quit()
            elif msg.type == Gst.MessageType.ERROR:
                err, dbg = msg.parse_error()
                print(f"error: {err.message} ({dbg})", file=sys.stderr)
                status["ok"] = False
                loop.quit()
            elif msg.type == Gst.MessageType.ELEMENT:
                s = msg.get_structure()
                # plain fields read without python3-gst-1.0; the footprint arrays
                # (GstValueArray) need it (docs/python.md)
                if s.get_name() == "nmiregister":
                    self.ms[s.get_value("frame")] = s.get_value("register-ms")

        bus.connect("message", on_message)
        self.pipeline.set_state(Gst.State.PLAYING)
        loop.run()
        self.pipeline.set_state(Gst.State.NULL)
        bus.remove_signal_watch()
        return status["ok"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--control", required=True, help="georeferenced control image")
    p.add_argument("--crs", default="",
                   help="the control's CRS when its file has none (no GeoTIFF CRS, no .prj)")
    p.add_argument("--frames", required=True, help="folder of frame_%%04d.png")
    p.add_argument("--geojson", required=True, help="footprints written here")
    p.add_argument("--band", type=int, default=1, help="control band (0 = luminance)")
    p.add_argument("--scale", type=float, default=0.25, help="coarse search scale")
    args = p.parse_args()
    Gst.init(None)
    cap = Capture(args)
    if not cap.run():
        return 1
    with open(args.geojson) as f:
        features = json.load(f)["features"]
    ms = [v for v in cap.ms.values() if v is not None and not math.isnan(v)]
    mean_ms = sum(ms) / len(ms) if ms else float("nan")
    print(f"{cap.frames} frames, {cap.registered} registered, {len(features)} features in "
          f"{args.geojson}, nmiregister {mean_ms:.1f} ms per frame, "
          f"CRS {cap.crs or 'unknown'}")
    return 0 if cap.frames and len(features) == cap.frames else 1


if __name__ == "__main__":
    sys.exit(main())
