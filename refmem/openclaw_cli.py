"""Command line for OpenClaw's workspace memory: `refmem log`, `refmem memory-get`, `refmem memory-search`,
`refmem memory-index`.

`log` appends a note to today's daily log (`memory/YYYY-MM-DD.md`), the way an agent's memory flush
does; the others run the two tools once and print their JSON result (exit status 1 when it is an
error), and build or refresh the search index. `register(subparsers)` adds the verbs to another
parser (`refmem/cli.py`); `main(argv)` runs them alone (`python -m refmem.openclaw_cli log ...`).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from typing import Any, Dict, List, Optional


def _workspace(args: argparse.Namespace) -> Any:
    from .openclaw import OpenClawMemory

    return OpenClawMemory(args.root, index="memory" if getattr(args, "no_index_file", False) else "file")


def _print(result: Dict[str, Any]) -> int:
    from .openclaw import render

    text, is_error = render(result)
    sys.stdout.write(text + "\n")
    return 1 if is_error else 0


def _log(args: argparse.Namespace) -> int:
    if args.date is not None:
        try:
            day: Optional[datetime.date] = datetime.date.fromisoformat(args.date)
        except ValueError:
            print("refmem: --date must be YYYY-MM-DD", file=sys.stderr)
            return 2
    else:
        day = None
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    with _workspace(args) as memory:
        result = memory.append_daily(text, day)
    if result["status"] != "ok":
        print(f"refmem: {result['error']}", file=sys.stderr)
        return 1
    print(result["path"])
    return 0


def _get(args: argparse.Namespace) -> int:
    with _workspace(args) as memory:
        return _print(memory.get({"path": args.path, "from": args.from_line, "lines": args.lines}))


def _search(args: argparse.Namespace) -> int:
    with _workspace(args) as memory:
        return _print(memory.search({"query": args.query, "maxResults": args.max_results, "minScore": args.min_score}))


def _index(args: argparse.Namespace) -> int:
    with _workspace(args) as memory:
        if args.rebuild:
            memory.disk.drop_index()
        refreshed = memory.refresh()
        files, chunks = memory.counts()
    print(
        f"{files} files, {chunks} chunks "
        f"({refreshed.added} added, {refreshed.changed} changed, {refreshed.removed} removed, "
        f"{refreshed.skipped} skipped)"
    )
    return 0


def register(commands: Any) -> None:
    """Add the verbs to an argparse sub-parser collection."""
    log = commands.add_parser("log", help="append a note to today's OpenClaw daily log, memory/YYYY-MM-DD.md")
    log.add_argument("--root", required=True, help="the workspace: the real directory /memories maps to")
    log.add_argument("--date", help="the day's log to append to, YYYY-MM-DD (default: today, local time)")
    log.add_argument("text", nargs="+", help='the note (words are joined by spaces); "-" reads it from stdin')
    log.set_defaults(func=_log)

    get = commands.add_parser("memory-get", help="run OpenClaw's memory_get once and print its JSON result")
    get.add_argument("--root", required=True)
    get.add_argument("--from", dest="from_line", type=int, help="first line (1-based)")
    get.add_argument("--lines", type=int, help="how many lines (default 120)")
    get.add_argument("path", help="e.g. MEMORY.md or memory/2026-01-05.md")
    get.set_defaults(func=_get)

    search = commands.add_parser("memory-search", help="run OpenClaw's memory_search once and print its JSON result")
    search.add_argument("--root", required=True)
    search.add_argument("--max-results", type=int)
    search.add_argument("--min-score", type=float)
    search.add_argument("--no-index-file", action="store_true", help="index in memory, write nothing")
    search.add_argument("query")
    search.set_defaults(func=_search)

    index = commands.add_parser("memory-index", help="build or refresh the memory_search index")
    index.add_argument("--root", required=True)
    index.add_argument("--rebuild", action="store_true", help="drop the index file first")
    index.set_defaults(func=_index)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="refmem", description=__doc__.splitlines()[0])
    register(parser.add_subparsers(dest="action", required=True))
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
