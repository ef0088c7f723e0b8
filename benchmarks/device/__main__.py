"""``python -m benchmarks.device prepare|run|report``: see :mod:`benchmarks.device`."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from benchmarks.device import __doc__ as DOC


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.device", description=DOC,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("prepare", help="wheels, stores and run.sh into DIR (on a machine with PyPI)")
    pr.add_argument("dir", type=Path)
    pr.add_argument("--dry-run", action="store_true", help="tiny stores, wheels for this Python: the CI's check")
    pr.add_argument("--python-version", default=None,
                    help="the GPU machine's Python for the wheels (default 3.12; the dry run: this Python's)")
    pr.add_argument("--wheels-from", type=Path, help="copy the wheels from this folder instead of downloading them")
    pr.add_argument("--limit-mib", type=float, default=60.0, help="the most DIR may hold (default 60)")
    ru = sub.add_parser("run", help="the parts in order (what DIR/run.sh calls)")
    ru.add_argument("dir", type=Path)
    ru.add_argument("--out", type=Path, required=True)
    ru.add_argument("--work", type=Path, required=True, help="a scratch folder (the unpacked stores)")
    ru.add_argument("--budget", type=float, default=480.0)
    ru.add_argument("--started", type=float, required=True, help="when run.sh started (seconds since the epoch)")
    ru.add_argument("--dry-run", action="store_true")
    re_ = sub.add_parser("report", help="the returned JSONs into RESULTS.md sections and the docs' figures")
    re_.add_argument("files", nargs="+", type=Path, help="run.json, gpu.json, cpu.json, calibration.json")
    re_.add_argument("--results", type=Path, help="the RESULTS.md to write (default benchmarks/RESULTS.md)")
    re_.add_argument("--docs", type=Path, help="the docs folder whose figures to update (default docs/)")
    re_.add_argument("--print", dest="print_only", action="store_true", help="print the sections, write nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s: %(message)s", stream=sys.stderr)
    args = parser().parse_args(argv)
    if args.cmd == "prepare":
        from benchmarks.device.prepare import PrepareError, prepare

        version = args.python_version or ("{}.{}".format(*sys.version_info[:2]) if args.dry_run else "3.12")
        try:
            prepare(args.dir, dry_run=args.dry_run, python_version=version, wheels_from=args.wheels_from,
                    limit_mib=args.limit_mib)
        except PrepareError as e:
            print(f"prepare: error: {e}", file=sys.stderr)
            return 2
        return 0
    if args.cmd == "run":
        from benchmarks.device.driver import run

        if not (args.dir / "prepared.json").is_file():
            print(f"run: error: {args.dir} holds no prepared.json: run prepare first", file=sys.stderr)
            return 2
        return run(args.dir, args.out, args.work, budget=args.budget, started=args.started, dry_run=args.dry_run)
    from benchmarks.device.report import ReportError, report

    try:
        report(args.files, results=args.results, docs=args.docs, print_only=args.print_only)
    except ReportError as e:
        print(f"report: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
