"""Command line: `refmem exec`, `refmem serve`, `refmem prune`, `refmem db`, `refmem history`, `refmem restore`.

`exec` runs one tool input (JSON) and prints the result, exiting 1 when it is an error (2 when it
could not run: bad JSON, an unusable root), so a shell script can drive the reference. `serve` speaks
the conformance adapter protocol on stdin/stdout, so a program in any language can. `prune` removes
memories nobody touched for a while. `db init` and `db migrate` make or upgrade a database store's schema.
`history` and `restore` list and bring back what a database store kept of a file (refmem/history_cli.py).

The help texts are plain text (no Markdown): they are read in a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, List, Optional, TextIO, Tuple, TypeVar, Union

from . import __version__, terminal
from .protocol import MAX_LINE_BYTES
from .protocol import VERSION as PROTOCOL_VERSION
from .stores.hosted import PROFILES
from .stores.location import ENVIRONMENT as _STORE_VARIABLE
from .subcommands import memories_options, subcommand

_T = TypeVar("_T")

STDIN_INPUT = "-"
"""The `exec` input argument that means "read the tool input from standard input"."""

MAX_STDIN_BYTES = MAX_LINE_BYTES
"""The longest tool input `exec` reads from standard input: the bound `serve` puts on one request
(D-SERVE-LINE-LIMIT), for the same reason (a write carries up to 1 MiB, escaped up to six times)."""

STATUS_READER_GONE = 141
"""Exit status when standard output was closed by its reader (`refmem ... | head`): what a shell
reports for a program ended by SIGPIPE, and distinct from exec's 0, 1 and 2."""

DESCRIPTION = "The reference handler of the memory_20250818 tool, from a shell or from another program."
EPILOG = """examples:
  refmem exec --root ./memories '{"command": "view", "path": "/memories"}'
  refmem exec --root ./memories - < input.json
  refmem exec --store sqlite:///var/lib/app/memory.db --tenant alice - < input.json
  refmem-conformance --target "cmd:refmem serve"
  refmem prune --root ./memories --older-than 30d --dry-run
  refmem prune --store sqlite:///var/lib/app/memory.db --tenant alice --older-than 30d
  REFMEM_STORE=postgresql://app@db.internal/memory refmem db init
  refmem db erase --store sqlite:///var/lib/app/memory.db --tenant alice --yes
  refmem history /memories/notes.md --store sqlite:///var/lib/app/memory.db --tenant alice
  refmem restore /memories/notes.md --version 42 --store sqlite:///var/lib/app/memory.db --tenant alice

'refmem COMMAND --help' says more about each command."""


def _exec(args: argparse.Namespace) -> int:
    """Exit 0 or 1 as the result says; 2, with one line on stderr and no traceback, when the command
    could not be run at all (the input is not JSON or nests too deeply, the root is unusable)."""
    from .handler import MemoryHandler
    from .store_protocol import TenantError

    raw: Union[str, bytes] = args.input
    if raw == STDIN_INPUT:
        try:
            raw = _read_stdin(MAX_STDIN_BYTES)
        except OSError:
            return _fail("cannot read the tool input from standard input")
        if len(raw) > MAX_STDIN_BYTES:
            return _fail(f"the input on standard input is longer than {MAX_STDIN_BYTES} bytes")
    try:
        tool_input = json.loads(raw)
    except RecursionError:
        return _fail("the input nests arrays or objects too deeply to read")
    except ValueError:  # UnicodeDecodeError included: bytes on stdin that are not UTF-8
        return _fail("the input is not valid JSON")
    location = args.store if args.store is not None else None if args.root is not None else _store_from_environment()
    if args.profile is not None and location is None:
        return _fail(f"--profile is for a database store (--store LOCATION, or {_STORE_VARIABLE})")
    if location is not None:
        return _exec_on_store(location, args, tool_input)
    if args.root is None:
        return _fail(f"give --root DIRECTORY or --store sqlite:///PATH (or set {_STORE_VARIABLE})")
    try:
        handler = MemoryHandler(args.root, read_only=args.read_only, tenant=args.tenant)
    except TenantError as error:
        return _fail(f"cannot use the tenant: {error}")
    except Exception as error:  # noqa: BLE001 - any refusal of the root is reported, not raised
        return _fail(f"cannot use {args.root!r:.200} as the memory directory: {_root_problem(error)}")
    return _run_one(handler, tool_input, args)


def _run_one(handler: object, tool_input: object, args: Optional[argparse.Namespace] = None) -> int:
    if args is not None and getattr(args, "log_commands", False):
        from .oplog import logged

        handler = logged(handler, args.tenant, sink=lambda text: _write_text(sys.stderr, text + "\n"))  # D-OPLOG
    try:
        result = handler.execute(tool_input)  # type: ignore[attr-defined]
    except Exception as error:  # noqa: BLE001 - the handler promises never to raise; say so if it does
        return _fail(f"the handler failed on this input ({type(error).__name__}); please report it")
    _write_text(sys.stdout, result.output + "\n")
    return 1 if result.is_error else 0


def _store_from_environment() -> Optional[str]:
    from .stores.location import from_environment

    return from_environment()


def _exec_on_store(location: str, args: argparse.Namespace, tool_input: object) -> int:
    """`exec` over a database store: the location is never printed (it may be a secret), only why it failed."""
    from .handler import MemoryHandler
    from .store_protocol import TenantError
    from .stores import StoreError
    from .stores.location import open_location

    try:
        store = open_location(location)
    except StoreError as error:
        return _fail(f"cannot use the store: {error}")
    if args.profile is not None:
        store = PROFILES[args.profile](store)  # D-HOSTED-CLI
    try:
        handler = MemoryHandler(store, read_only=args.read_only, tenant=args.tenant)  # type: ignore[arg-type]
    except TenantError as error:
        store.close()  # type: ignore[attr-defined]
        return _fail(f"cannot use the tenant: {error}")
    except StoreError as error:
        store.close()  # type: ignore[attr-defined]
        return _fail(f"cannot use the store: {error}")
    try:
        return _run_one(handler, tool_input, args)
    finally:
        handler.close()
        store.close()  # type: ignore[attr-defined]


def _read_stdin(limit: int) -> Union[str, bytes]:
    """At most `limit + 1` bytes of standard input (characters, when stdin has no byte buffer), so
    that an overlong input is noticed without being held whole. Raises OSError when there is none."""
    stream = sys.stdin
    if stream is None:
        raise OSError("no standard input")
    buffer = getattr(stream, "buffer", None)
    data: Union[str, bytes] = buffer.read(limit + 1) if buffer is not None else stream.read(limit + 1)
    return data


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

    store = args.store if args.store is not None else _store_from_environment()
    located = store is not None and store not in ("directory", "sqlite")
    if args.tenants_by_name and not located:
        return _fail("--tenants-by-name is for serve --store LOCATION (one database for every root)")
    log, profile = args.log_commands, args.profile
    if store is None or store == "directory":
        if profile is not None:
            return _fail("--profile is for serve --store sqlite or --store LOCATION (a database store)")
        return serve_main(log=log)
    if store == "sqlite":
        return serve_main(database=True, log=log, profile=profile)
    return serve_main(location=store, by_name=args.tenants_by_name, log=log, profile=profile)


def _prune(args: argparse.Namespace) -> int:
    from .expiry import parse_duration
    from .problems import FsProblem

    try:
        seconds = parse_duration(args.older_than)
    except ValueError as error:
        print(f"refmem: {error}", file=sys.stderr)
        return 2
    if args.root is not None and (args.store is not None or args.tenant is not None):
        return _fail("give --root (a directory) or --store (a database, with its --tenant), not both")
    if args.root is None:
        return _prune_store(args, seconds)
    from .stores.location import DIRECTORY

    prune = DIRECTORY.prune  # the filesystem's row prunes its root
    if prune is None:
        return _fail("the filesystem store cannot be pruned")
    try:
        removed, kept = prune(args.root, seconds, args.dry_run)
    except (OSError, FsProblem) as error:
        print(f"refmem: cannot prune {args.root}: {_failure_reason(error)}", file=sys.stderr)
        return 2
    return _pruned(removed, kept, args.dry_run)


def _prune_store(args: argparse.Namespace, seconds: float) -> int:
    """`prune --store LOCATION [--tenant NAME]`: a database store prunes itself (D-STORE-SQL-PRUNE); the location
    comes from --store or REFMEM_STORE and is never printed."""
    import time

    location = args.store if args.store is not None else _store_from_environment()
    if location is None:
        return _fail(f"give --root DIRECTORY, or --store postgresql://... or sqlite:///PATH (or set {_STORE_VARIABLE})")
    status, pruned = _on_store(location, args.tenant, "prune the store",
                               lambda store: store.prune(time.time() - seconds, dry_run=args.dry_run))
    if pruned is None:
        return status
    removed, kept = pruned
    return _pruned(removed, kept, args.dry_run)


def _on_store(location: str, tenant: Optional[str], doing: str, work: Callable[[Any], _T]) -> Tuple[int, Optional[_T]]:
    """`work(store)` on the store at `location` for `tenant`, closed after: (0, what it gave), or (2, None) once
    why it could not is printed, naming no location."""
    from .problems import FsProblem
    from .store_protocol import TenantError
    from .stores import StoreError
    from .stores.location import open_location

    try:
        store: Any = open_location(location, tenant=tenant)
    except TenantError as error:
        return _fail(f"cannot use the tenant: {error}"), None
    except StoreError as error:
        return _fail(f"cannot use the store: {error}"), None
    try:
        return 0, work(store)
    except FsProblem as problem:
        return _fail(f"cannot {doing}: {_failure_reason(problem)}"), None
    finally:
        store.close()


def _pruned(removed: List[str], kept: int, dry_run: bool) -> int:
    verb = "would remove" if dry_run else "removed"
    for path in removed:
        print(f"{verb} {path}")
    print(f"{len(removed)} {verb}, {kept} kept")
    return 0


def _db(args: argparse.Namespace) -> int:
    """`db init` / `db migrate`: the database's schema made, or brought to this refmem's version; `db erase`: one
    tenant removed. The location comes from --store or REFMEM_STORE and is never printed."""
    from ._store_messages import STORE_SPEC
    from .stores import StoreError
    from .stores.location import find, scheme_of

    location = args.store if args.store is not None else _store_from_environment()
    if location is None:
        return _fail(f"give --store postgresql://... or sqlite:///PATH (or set {_STORE_VARIABLE})")
    if args.db_action in ("export", "import"):  # D-STORE-TRANSFER
        from .transfer_cli import run as transfer

        return transfer(location, args)
    if args.file is not None or args.replace:
        return _fail("FILE and --replace are for db export and db import")
    if args.db_action == "erase":
        return _erase(location, args)
    if args.db_action in ("check", "tenants"):
        return _inspect(location, args)
    if args.tenant is not None or args.yes:
        return _fail("--tenant and --yes are for db erase")
    found = find(location)
    if args.app_role is not None and (found is None or not found.roles):
        return _fail("--app-role is for a PostgreSQL store (an SQLite database has no roles)")
    try:
        scheme = scheme_of(location)
        if scheme.migrate is None:
            raise StoreError(STORE_SPEC)
        before, after = scheme.migrate(location, args.app_role)  # init and migrate alike: from the version there
    except StoreError as error:
        return _fail(f"cannot use the store: {error}")
    if before is None:
        print(f"schema made: version {after}")
    elif before == after:
        print(f"schema already at version {after}: nothing to do")
    else:
        print(f"schema migrated from version {before} to {after}")
    return 0


def _erase(location: str, args: argparse.Namespace) -> int:
    """`db erase --tenant NAME --yes` (D-STORE-SQL-ERASE): every memory, version and change of one tenant deleted
    in one transaction, nothing kept to restore; refused without both options, so no typo erases anyone."""
    from .stores import StoreError
    from .stores.location import scheme_of

    if args.app_role is not None:
        return _fail("--app-role is for db init and db migrate")
    if args.tenant is None:
        return _fail("db erase needs --tenant NAME: the tenant whose memories, versions and changes go")
    if not args.yes:
        return _fail(f"db erase removes every memory and kept version of the tenant {args.tenant}, with nothing kept "
                     "to restore: run it again with --yes")
    try:
        if not scheme_of(location).present(location):
            return _fail("cannot use the store: there is no SQLite database there")
    except StoreError as error:
        return _fail(f"cannot use the store: {error}")
    status, erased = _on_store(location, args.tenant, "erase the tenant", lambda store: store.erase())
    if erased is None:
        return status
    paths, versions = erased
    if paths or versions:
        print(f"erased the tenant {args.tenant}: {paths} files and folders, {versions} kept versions")
    else:
        print(f"the tenant {args.tenant} held nothing: nothing erased")
    return 0


def _inspect(location: str, args: argparse.Namespace) -> int:
    """`db check` (D-STORE-DB-CHECK): one line per problem and exit status 1, or the healthy line and 0; `db tenants`
    (D-STORE-DB-TENANTS): every tenant with its files, bytes and versions. Both read, never write."""
    from .stores import StoreError
    from .stores.health import tenant_line
    from .stores.location import check, find, tenants

    if args.tenant is not None or args.yes:
        return _fail("--tenant and --yes are for db erase")
    scheme = find(location)
    if args.app_role is not None and (args.db_action != "check" or scheme is None or not scheme.roles):
        return _fail("--app-role is for db init, db migrate and db check of a PostgreSQL store")
    try:
        if args.db_action == "tenants":
            from ._store_messages import TENANTS_HEADER

            found = tenants(location)
            print(TENANTS_HEADER)
            for tenant in found:
                _write_text(sys.stdout, tenant_line(tenant) + "\n")
            return 0
        problems, healthy = check(location, args.app_role)
    except StoreError as error:
        return _fail(f"cannot use the store: {error}")
    for problem in problems:
        _write_text(sys.stdout, problem + "\n")
    if problems:
        return 1
    print(healthy)
    return 0


def _failure_reason(error: Exception) -> str:
    """The short reason a prune failed: the root is missing, or what the operating system said."""
    from .messages import io_reason
    from .problems import Missing, OsFailure

    if isinstance(error, Missing):
        return "no such directory"
    if isinstance(error, OsFailure):
        return io_reason(error.code)
    return getattr(error, "strerror", None) or "operating system error"


_ROOT_HELP = "the real directory that /memories stands for (created if missing)"

_EXEC_DESCRIPTION = """Run one tool input (the JSON object the model sent) and print the result's text.

Exit status: 0 for a success result, 1 for an error result, 2 when the command
could not run (the input is not JSON, the directory cannot be used)."""

_SERVE_DESCRIPTION = f"""Answer the conformance adapter protocol on standard input and output: JSON lines,
one reply per request line, protocol version {PROTOCOL_VERSION} (conformance/PROTOCOL.md).
The memory directory comes with each reset request. The conformance runner
drives it with: refmem-conformance --target 'cmd:refmem serve'"""

_PROFILE_HELP = (
    "with a database store: keep only what the profile's store keeps; hosted: what Anthropic's hosted memory stores "
    "keep (paths of 1 to 20 names, NFC, at most 1,024 bytes; files of at most 102,400 bytes; no version for a "
    "change that changes nothing), so that the tenant can be exported to one unchanged"
)

_DB_DESCRIPTION = """Make a database store's schema (init) or bring it to this refmem's version (migrate),
in one transaction; both are safe to run again. For PostgreSQL, run them as the role
that owns the tables; row-level security is forced on that role too (SECURITY.md).
erase --tenant NAME --yes removes one tenant whole (its memories, kept versions and
changes, in one transaction), with nothing kept to restore: a user's offboarding.
check reads the store and prints one line per problem (exit status 1) or that it is
healthy (0): reachable, schema version, file modes (SQLite), row-level security and
the application role's privileges (PostgreSQL; --app-role ROLE names the role).
tenants lists every tenant: files, bytes, versions kept and what they count.
export --tenant NAME FILE writes one tenant (memories and history) in the documented
format (docs/tenant-export.md); import --tenant NAME FILE makes a fresh tenant of it
(--replace: erase the tenant first), all or nothing."""

_PRUNE_DESCRIPTION = """Remove the files under /memories that nobody viewed or changed for a while (a
file's last use is the later of its recorded last view and its modification
time; in a database store, when it was made, changed, renamed or viewed),
then the folders left empty."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="refmem", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--version", action="version", version=f"refmem {__version__} (adapter protocol {PROTOCOL_VERSION})"
    )
    commands = parser.add_subparsers(
        dest="action",
        required=True,
        metavar="{exec,serve,prune,db,history,restore,log,memory-get,memory-search,memory-index,mcp}",
    )

    run = subcommand(commands, "exec", "run one tool input given as JSON", _EXEC_DESCRIPTION, _exec)
    memories_options(
        run,
        root=_ROOT_HELP,
        store=f"a database store instead of a directory: sqlite:///ABSOLUTE/PATH.db or sqlite:RELATIVE.db (made if "
        f"missing), or postgresql://... (after refmem db init); also read from {_STORE_VARIABLE} when neither "
        "option is given, and never printed",
        read_only=True,
    )
    run.add_argument("--profile", choices=sorted(PROFILES), help=_PROFILE_HELP)
    run.add_argument(
        "--log-commands",
        action="store_true",
        help="write one JSON line per command to standard error: tenant, command, ms, outcome class (never content "
        "nor path)",
    )
    run.add_argument(
        "input",
        help=f"the tool input as JSON; {STDIN_INPUT} reads it from standard input (for inputs longer than a command "
        f"line may be, up to {MAX_STDIN_BYTES // (1024 * 1024)} MiB)",
    )

    serve = subcommand(
        commands,
        "serve",
        f"answer the conformance adapter protocol (version {PROTOCOL_VERSION}) on stdin and stdout",
        _SERVE_DESCRIPTION,
        _serve,
    )
    serve.add_argument(
        "--store",
        metavar="{directory,sqlite,LOCATION}",
        help="directory (default): the memories are the files under each reset's root; sqlite: an SQLite database "
        "made in each reset's root; LOCATION (postgresql://... after refmem db init, or sqlite:///PATH.db): one "
        f"database, each reset's root a namespace of its own in it; also read from {_STORE_VARIABLE}, never printed "
        "(both database modes: storage 'own', every tool over the database)",
    )
    serve.add_argument(
        "--tenants-by-name",
        action="store_true",
        help="with --store LOCATION: a reset's memories are those of the tenant it names (the default tenant when it "
        "names none), whatever its root, so db tenants, db erase and prune --store reach them by that name",
    )
    serve.add_argument("--profile", choices=sorted(PROFILES), help=_PROFILE_HELP)
    serve.add_argument(
        "--log-commands",
        action="store_true",
        help="write one JSON line per command to standard error: tenant, command, ms, outcome class (never content "
        "nor path)",
    )

    prune = subcommand(
        commands, "prune", "remove memories nobody viewed or changed for a while", _PRUNE_DESCRIPTION, _prune
    )
    prune.add_argument("--root", help="the real directory that /memories stands for (it must exist)")
    prune.add_argument(
        "--store",
        metavar="LOCATION",
        help=f"instead of --root: a database store (postgresql://... or sqlite:///PATH.db; also read from "
        f"{_STORE_VARIABLE}, never printed), which prunes itself in one transaction",
    )
    prune.add_argument("--tenant", help="with --store: the tenant whose memories are pruned (default: the default one)")
    prune.add_argument(
        "--older-than",
        required=True,
        metavar="DURATION",
        help="how long unused: a number and a unit (s, m, h, d, w), e.g. 30d, 12h, 90m, 1w2d",
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")

    database = subcommand(
        commands, "db", "make (init), upgrade (migrate) or check a store's schema; list or erase tenants",
        _DB_DESCRIPTION, _db,
    )
    database.add_argument(
        "db_action", choices=["init", "migrate", "erase", "check", "tenants", "export", "import"],
        metavar="{init,migrate,erase,check,tenants,export,import}",
    )
    database.add_argument(
        "file", nargs="?", metavar="FILE",
        help="export, import: the tenant's export (docs/tenant-export.md); - for standard output or input",
    )
    database.add_argument(
        "--replace", action="store_true", help="import: erase what the tenant holds first (same transaction)"
    )
    database.add_argument(
        "--store",
        metavar="LOCATION",
        help=f"postgresql://... or sqlite:///PATH.db; also read from {_STORE_VARIABLE}, and never printed",
    )
    database.add_argument(
        "--app-role",
        metavar="ROLE",
        help="PostgreSQL: grant this role (the application's, not the tables' owner) reading and writing refmem's "
        "rows and nothing more; check: the role whose privileges are checked",
    )
    database.add_argument(
        "--tenant", metavar="NAME", help="erase, export, import: the tenant (export, import: the default one if none)"
    )
    database.add_argument("--yes", action="store_true", help="erase: yes, remove it, with nothing kept to restore")

    from .history_cli import register as register_history  # history, restore
    from .openclaw_cli import register as register_openclaw  # log, memory-get, memory-search, memory-index

    register_history(commands)

    register_openclaw(commands)
    from .mcp_cli import register as register_mcp  # mcp (the server lives in refmem_mcp/, with the `mcp` extra)

    register_mcp(commands)
    return parser


def _export_file(args: argparse.Namespace, extra: List[str]) -> bool:
    """Whether `extra` is the FILE of `db export|import` given after options (`db export --store L --tenant T FILE`,
    which argparse does not take as the optional positional it follows), then put in place."""
    if getattr(args, "db_action", None) in ("export", "import") and args.file is None and len(extra) == 1:
        if extra[0] == "-" or not extra[0].startswith("-"):
            args.file = extra[0]
            return True
    return False


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command; also the `refmem` console script.

    A reader that closes standard output early (`refmem exec ... | head -c1`) ends the command
    quietly with STATUS_READER_GONE: the rest of the output has nowhere to go, and Python would
    otherwise print a BrokenPipeError traceback, or an "Exception ignored" note at exit.
    """
    try:
        try:
            parser = build_parser()
            args, extra = parser.parse_known_args(argv)
            if extra and not _export_file(args, extra):
                args = parser.parse_args(argv)  # says what is not recognised, and exits
            return int(args.func(args))
        finally:
            sys.stdout.flush()  # inside the try: a closed pipe is noticed here, not at exit
    except BrokenPipeError:
        terminal.stream_to_devnull(sys.stdout)
        return STATUS_READER_GONE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
