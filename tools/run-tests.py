#!/usr/bin/env python3
"""Runs a build's meson tests from meson-info/intro-tests.json, without meson.

For the GPU machine, whose meson (if any) cannot read a build folder made by Debian's
meson 1.0.  Each test gets the environment meson would give it, adjusted to the carried
GStreamer runtime: the host's system plugin folder in GST_PLUGIN_PATH_1_0 becomes
$GST_PLUGIN_SYSTEM_PATH (set by .gstroot/env.sh), and LD_LIBRARY_PATH is prepended to,
not replaced.  Exit status 77 is a skip, as in meson.

usage: tools/run-tests.py BUILD_DIR [--suite S]... [--log-dir DIR] [NAME...]
"""
import argparse
import json
import os
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--suite", action="append", default=[])
    ap.add_argument("--log-dir", default=None)
    ap.add_argument("names", nargs="*")
    a = ap.parse_intermixed_args()
    with open(os.path.join(a.build, "meson-info", "intro-tests.json")) as f:
        tests = json.load(f)
    host_plugins = "/usr/lib/x86_64-linux-gnu/gstreamer-1.0"
    carried_plugins = os.environ.get("GST_PLUGIN_SYSTEM_PATH", "")
    counts = {"ok": 0, "fail": 0, "skip": 0, "timeout": 0}
    for t in tests:
        suites = [s.split(":")[-1] for s in t["suite"]]
        if a.suite and not set(a.suite) & set(suites):
            continue
        if a.names and t["name"] not in a.names:
            continue
        env = dict(os.environ)
        for k, v in t["env"].items():
            if k == "GST_PLUGIN_PATH_1_0" and carried_plugins:
                v = v.replace(host_plugins, carried_plugins)
            if k == "LD_LIBRARY_PATH" and os.environ.get(k):
                v = v + ":" + os.environ[k]
            env[k] = v
        t0 = time.time()
        try:
            p = subprocess.run(t["cmd"], env=env, cwd=t.get("workdir") or None,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=t["timeout"])
            rc, out = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc, out = None, e.stdout or b""
        dt = time.time() - t0
        status = ("TIMEOUT" if rc is None else "OK" if rc == 0 else
                  "SKIP" if rc == 77 else "FAIL")
        counts[{"OK": "ok", "FAIL": "fail", "SKIP": "skip", "TIMEOUT": "timeout"}[status]] += 1
        print(f"{t['name']:<28} {status:<8} {dt:8.2f}s  rc={rc}", flush=True)
        if a.log_dir:
            os.makedirs(a.log_dir, exist_ok=True)
            with open(os.path.join(a.log_dir, t["name"] + ".log"), "wb") as f:
                f.write(out)
        if status in ("FAIL", "TIMEOUT"):
            sys.stdout.write(out.decode(errors="replace")[-3000:] + "\n")
    print(f"{counts['ok']} passed, {counts['fail'] + counts['timeout']} failed, "
          f"{counts['skip']} skipped")
    return 1 if counts["fail"] or counts["timeout"] else 0


if __name__ == "__main__":
    sys.exit(main())
