"""The adapter protocol, server side: the reference handler driven by JSON lines on stdin and stdout.

One request per line in, one reply per line out (conformance/PROTOCOL.md); the vocabulary is in
`refmem/protocol.py`. Run it as `refmem serve` or `python -m refmem.serve`. Standard library only.

No line ends the server except `stop` and the end of input. Every other non-blank line gets exactly
one reply, an error object when the line cannot be carried out:

- a line longer than `protocol.MAX_LINE_BYTES` (16 MiB, newline excluded) is read to its end without
  being kept, and answered `line-too-long` (D-SERVE-LINE-LIMIT);
- bytes that are not UTF-8, text that is not JSON, or JSON nested too deeply for the parser's stack:
  `bad-json`;
- JSON that is not an object, a `seq` that is not a positive integer, a `cmd` that is not a string, a
  field of the wrong type: `bad-request`; an unknown `cmd`: `unknown-cmd`;
- a failure of the server itself on one request: `internal`, naming only the exception's type.

A blank line (JSON whitespace only) is not a request and gets no reply. Fields a request does not
need are ignored, as the protocol asks. `seq` is echoed only when it is valid.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import secrets
import sys
import time
import traceback
from typing import IO, Any, Callable, Dict, Iterator, Optional, Union

from . import protocol as p

HOMEPAGE = "https://github.com/refmem/refmem"
PROTOCOL_VERSION = p.VERSION
OPTIONS = p.OPTION_NAMES
"""Every handler option a `reset` may carry; all are listed in the `start` reply."""
DATABASE_NAME = "memory.db"
"""With `serve --store sqlite`: the database file made in each reset's root."""
NAMESPACE_NAME = ".refmem-namespace"
"""With `serve --store LOCATION` (one database for every root): the file in each reset's root naming the root's
namespace in that database (D-SERVE-STORE)."""
NAMESPACE_PREFIX = "serve-"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

_READ_CHUNK = 1 << 20  # bytes read at a time while dropping the rest of an overlong line


class _Refusal(Exception):
    """A request this server answers with an error object instead of doing it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Session:
    """What the server remembers between lines: whether `start` was seen, and the current handler."""

    def __init__(self) -> None:
        self.started = False
        self.handler: Optional[Any] = None
        self.root: Optional[str] = None
        self.options: Dict[str, Any] = {}  # the handler options of the last reset, for the OpenClaw tools too
        self.workspace: Optional[Any] = None  # refmem.openclaw's tools over the same root, made on first use
        self.stopped = False
        self.database = False  # `serve --store sqlite`: each reset's root holds a database (DATABASE_NAME)
        self.store: Optional[Any] = None  # that database's store, closed with the handler
        self.location: Optional[str] = None  # `serve --store LOCATION`: the one database (never shown)
        self.by_name = False  # `serve --store LOCATION --tenants-by-name`: the reset's tenant is the store's
        self.profile: Optional[str] = None  # `serve --profile NAME`: every reset's store under it (D-HOSTED-CLI)
        self.log: Optional[Callable[[str], None]] = None  # `serve --log-commands`: where a command's line goes
        self.counts: Dict[str, Dict[str, int]] = {}  # memory-tool commands so far: {command: {outcome class: n}}
        self.ms: Dict[str, float] = {}  # what they took, summed per command (D-SERVE-COUNTS)


def _version() -> str:
    """This copy's version, as `refmem --version` prints it: a vendored copy reports its own, not that
    of whatever refmem the interpreter has installed."""
    from . import __version__

    return __version__


def _start(session: Session, request: Dict[str, Any]) -> Dict[str, Any]:
    version = request.get(p.VERSION_FIELD)
    if not (isinstance(version, int) and not isinstance(version, bool) and version == PROTOCOL_VERSION):
        shown = repr(version) if isinstance(version, int) and not isinstance(version, bool) else p.json_type(version)
        return {
            p.READY: False,
            p.VERSION_FIELD: PROTOCOL_VERSION,
            p.ERROR: {
                p.ERROR_CODE: p.UNSUPPORTED_VERSION,
                p.ERROR_MESSAGE: f"this server speaks protocol version {PROTOCOL_VERSION}, not {shown:.40}",
            },
        }
    session.started = True
    return {
        p.READY: True,
        p.VERSION_FIELD: PROTOCOL_VERSION,
        p.IMPLEMENTATION: {"name": "refmem", "language": "python", "version": _version(), "homepage": HOMEPAGE},
        # over a database the memories are not files under the root: the runner creates and reads them with commands
        p.STORAGE: p.STORAGE_OWN if session.database else p.STORAGE_FILESYSTEM,
        p.OPTIONS: list(OPTIONS),
        p.TOOLS: list(p.TOOL_NAMES),  # over a database too: the OpenClaw tools over any store (D-OPENCLAW-STORES)
        # several servers on one root share it (the store's write lock is a file lock across processes; over
        # SQLite, one database file in the root; over one database, the root's namespace, D-SERVE-STORE); a
        # tenant's memories are the store's own namespace (D-STORE-TENANT-FS)
        **({p.SHARE: True} if request.get(p.SHARE) is True else {}),
        p.TENANTS: True,
        p.COUNTS: True,  # answers `counts` (D-SERVE-COUNTS)
    }


def _handler_options(options: Any) -> Dict[str, Any]:
    """MemoryHandler keyword arguments for a `reset` request's `options`; refuses what it cannot build."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise _Refusal(p.BAD_REQUEST, "`options` must be an object")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise _Refusal(p.BAD_REQUEST, f"unknown option {unknown[0]!r:.80}")
    from refmem.limits import Limits
    from refmem.policy import ContentPolicy

    kwargs: Dict[str, Any] = {}
    if "read_only" in options:
        if not isinstance(options["read_only"], bool):
            raise _Refusal(p.BAD_REQUEST, "option read_only must be true or false")
        kwargs["read_only"] = options["read_only"]
    if "allow" in options:
        allow = options["allow"]
        if not isinstance(allow, list) or not all(isinstance(pattern, str) for pattern in allow):
            raise _Refusal(p.BAD_REQUEST, "option allow must be a list of glob strings")
        kwargs["allow"] = list(allow)
    if "limits" in options:
        if not isinstance(options["limits"], dict):
            raise _Refusal(p.BAD_REQUEST, "option limits must be an object")
        try:
            kwargs["limits"] = Limits.from_mapping(options["limits"])
        except (TypeError, ValueError) as exc:
            raise _Refusal(p.BAD_REQUEST, f"option limits: {exc}"[:200]) from None
    if "content_policy" in options:
        if not isinstance(options["content_policy"], str):
            raise _Refusal(p.BAD_REQUEST, "option content_policy must be a string")
        try:
            kwargs["content_policy"] = ContentPolicy(options["content_policy"])
        except ValueError as exc:
            raise _Refusal(p.BAD_REQUEST, f"option content_policy: {exc}") from None
    return kwargs


def _drop_handler(session: Session) -> None:
    """Close the current handler and workspace (their descriptors and locks) and forget them."""
    handler, session.handler = session.handler, None
    workspace, session.workspace = session.workspace, None
    store, session.store = session.store, None
    session.root = None
    session.options = {}
    for held in (workspace, handler, store):  # the workspace reads through the handler's store: first
        close = getattr(held, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):  # one that fails to close is dropped all the same
                close()


def _reset(session: Session, request: Dict[str, Any]) -> Dict[str, Any]:
    _drop_handler(session)  # a refused reset leaves no handler from an earlier case behind
    root = request.get(p.ROOT)
    if not isinstance(root, str) or not os.path.isabs(root):
        raise _Refusal(p.BAD_REQUEST, "reset needs an absolute directory path in `root`")
    if not os.path.isdir(root):  # False for a file, a FIFO, a missing path, a NUL byte, a bad encoding
        raise _Refusal(p.BAD_ROOT, "the root is not an existing directory")
    import refmem  # late: the package imports this module's siblings, not the other way round

    kwargs = _handler_options(request.get(p.OPTIONS))
    tenant = request.get(p.TENANT)
    if tenant is not None:
        from refmem.store_protocol import TenantError, tenant_name

        try:
            tenant_name(tenant)
        except TenantError as exc:
            raise _Refusal(p.BAD_REQUEST, f"tenant: {exc}"[:200]) from None
    from .stores import StoreError

    logged_as = tenant  # the tenant a command's log line names (D-OPLOG): the store's, where serve names it
    try:
        if session.location is not None:
            from .stores.location import open_location

            named = tenant if session.by_name else namespace_tenant(root, tenant)  # D-SERVE-STORE-NAMES
            logged_as = named
            session.store = open_location(session.location, tenant=named)
            tenant = None  # the namespace's tenant is the root's and the model's together
        elif session.database:
            from .stores.location import open_location, sqlite_location

            session.store = open_location(sqlite_location(os.path.join(root, DATABASE_NAME)))
        if session.store is not None and session.profile is not None:
            from .stores.hosted import PROFILES

            session.store = PROFILES[session.profile](session.store)
        session.handler = refmem.MemoryHandler(session.store or pathlib.Path(root), tenant=tenant, **kwargs)
        if session.log is not None:
            from .oplog import logged

            session.handler = logged(session.handler, logged_as, session.log)
    except Exception as exc:  # noqa: BLE001 - reported, never fatal
        session.handler = None
        _drop_handler(session)
        # a StoreError's text names no location (refmem.stores.location); anything else only by its type
        said = f"the store could not be used: {exc}" if isinstance(exc, StoreError) else type(exc).__name__
        raise _Refusal(p.RESET_FAILED, f"the handler could not be built: {said}"[:300]) from exc
    session.root = root
    session.options = kwargs
    return {p.OK: True}


def _root_namespace(root: str) -> str:
    """The namespace of `root` in the one database: 24 random hex digits kept in the root's NAMESPACE_NAME file,
    made by the first reset on the root. As with `memory.db` under `--store sqlite`, the memories go with the
    root: sessions on one root share them, a new root (or a root made again where one was) starts empty."""
    marker = os.path.join(root, NAMESPACE_NAME)
    for _ in range(3):
        try:
            return _read_namespace(marker)
        except FileNotFoundError:
            pass
        made = f"{marker}.{secrets.token_hex(8)}"
        descriptor = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        try:
            os.write(descriptor, secrets.token_hex(12).encode("ascii"))
        finally:
            os.close(descriptor)
        try:
            os.link(made, marker)  # whole or not at all: a session on the same root never reads half of it
        except FileExistsError:
            pass  # another session made it first: its namespace is the root's
        finally:
            os.unlink(made)
    raise OSError("the root's namespace file keeps changing")


def _read_namespace(marker: str) -> str:
    descriptor = os.open(marker, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        text = os.read(descriptor, 64)
    finally:
        os.close(descriptor)
    if len(text) != 24 or text.strip(b"0123456789abcdef"):
        raise ValueError("the root's namespace file is not one refmem made")
    return text.decode("ascii")


def namespace_tenant(root: str, tenant: Optional[str]) -> str:
    """The store's tenant for a reset on `root` for the model's `tenant` (None: the default one): one name per
    (root, tenant), a hash so that any two differ (D-SERVE-STORE)."""
    seed = f"{_root_namespace(root)}\0{tenant or ''}".encode()
    return NAMESPACE_PREFIX + hashlib.sha256(seed).hexdigest()[:40]


def _execute(session: Session, request: Dict[str, Any]) -> Dict[str, Any]:
    if session.handler is None:
        raise _Refusal(p.NO_ROOT, "send reset before execute")
    if p.INPUT not in request:
        raise _Refusal(p.BAD_REQUEST, "execute needs an `input`")
    tool = request.get(p.TOOL, p.TOOL_MEMORY)
    if tool != p.TOOL_MEMORY:
        return _execute_openclaw(session, tool, request[p.INPUT])
    started = time.monotonic()
    try:
        result = session.handler.execute(request[p.INPUT])
        output, is_error = result.output, result.is_error
        if not isinstance(output, str):
            raise TypeError("the handler's output is not a string")
    except Exception:  # noqa: BLE001 - the handler promises never to raise; a broken promise is a finding
        _count(session, request[p.INPUT], "internal", time.monotonic() - started)
        return {p.OUTPUT: "", p.IS_ERROR: True, p.RAISED: traceback.format_exc()}
    from .oplog import outcome_class

    _count(session, request[p.INPUT], outcome_class(output, bool(is_error)), time.monotonic() - started)
    return {p.OUTPUT: output, p.IS_ERROR: bool(is_error)}


def _count(session: Session, tool_input: object, outcome: str, seconds: float) -> None:
    """One memory-tool command counted by its name (`unknown` for anything else: never the model's text) and its
    outcome class (D-OPLOG's): a bounded table, whatever the session sends."""
    from .oplog import command_name

    command = command_name(tool_input)
    by_outcome = session.counts.setdefault(command, {})
    by_outcome[outcome] = by_outcome.get(outcome, 0) + 1
    session.ms[command] = session.ms.get(command, 0.0) + seconds * 1000


def _counts(session: Session, request: Dict[str, Any]) -> Dict[str, Any]:
    """D-SERVE-COUNTS: the session's memory-tool commands since `start` (every reset's alike), by command and outcome
    class, and the milliseconds they took per command; reading them changes nothing."""
    return {
        p.COUNTS: {command: dict(sorted(outcomes.items())) for command, outcomes in sorted(session.counts.items())},
        p.COUNTS_MS: {command: round(ms, 3) for command, ms in sorted(session.ms.items())},
    }


def _workspace_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """The reset's handler options as the OpenClaw tools take them: the same allow-list, read-only
    flag and path limits (D-OPENCLAW-ALLOW); the content policy vets text written, and these tools
    write none."""
    kwargs: Dict[str, Any] = {}
    if "allow" in options:
        kwargs["allow"] = options["allow"]
    if "read_only" in options:
        kwargs["read_only"] = options["read_only"]
    if "limits" in options:
        kwargs["path_limits"] = options["limits"]
    return kwargs


def _execute_openclaw(session: Session, tool: Any, tool_input: Any) -> Dict[str, Any]:
    """`memory_get` or `memory_search` over the memory tool's own store (the reset's tenant's: the same files, the
    same walk), under the same options as the memory tool. Never over the reset's root as such: a reset with a
    tenant would then read and search the default namespace's memories (D-OPENCLAW-STORES)."""
    if tool not in p.TOOL_NAMES:
        raise _Refusal(p.UNKNOWN_TOOL, f"this server runs the tools {', '.join(p.TOOL_NAMES)}")
    from refmem.openclaw import OpenClawMemory
    from refmem.openclaw.tools import reply

    if session.handler is None:
        raise _Refusal(p.NO_ROOT, "send reset before execute")
    if session.workspace is None:
        try:  # the handler's store stays the handler's: the workspace does not close it
            session.workspace = OpenClawMemory(session.handler.store, **_workspace_options(session.options))
        except Exception as exc:  # noqa: BLE001 - reported, never fatal
            raise _Refusal(p.RESET_FAILED, f"the workspace could not be opened: {type(exc).__name__}") from exc
    return reply(session.workspace, tool, tool_input)


def _stop(session: Session, request: Dict[str, Any]) -> Dict[str, Any]:
    _drop_handler(session)
    session.stopped = True
    return {}


_COMMANDS: Dict[str, Callable[[Session, Dict[str, Any]], Dict[str, Any]]] = {
    p.CMD_START: _start,
    p.CMD_RESET: _reset,
    p.CMD_EXECUTE: _execute,
    p.CMD_STOP: _stop,
    p.CMD_COUNTS: _counts,
}

_NEEDS_START = frozenset(p.SEQUENCED_COMMANDS + (p.CMD_COUNTS,))


def _answer(session: Session, request: Any) -> Optional[Dict[str, Any]]:
    """The reply to one decoded request, or None after `stop`."""
    if not isinstance(request, dict):
        raise _Refusal(p.BAD_REQUEST, f"a request must be a JSON object, not {p.json_type(request)}")
    seq = request.get(p.SEQ)
    if seq is not None and not p.valid_seq(seq):
        raise _Refusal(p.BAD_REQUEST, "`seq` must be a positive integer")
    name = request.get(p.CMD)
    if not isinstance(name, str):
        raise _Refusal(p.BAD_REQUEST, f"`cmd` must be a string, not {p.json_type(name)}")
    command = _COMMANDS.get(name)
    if command is None:
        raise _Refusal(p.UNKNOWN_CMD, f"unknown cmd {name!r:.80}")
    if name in _NEEDS_START and not session.started:
        raise _Refusal(p.NOT_STARTED, "send start first")
    reply = command(session, request)
    if session.stopped:
        return None
    return reply if seq is None else dict({p.SEQ: seq}, **reply)


def handle_line(session: Session, line: Union[str, bytes]) -> Optional[Dict[str, Any]]:
    """The reply to one request line, or None when nothing is to be written (a blank line, `stop`).

    Never raises for any line: whatever goes wrong becomes an error reply.
    """
    try:
        request = p.decode_line(line)
    except p.LineError as error:
        return p.error_reply(error.code, error.message)
    if request is p.BLANK:
        return None
    seq = request.get(p.SEQ) if isinstance(request, dict) else None
    echo = seq if p.valid_seq(seq) else None
    try:
        return _answer(session, request)
    except _Refusal as refusal:
        return p.error_reply(refusal.code, refusal.message, echo)
    except Exception as exc:  # noqa: BLE001 - never crash on a line
        return p.error_reply(p.INTERNAL, f"the server failed on this request: {type(exc).__name__}", echo)


def encode_reply(reply: Dict[str, Any]) -> str:
    """One reply as a JSON line (no newline); a reply that cannot be encoded becomes an `internal` error."""
    try:
        return p.encode_message(reply)
    except (TypeError, ValueError, RecursionError):
        seq = reply.get(p.SEQ)
        return p.encode_message(
            p.error_reply(p.INTERNAL, "the reply could not be encoded as JSON", seq if p.valid_seq(seq) else None)
        )


def read_lines(stream: IO[Any], limit: int = p.MAX_LINE_BYTES) -> Iterator[Optional[Union[str, bytes]]]:
    """The lines of `stream`, newline kept; None stands for a line longer than `limit`, which is read
    to its end in chunks and never held whole. `limit` counts bytes on a binary stream, characters on a
    text one."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n" if isinstance(line, bytes) else "\n"):
            yield line
            continue
        while line and not line.endswith(b"\n" if isinstance(line, bytes) else "\n"):
            line = stream.readline(_READ_CHUNK)
        yield None


def serve(
    stdin: IO[Any],
    stdout: IO[str],
    max_line_bytes: int = p.MAX_LINE_BYTES,
    database: bool = False,
    location: Optional[str] = None,
    by_name: bool = False,
    log: Optional[Callable[[str], None]] = None,
    profile: Optional[str] = None,
) -> int:
    """Answer requests from `stdin` (binary, or text for tests) on `stdout` until `stop` or the end of
    input; returns the exit status. With `database`, each reset's root holds an SQLite database
    (`DATABASE_NAME`) instead of the memories as files. With `location` (`postgresql://...` or `sqlite:...`,
    never shown), every root's memories are a namespace of their own in that one database (`namespace_tenant`).
    Every tool runs over the reset's store, whichever it is (D-SERVE-STORE). With `by_name` (and `location`), a
    reset's memories are those of the tenant it names (the default tenant when it names none), in every root alike:
    the names `refmem db tenants`, `db erase` and `prune --store` know (D-SERVE-STORE-NAMES). With `profile` (a
    name of `refmem.stores.hosted.PROFILES`, and a database), every reset's store keeps its rules (D-HOSTED-CLI)."""
    session = Session()
    session.database = database or location is not None
    session.location = location
    session.by_name = by_name and location is not None
    session.log = log  # one line per command to it (D-OPLOG)
    session.profile = profile if session.database else None
    for line in read_lines(stdin, max_line_bytes):
        if line is None:
            too_long = p.LineError("too_long", max_line_bytes)
            reply: Optional[Dict[str, Any]] = p.error_reply(too_long.code, too_long.message)
        else:
            reply = handle_line(session, line)
        if reply is not None:
            stdout.write(encode_reply(reply) + "\n")
            stdout.flush()
        if session.stopped:
            break
    return 0


def check_location(location: str) -> Optional[str]:
    """Why the store at `location` cannot be served (its StoreError's text, naming no location), or None: a
    server that could answer no reset says so once, before `start`, instead of at every reset."""
    from .stores import StoreError
    from .stores.location import open_location

    try:
        store = open_location(location)
    except StoreError as error:
        return str(error)
    close = getattr(store, "close", None)
    if close is not None:
        close()
    return None


def main(
    database: bool = False,
    location: Optional[str] = None,
    by_name: bool = False,
    log: bool = False,
    profile: Optional[str] = None,
) -> int:
    if location is not None:
        refused = check_location(location)
        if refused is not None:
            print(f"refmem: cannot use the store: {refused}", file=sys.stderr)
            return 2
    try:
        sink = (lambda text: print(text, file=sys.stderr, flush=True)) if log else None
        return serve(
            sys.stdin.buffer, sys.stdout, database=database, location=location, by_name=by_name, log=sink,
            profile=profile,
        )
    except BrokenPipeError:
        # The runner stopped reading; nothing is left to answer. Python's own flush at exit would
        # fail again and print a traceback, so standard output is pointed at nothing first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0


if __name__ == "__main__":
    sys.exit(main())
