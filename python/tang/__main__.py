"""``python -m tang --version``: the package's version and the tools it
would use (tang.compiler.find_tool)."""

import argparse
import sys

from . import __version__
from .compiler import find_tool
from .lang import TangError


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tang",
                                 description="tang's Python front end")
    ap.add_argument("--version", action="store_true",
                    help="print the version and where tang-opt and "
                         "tang-run are found")
    args = ap.parse_args(argv)
    if not args.version:
        ap.print_help()
        return 0
    print(f"tang {__version__}")
    missing = 0
    for tool in ("tang-opt", "tang-run"):
        try:
            print(f"  {tool}: {find_tool(tool)}")
        except TangError as e:
            missing += 1
            print(f"  {tool}: not found ({e})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
