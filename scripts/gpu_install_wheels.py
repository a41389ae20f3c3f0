#!/usr/bin/env python3
"""Unpacks the brought-along wheels (scripts/gpu_bring_along.sh) that this interpreter lacks into TARGET,
a folder for PYTHONPATH. A wheel is a zip laid out for site-packages, so unpacking needs neither pip nor
the network. Installed distributions at the wheel's version or newer are left alone (TARGET sits before
site-packages on PYTHONPATH, so it must not shadow them with older code).
Usage: gpu_install_wheels.py WHEEL_DIR TARGET    prints one line per wheel: installed / present / skipped."""

import importlib.metadata
import re
import sys
import zipfile
from pathlib import Path


def version_key(text):
    # Numeric release parts only (2.14.4 -> (2, 14, 4)); enough to order the pinned versions brought along.
    return tuple(int(n) for n in re.findall(r"\d+", text.split("+")[0])[:4])


def main():
    wheel_dir, target = Path(sys.argv[1]), Path(sys.argv[2])
    target.mkdir(parents=True, exist_ok=True)
    for wheel in sorted(wheel_dir.glob("*.whl")):
        name, version = wheel.name.split("-")[:2]
        try:
            have = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have is not None and version_key(have) >= version_key(version):
            print(f"present   {name} {have} (brought {version})")
            continue
        with zipfile.ZipFile(wheel) as z:
            # <name>.data/ holds scripts and headers meant elsewhere; the importable code is at the root.
            z.extractall(target, [m for m in z.namelist() if not m.split("/", 1)[0].endswith(".data")])
        print(f"installed {name} {version} into {target}" + (f" (had {have})" if have else ""))


if __name__ == "__main__":
    main()
