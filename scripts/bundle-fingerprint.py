#!/usr/bin/env python3
"""Fingerprints every bundle under a directory (default gpu-work/, as
bench/prepare_all.py leaves it): the SHA-256 of each bundle's image (PTX,
cubin, SPIR-V, source text) and of its manifest, keyed by the bundle's path.

A refactoring of the compiler below the schedule should leave every kernel
byte-identical; this is how that is checked without a GPU:

  /usr/bin/python3 bench/prepare_all.py            # before the change
  scripts/bundle-fingerprint.py --write /tmp/before.json
  ... change, rebuild ...
  /usr/bin/python3 bench/prepare_all.py            # after
  scripts/bundle-fingerprint.py --compare /tmp/before.json

--compare lists the bundles whose image or manifest differ, the ones that
appeared or vanished, and exits 1 when any did.

--printed adds the source every text backend prints for every example
(`tang-opt examples/X.mlir --tang-lower-<language>`, OpenCL C, C, Metal,
GLSL and WGSL, fused and not), keyed printed/<language>/<example>[-fused]:
the guard for a change to the printers, which needs no bench preparation.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(root: Path) -> dict:
    """{bundle path relative to root: {"image", "manifest"}}."""
    out = {}
    for manifest in sorted(root.rglob("manifest.json")):
        bundle = manifest.parent
        try:
            image = json.loads(manifest.read_text()).get("image")
        except (OSError, ValueError) as e:
            raise SystemExit(f"{manifest}: not a readable manifest: {e}")
        entry = {"manifest": sha256(manifest)}
        if image and (bundle / image).is_file():
            entry["image"] = sha256(bundle / image)
        out[str(bundle.relative_to(root))] = entry
    return out


LANGUAGES = ("opencl", "c", "metal", "glsl", "wgsl")


def printed(tang_bin: Path) -> dict:
    """{printed/<language>/<example>[-fused]: {"image"}}: the SHA-256 of
    what each text pipeline prints (or of its error, prefixed 'error:')."""
    out = {}
    for example in sorted((ROOT / "examples").glob("*.mlir")):
        for language in LANGUAGES:
            for fuse in (0, 1):
                r = subprocess.run(
                    [str(tang_bin / "tang-opt"), str(example),
                     f"--tang-lower-{language}=fuse={fuse}"],
                    capture_output=True, text=True)
                text = r.stdout if r.returncode == 0 else \
                    "error:" + r.stderr.replace(str(ROOT), "")
                key = f"printed/{language}/{example.stem}" + \
                    ("-fused" if fuse else "")
                out[key] = {"image": hashlib.sha256(
                    text.encode()).hexdigest()}
    return out


def compare(before: dict, after: dict) -> list:
    lines = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            lines.append(f"vanished  {key}")
        elif key not in before:
            lines.append(f"new       {key}")
        else:
            changed = [k for k in ("image", "manifest")
                       if before[key].get(k) != after[key].get(k)]
            if changed:
                lines.append(f"changed   {key} ({', '.join(changed)})")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(ROOT / "gpu-work"),
                    help="where the bundles are (default gpu-work/)")
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="JSON",
                       help="write the fingerprints to JSON")
    group.add_argument("--compare", metavar="JSON",
                       help="compare with fingerprints written before")
    ap.add_argument("--printed", action="store_true",
                    help="also fingerprint what the text backends print "
                         "for every example ($TANG_BIN, default build/bin)")
    ap.add_argument("--no-bundles", action="store_true",
                    help="skip the bundles under --root (with --printed)")
    args = ap.parse_args()
    root = Path(args.root)
    now = {}
    if not args.no_bundles:
        if not root.is_dir():
            print(f"error: {root} is not a directory (run "
                  f"bench/prepare_all.py first)", file=sys.stderr)
            return 2
        now = fingerprint(root)
    if args.printed:
        now.update(printed(Path(os.environ.get("TANG_BIN",
                                               ROOT / "build" / "bin"))))
    if args.write:
        Path(args.write).write_text(json.dumps(now, indent=1) + "\n")
        print(f"{len(now)} fingerprints -> {args.write}")
        return 0
    before = json.loads(Path(args.compare).read_text())
    if args.no_bundles:
        before = {k: v for k, v in before.items() if k.startswith("printed/")}
    if not args.printed:
        before = {k: v for k, v in before.items()
                  if not k.startswith("printed/")}
    diff = compare(before, now)
    for line in diff:
        print(line)
    print(f"{len(now)} fingerprints, {len(diff)} differ from {args.compare}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
