#!/usr/bin/env python3
"""Shrinks the GDAL closure tools/gpu.sh packs for the GPU machine (issue 18).

Debian's libgdal links some 40 libraries for drivers a windowed control never uses
(PDF, HDF, netCDF, HEIF, SpatiaLite, databases, KML, ...), and they pull in 80 more:
about 33 MB packed, which with .gstroot and the build does not fit the device tool's
64 MiB carry.  libgdal is linked with BIND_NOW, so a library can only be left out if
something of its name defines every symbol the others take from it: for each library
named here this writes such a stand-in (functions that abort with a message naming the
library; version queries, which GDAL makes while registering its drivers, return a
string), data the size of the original's), with the original's symbol versions and
soname, then drops every library that nothing kept still needs.  Reading GeoTIFF, COG
and VRT (GTiff, VRT, libtiff, PROJ, SQLite, curl) stays real; a driver whose library was
replaced aborts when it is actually used, saying so.  tools/gpu.sh's stage checks the
result by running the windowed-control test with only this folder's libraries.

usage: gdal_stub.py LIBDIR ROOTLIB... -- STUB_SONAME_PREFIX...
"""
import os
import re
import subprocess
import sys


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def needed(path):
    out = run("readelf", "-d", "-W", path)
    return re.findall(r"\(NEEDED\).*\[(.+?)\]", out)


def undefined(path):
    """{name: version or None} the object takes from others."""
    refs = {}
    for line in run("nm", "-D", "--undefined-only", path).splitlines():
        parts = line.split()
        if len(parts) >= 2:
            name, _, ver = parts[-1].partition("@")
            refs[name] = ver.lstrip("@") or None
    return refs


def defined(path):
    """{name: (type, size, version or None, default)} of the object's exports."""
    defs = {}
    for line in run("nm", "-D", "--defined-only", "-S", path).splitlines():
        parts = line.split()
        if len(parts) == 4:
            _, size, typ, sym = parts
        elif len(parts) == 3:
            _, typ, sym = parts
            size = "0"
        else:
            continue
        name, at, ver = sym.partition("@")
        default = ver.startswith("@") or not at
        ver = ver.lstrip("@") or None
        if name not in defs or default:
            defs[name] = (typ, int(size, 16), ver, default)
    return defs


def stub(libdir, soname, users, tmp):
    real = os.path.join(libdir, soname)
    defs = defined(real)
    want = {}
    for u in users:
        for name, ver in undefined(u).items():
            if name in defs:
                want[name] = defs[name]
    c = ['#include <stdio.h>', '#include <stdlib.h>',
         'static void gone (const char *s) { fprintf (stderr, "%s: not carried to this '
         'machine (tools/gdal_stub.py stand-in), %s called\\n", "' + soname + '", s); '
         'abort (); }']
    versions = {}
    for i, (name, (typ, size, ver, _)) in enumerate(sorted(want.items())):
        if typ in "TtWiI" and "vers" in name.lower():
            # version queries are made when GDAL registers its drivers (netCDF's
            # nc_inq_libvers): a string that says what this is
            c.append('const char *f%d (void) __asm__ ("%s");' % (i, name))
            c.append('const char *f%d (void) { return "0 (not carried)"; }' % i)
        elif typ in "TtWiI":
            c.append('void f%d (void) __asm__ ("%s");' % (i, name))
            c.append('void f%d (void) { gone ("%s"); }' % (i, name))
        else:
            c.append('unsigned char d%d[%d] __asm__ ("%s") __attribute__ ((aligned (16))) '
                     '= { 0 };' % (i, max(size, 16), name))
        versions.setdefault(ver, []).append(name)
    src = os.path.join(tmp, soname + ".c")
    with open(src, "w") as f:
        f.write("\n".join(c) + "\n")
    cmd = ["cc", "-shared", "-fPIC", "-O0", "-Wl,-soname," + soname, "-o", real + ".stub", src]
    named = [v for v in versions if v]
    if named:
        vs = os.path.join(tmp, soname + ".map")
        with open(vs, "w") as f:
            for v in named:
                extra = versions[v] + (versions.get(None, []) if v == named[0] else [])
                f.write("%s { global: %s; };\n" % (v, "; ".join(extra)))
        cmd.insert(1, "-Wl,--version-script=" + vs)
    subprocess.run(cmd, check=True)
    os.replace(real + ".stub", real)
    return len(want)


def main():
    args = sys.argv[1:]
    sep = args.index("--")
    libdir, roots, prefixes = args[0], args[1:sep], args[sep + 1:]
    tmp = os.path.join(libdir, ".stub-src")
    os.makedirs(tmp, exist_ok=True)
    present = set(os.listdir(libdir))
    stubs = sorted(n for n in present if any(n.startswith(p) for p in prefixes))
    # what still needs each library once the stubbed ones no longer need anything
    kept = set()
    todo = [r for r in roots]
    while todo:
        p = todo.pop()
        for n in needed(p):
            if n in present and n not in kept:
                kept.add(n)
                if n not in stubs:
                    todo.append(os.path.join(libdir, n))
    users = list(roots) + [os.path.join(libdir, n) for n in kept if n not in stubs]
    total = 0
    for s in stubs:
        if s in kept:
            total += stub(libdir, s, users, tmp)
    dropped = 0
    for n in present:
        if n not in kept and os.path.isfile(os.path.join(libdir, n)):
            os.remove(os.path.join(libdir, n))
            dropped += 1
    subprocess.run(["rm", "-rf", tmp], check=True)
    print("gdal_stub: %d libraries stood in for (%d symbols), %d no longer needed, %d kept"
          % (len([s for s in stubs if s in kept]), total, dropped, len(kept)))


main()
