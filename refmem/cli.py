"""Command line: `refmem exec`, `refmem serve`, `refmem prune`.

`exec` runs one tool input (JSON) and prints the result, exiting 1 when it is an error, so a shell
script can drive the reference. `serve` speaks the conformance adapter protocol on stdin/stdout, so a
program in any language can. `prune` removes memories nobody touched for a while.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional


def _exec(args: argparse.Namespace) -> int:
    from .handler import MemoryHandler

    try:
        tool_input = json.loads(args.input)
    except ValueError:
        print("refmem: the input is not valid JSON", file=sys.stderr)
        return 2
    handler = MemoryHandler(args.root, read_only=args.read_only)
    result = handler.execute(tool_input)
    sys.stdout.write(result.output + "\n")
    return 1 if result.is_error else 0


def _serve(args: argparse.Namespace) -> int:
    from .serve import main as serve_main

    return serve_main()


def _prune(args: argparse.Namespace) -> int:
    from .expiry import parse_duration, prune
    from .fs import FsProblem

    try:
        seconds = parse_duration(args.older_than)
    except ValueError as error:
        print(f"refmem: {error}", file=sys.stderr)
        return 2
    try:
        report = prune(args.root, seconds, dry_run=args.dry_run)
    except (OSError, FsProblem) as error:
        print(f"refmem: cannot prune {args.root}: {_failure_reason(error)}", file=sys.stderr)
        return 2
    verb = "would remove" if args.dry_run else "removed"
    for path in report.removed:
        print(f"{verb} {path}")
    print(f"{len(report.removed)} {verb}, {report.kept} kept")
    return 0


def _failure_reason(error: Exception) -> str:
    """The short reason a prune failed: the root is missing, or what the operating system said."""
    from .fs import Missing, OsFailure

    if isinstance(error, Missing):
        return "no such directory"
    if isinstance(error, OsFailure):
        return error.reason
    return getattr(error, "strerror", None) or "operating system error"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="refmem", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="action", required=True)

    run = commands.add_parser("exec", help="run one tool input given as JSON")
    run.add_argument("--root", required=True, help="the real directory that /memories maps to")
    run.add_argument("--read-only", action="store_true", help="refuse every mutating command")
    run.add_argument("input", help='the tool input, e.g. \'{"command": "view", "path": "/memories"}\'')
    run.set_defaults(func=_exec)

    serve = commands.add_parser("serve", help="speak the conformance adapter protocol on stdin/stdout")
    serve.set_defaults(func=_serve)

    prune = commands.add_parser("prune", help="remove memories not accessed or changed for a while")
    prune.add_argument("--root", required=True)
    prune.add_argument("--older-than", required=True, help="e.g. 30d, 12h, 90m, 2w")
    prune.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    prune.set_defaults(func=_prune)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
