"""Command line for the database stores' history: `refmem history PATH` and `refmem restore PATH --version N`
(D-STORE-HISTORY-CLI).

PATH is a virtual path (`/memories/...`), parsed by the handler's own rules (refmem/paths.py), never a host path.
The store is `--store LOCATION` or `REFMEM_STORE`, as for `refmem exec`, and is never printed: it may hold a
password. A memory directory (`--root`) keeps no history (D-STORE-HISTORY-FS), and is refused saying so.
Exit status: 0 done, 1 the restore was refused (no such version, a folder in the way...), 2 could not run.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional, Tuple

from ._store_messages import (
    HISTORY_BAD_PATH,
    HISTORY_FAILED,
    HISTORY_FILESYSTEM,
    HISTORY_NEEDS_STORE,
    HISTORY_NONE,
    RESTORE_FAILED,
    RESTORE_PROBLEMS,
    RESTORED,
)
from .messages import RULE_FILE_SLASH, escape, io_reason
from .paths import PathError, VirtualPath, parse_path
from .subcommands import memories_options, subcommand

ECHO_CHARS = 200
"""Longest PATH argument echoed back in a refusal."""


def _fail(reason: str) -> int:
    sys.stderr.write(f"refmem: {reason}\n")
    return 2


def _open(args: argparse.Namespace) -> Tuple[Optional[Any], Optional[VirtualPath], int]:
    """(store, path, 0), or (None, None, exit status) once the reason is printed."""
    from .store_protocol import TenantError
    from .stores import StoreError
    from .stores.location import DIRECTORY, ENVIRONMENT, from_environment, open_location

    if args.root is not None and not DIRECTORY.history:  # the filesystem store keeps no versions
        return None, None, _fail(HISTORY_FILESYSTEM)
    try:
        path = parse_path(args.path)
    except PathError as error:
        return None, None, _fail(HISTORY_BAD_PATH.format(path=escape(args.path, ECHO_CHARS), rule=error.rule))
    if path.is_root or path.trailing_slash:
        return None, None, _fail(HISTORY_BAD_PATH.format(path=escape(args.path, ECHO_CHARS), rule=RULE_FILE_SLASH))
    location = args.store if args.store is not None else from_environment()
    if location is None:
        return None, None, _fail(HISTORY_NEEDS_STORE.format(variable=ENVIRONMENT))
    try:
        store = open_location(location, tenant=args.tenant, actor=getattr(args, "actor", None))
    except TenantError as error:
        return None, None, _fail(f"cannot use the tenant: {error}")
    except ValueError as error:  # an actor that cannot be printed on one line
        return None, None, _fail(str(error))
    except StoreError as error:
        return None, None, _fail(f"cannot use the store: {error}")
    return store, path, 0


def _reason(problem: Exception) -> str:
    return io_reason(getattr(problem, "code", None))


def _history(args: argparse.Namespace) -> int:
    from .problems import FsProblem
    from .stores.history import line

    store, path, status = _open(args)
    if store is None or path is None:
        return status
    try:
        versions = store.history(path)
    except FsProblem as problem:
        return _fail(HISTORY_FAILED.format(path=path.canonical, reason=_reason(problem)))
    finally:
        store.close()
    if not versions:
        print(HISTORY_NONE.format(path=path.canonical))
    for version in versions:
        print(line(version))
    return 0


def _restore(args: argparse.Namespace) -> int:
    from .limits import DEFAULT_LIMITS
    from .problems import FsProblem, ParentNotDir, TooBig

    store, path, status = _open(args)
    if store is None or path is None:
        return status
    try:
        sha256 = store.restore(path, args.version)
    except FsProblem as problem:
        wording = RESTORE_PROBLEMS.get(problem.code)
        if wording is None:
            return _fail(RESTORE_FAILED.format(path=path.canonical, reason=_reason(problem)))
        depth = problem.depth if isinstance(problem, ParentNotDir) else 0
        size = problem.size if isinstance(problem, TooBig) else 0
        parent = VirtualPath(path.parts[:depth]).canonical
        sys.stderr.write(
            "refmem: "
            + wording.format(
                path=path.canonical, number=args.version, parent=parent, size=size, most=DEFAULT_LIMITS.max_file_bytes
            )
            + "\n"
        )
        return 1
    finally:
        store.close()
    print(RESTORED.format(path=path.canonical, number=args.version, sha256=sha256))
    return 0


_HISTORY_DESCRIPTION = """Print the versions a database store keeps of one memory file, newest first, one a line:
number, when (UTC), size, the first 12 hex digits of its SHA-256, the command that
replaced or removed it, and who (the store's actor, or -)."""

_RESTORE_DESCRIPTION = """Write a kept version back as the file's content (making the file, and its missing
folders, when it was deleted); the content it replaces is kept as a version too.
Refused when a folder is at the path or a file is on the way."""


def _where(parser: argparse.ArgumentParser) -> None:
    from .stores.location import ENVIRONMENT

    parser.add_argument("path", metavar="PATH", help="the memory file, as the model names it: /memories/...")
    memories_options(
        parser,
        root="a memory directory: refused, it keeps no history",
        store=f"sqlite:///PATH.db or postgresql://...; also read from {ENVIRONMENT}, and never printed",
    )


def register(commands: Any) -> None:
    """Add `history` and `restore` to an argparse sub-parser collection (refmem/cli.py)."""
    shown = subcommand(
        commands, "history", "list the versions a database store keeps of a memory file", _HISTORY_DESCRIPTION, _history
    )
    _where(shown)
    back = subcommand(commands, "restore", "bring a kept version of a memory file back", _RESTORE_DESCRIPTION, _restore)
    _where(back)
    back.add_argument("--version", type=int, required=True, metavar="N", help="the version's number (refmem history)")
    back.add_argument("--actor", help="who restores: kept with the version of the content the restore replaces")
