"""Command line: `refmem exec`, `refmem serve`, `refmem prune`.

`exec` runs one tool input (JSON) and prints the result, exiting 1 when it is an error (2 when it
could not run: bad JSON, an unusable root), so a shell script can drive the reference. `serve` speaks
the conformance adapter protocol on stdin/stdout, so a program in any language can. `prune` removes
memories nobody touched for a while.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional, TextIO


def _exec(args: argparse.Namespace) -> int:
    """Exit 0 or 1 as the result says; 2, with one line on stderr and no traceback, when the command
    could not be run at all (the input is not JSON or nests too deeply, the root is unusable)."""
    from .handler import MemoryHandler

    try:
        tool_input = json.loads(args.input)
    except RecursionError:
        return _fail("the input nests arrays or objects too deeply to read")
    except ValueError:
        return _fail("the input is not valid JSON")
    try:
        handler = MemoryHandler(args.root, read_only=args.read_only)
    except Exception as error:  # noqa: BLE001 - any refusal of the root is reported, not raised
        return _fail(f"cannot use {args.root!r:.200} as the memory directory: {_root_problem(error)}")
    try:
        result = handler.execute(tool_input)
    except Exception as error:  # noqa: BLE001 - the handler promises never to raise; say so if it does
        return _fail(f"the handler failed on this input ({type(error).__name__}); please report it")
    _write_text(sys.stdout, result.output + "\n")
    return 1 if result.is_error else 0


def _fail(reason: str) -> int:
    _write_text(sys.stderr, f"refmem: {reason}\n")
    return 2


def _root_problem(error: Exception) -> str:
    if isinstance(error, (FileExistsError, NotADirectoryError)):
        return "it is not a directory"
    if isinstance(error, OSError):
        return (error.strerror or "operating system error").lower()
    if isinstance(error, ValueError):
        return "the path cannot be used (a NUL byte or an encoding problem)"
    return type(error).__name__


def _write_text(stream: TextIO, text: str) -> None:
    """Write `text`; characters the stream cannot encode (lone surrogates) as backslash escapes."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _serve(args: argparse.Namespace) -> int:
    from .serve import main as serve_main

    return serve_main()


def _prune(args: argparse.Namespace) -> int:
    from .expiry import parse_duration, prune
    from .kernel import FsProblem

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
    from .kernel import Missing, OsFailure
    from .messages import IO_REASONS

    if isinstance(error, Missing):
        return "no such directory"
    if isinstance(error, OsFailure):
        return IO_REASONS.get(error.code, IO_REASONS["os"])
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
