"""How a `refmem` sub-command is declared: one place for the parser's shape, shared by refmem/cli.py and the
modules that add their own sub-commands (history_cli.py, openclaw_cli.py, mcp_cli.py), and where the memories are
(`memories_options`: the same options, with each command's own help, for exec, mcp, history and restore)."""

from __future__ import annotations

import argparse
from typing import Any, Callable


def subcommand(commands: Any, name: str, summary: str, description: str, run: Callable[..., int]) -> Any:
    """One `refmem NAME` sub-parser: its one-line summary, its description as written, the function it runs."""
    parser = commands.add_parser(
        name, help=summary, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.set_defaults(func=run)
    return parser


TENANT_HELP = "whose memories: a tenant name (lower-case letters, digits, - and _)"


def memories_options(parser: Any, root: str, store: str, tenant: str = TENANT_HELP, read_only: bool = False) -> None:
    """Where a sub-command finds the memories, said the same way by every one: --root DIRECTORY or --store LOCATION
    (never both), whose (--tenant), and with `read_only`, --read-only."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--root", help=root)
    where.add_argument("--store", metavar="LOCATION", help=store)
    parser.add_argument("--tenant", help=tenant)
    if read_only:
        parser.add_argument("--read-only", action="store_true", help="refuse every command that would change something")
