"""How a `refmem` sub-command is declared: one place for the parser's shape, shared by refmem/cli.py and the
modules that add their own sub-commands (history_cli.py, openclaw_cli.py)."""

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
