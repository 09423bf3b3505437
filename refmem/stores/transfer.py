"""A tenant's export and import (D-STORE-TRANSFER): its folders, files and kept versions, moved whole between stores
of any SQL engine through one documented file format (docs/tenant-export.md), so that a round trip gives
byte-identical listings, views and history.

    with open("alice.jsonl", "wb") as out:
        export_tenant(SqliteStore(path, tenant="alice"), out)
    with open("alice.jsonl", "rb") as source:
        import_tenant(PostgresStore(dsn, tenant="alice"), source)

The format is JSON lines: a header with the format's name and version, then the tenant's folders and files in key
order (every folder before what it holds), then its versions in (path, number) order, then an end record that counts
them. Both ends stream: the export reads the rows a page at a time in one read transaction (one state of the tenant),
the import writes each record as it reads it in one writing transaction of the tenant (all or nothing), so the
memory either needs is a page, and one line, bounded by the store's `max_file_bytes`, never the tenant's size.

Over the SQL stores' rows (the statements are built here from the store's dialect, as `schema.Queries` builds its
own), so the same code serves SQLite, PostgreSQL and any engine that keeps `core.SqlStore`'s tables. An import is a
deployer's operation: it checks every record (paths by the handler's own rules, each content against its SHA-256
and size, the order, the counts) and refuses anything else with a `TransferError` that names no file or location;
nothing is written unless the whole file was read and accepted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from typing import Any, BinaryIO, ContextManager, Dict, List, NamedTuple, Optional, Protocol, Sequence, Tuple

from .._store_messages import (
    TRANSFER_AFTER_END,
    TRANSFER_BAD_LINE,
    TRANSFER_COUNTS,
    TRANSFER_NOT_EMPTY,
    TRANSFER_NOT_FORMAT,
    TRANSFER_OVER_HISTORY,
    TRANSFER_TRUNCATED,
    TRANSFER_VERSION,
)
from ..limits import HistoryLimits, Limits
from ..paths import RESERVED_PREFIX, ROOT, PathError, parse_path
from ..problems import DIR, FILE, OsFailure
from .history import ECHO_CHARS, actor_name
from .quota import Quota
from .schema import DEFAULT_TENANT, VERSION_ROW_BYTES, Queries

FORMAT = "refmem-tenant"
"""The format's name, in the header."""
FORMAT_VERSION = 1
"""The format's version, in the header: an import refuses any other (a later refmem may read several)."""
PAGE_ROWS = 64
"""Rows an export reads at a time: its memory is this many rows (each at most `max_file_bytes` of content)."""
LINE_SLACK = 16_384
"""What a line may hold beyond its content's base64: the path (at most `max_path_bytes`, escaped), the actor, the
command and the JSON around them."""
NUMBERS = (1, 2**63 - 1)
"""The version numbers a store can hold (a generation: a signed 64-bit integer from 1 on)."""


class TransferError(ValueError):
    """An export that cannot be imported, or a tenant that cannot take it; the message says why, naming no file."""


class Counts(NamedTuple):
    folders: int
    files: int
    versions: int


class SqlTenant(Protocol):
    """What this module needs of `core.SqlStore` (as `history.SqlRows` does): its tenant's rows and transactions."""

    queries: Queries
    tenant_key: str
    limits: Limits
    history_limits: HistoryLimits
    quota: Quota

    def _run(self, sql: str, params: Sequence[Any]) -> Any: ...

    def _one(self, sql: str, params: Sequence[Any]) -> Optional[Tuple[Any, ...]]: ...

    def _all(self, sql: str, params: Sequence[Any]) -> List[Tuple[Any, ...]]: ...

    def locked(self) -> ContextManager[None]: ...

    def reading(self) -> ContextManager[None]: ...

    def erase(self) -> Tuple[int, int]: ...


class _Statements:
    """The statements of an export and an import, in the store's dialect (every one names its tenant)."""

    def __init__(self, queries: Queries) -> None:
        p = queries.dialect.placeholder

        def q(template: str) -> str:
            return template.replace("{p}", p)

        self.nodes = q(
            "SELECT path, kind, data, used FROM refmem_nodes WHERE tenant = {p} AND path > {p} ORDER BY path LIMIT {p}"
        )
        self.versions = q(
            "SELECT path, number, size, sha256, kept_at, actor, command, data FROM refmem_versions"
            " WHERE tenant = {p} AND (path, number) > ({p}, {p}) ORDER BY path, number LIMIT {p}"
        )
        self.any_node = q("SELECT 1 FROM refmem_nodes WHERE tenant = {p} LIMIT 1")
        self.any_version = q("SELECT 1 FROM refmem_versions WHERE tenant = {p} LIMIT 1")
        self.add_version = q(
            "INSERT INTO refmem_versions (tenant, path, number, size, sha256, kept_at, actor, command, data)"
            " VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})"
        )
        self.finish = q(
            "UPDATE refmem_tenants SET generation = {p}, floor = {p}, files = {p}, content_bytes = {p},"
            " version_bytes = {p} WHERE tenant = {p}"
        )


# --- export ----------------------------------------------------------------------------------------------------


def _line(record: Dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def _b64(data: Any) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def export_tenant(store: SqlTenant, out: BinaryIO) -> Counts:
    """The store's tenant written to `out` in the format (docs/tenant-export.md), from one state of the tenant;
    what it wrote, counted."""
    st = _Statements(store.queries)
    tenant = store.tenant_key
    folders = files = versions = 0
    out.write(_line({"format": FORMAT, "version": FORMAT_VERSION}))
    with store.reading():
        after = ""
        while True:
            rows = store._all(st.nodes, (tenant, after, PAGE_ROWS))
            for path, kind, data, used in rows:
                used_at = None if used is None else float(used)
                if kind == DIR:
                    folders += 1
                    out.write(_line({"type": "folder", "path": path, "used": used_at}))
                elif kind == FILE:
                    files += 1
                    content = bytes(data)
                    out.write(_line({
                        "type": "file", "path": path, "used": used_at, "size": len(content),
                        "sha256": hashlib.sha256(content).hexdigest(), "data": _b64(content),
                    }))
            if len(rows) < PAGE_ROWS:
                break
            after = rows[-1][0]
        after_path, after_number = "", 0
        while True:
            rows = store._all(st.versions, (tenant, after_path, after_number, PAGE_ROWS))
            for path, number, size, sha256, kept_at, actor, command, data in rows:
                versions += 1
                out.write(_line({
                    "type": "version", "path": path, "number": int(number), "at": float(kept_at), "actor": actor,
                    "command": command, "size": int(size), "sha256": sha256, "data": _b64(data),
                }))
            if len(rows) < PAGE_ROWS:
                break
            after_path, after_number = rows[-1][0], int(rows[-1][1])
    out.write(_line({"type": "end", "folders": folders, "files": files, "versions": versions}))
    return Counts(folders, files, versions)


# --- import ----------------------------------------------------------------------------------------------------

_FIELDS = {
    "folder": {"type", "path", "used"},
    "file": {"type", "path", "used", "size", "sha256", "data"},
    "version": {"type", "path", "number", "at", "actor", "command", "size", "sha256", "data"},
    "end": {"type", "folders", "files", "versions"},
}
"""Every record's fields, exactly: a record with any other is refused (the format's version says what it holds)."""


class _Bad(Exception):
    """A record that breaks the format: why, in a few words (the line number is added where it is caught)."""


def _refuse_constant(name: str) -> Any:
    raise _Bad(f"{name} is not a number")


def _record(raw: bytes) -> Dict[str, Any]:
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except _Bad:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Bad("not a JSON object") from None
    if not isinstance(value, dict):
        raise _Bad("not a JSON object")
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise _Bad("no known type")
    if set(value) != _FIELDS[kind]:
        raise _Bad(f"a {kind} record has other fields")
    return value


def _integer(value: object, low: int, high: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise _Bad(f"{what} is not an integer from {low} to {high}")
    return value


def _time(value: object, what: str, optional: bool = False) -> Optional[float]:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise _Bad(f"{what} is not a time")
    return float(value)


def _path(value: object, limits: Limits) -> Tuple[str, Tuple[str, ...]]:
    """A stored path ("a/b", below /memories) the handler itself would accept, as its key and names."""
    if not isinstance(value, str) or not value:
        raise _Bad("a path is not a path below /memories")
    try:
        parsed = parse_path(f"{ROOT}/{value}", limits)
    except PathError:
        raise _Bad("a path breaks the paths' rules") from None
    if parsed.trailing_slash or "/".join(parsed.parts) != value:
        raise _Bad("a path is not in its canonical form")
    if any(name.startswith(RESERVED_PREFIX) for name in parsed.parts):
        raise _Bad("a path names the store's own bookkeeping")
    return value, parsed.parts


def _content(record: Dict[str, Any], limits: Limits) -> bytes:
    size = _integer(record["size"], 0, limits.max_file_bytes, "a size")
    encoded = record["data"]
    if not isinstance(encoded, str) or len(encoded) > 4 * (size // 3 + 1):
        raise _Bad("data is not base64 of its size")
    try:
        data = base64.b64decode(encoded.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        raise _Bad("data is not base64") from None
    if len(data) != size:
        raise _Bad("data is not of its size")
    sha256 = record["sha256"]
    if not isinstance(sha256, str) or hashlib.sha256(data).hexdigest() != sha256:
        raise _Bad("data does not have its SHA-256")
    return data


class _Import:
    """One import's state: what the records so far added, and the order they must keep."""

    def __init__(self, store: SqlTenant) -> None:
        self.store = store
        self.st = _Statements(store.queries)
        self.tenant = store.tenant_key
        self.folders = self.files = self.versions = 0
        self.content_bytes = 0
        self.version_bytes = 0
        self.last_node = ""
        self.last_version: Tuple[str, int] = ("", 0)
        self.path_versions = 0
        self.top_number = 0
        self.generation = 0

    def node(self, record: Dict[str, Any]) -> None:
        store, limits = self.store, self.store.limits
        if self.versions:
            raise _Bad("a folder or file after the versions")
        key, parts = _path(record["path"], limits)
        if key <= self.last_node:
            raise _Bad("paths out of order, or repeated")
        used = _time(record["used"], "used", optional=True)
        parent = "/".join(parts[:-1])
        if parent:
            row = store._one(store.queries.kind, (self.tenant, parent))
            if row is None or row[0] != DIR:
                raise _Bad("a path whose folder is not a folder of the export")
        if record["type"] == "folder":
            kind, data, size = DIR, None, 0
            self.folders += 1
        else:
            content = _content(record, limits)
            kind, data, size = FILE, content, len(content)
            self.files += 1
            self.content_bytes += size
        row_values = (self.tenant, key, parent, parts[-1], len(parts), kind, size, data, self.generation, used)
        store._run(store.queries.insert, row_values)
        self.last_node = key

    def version(self, record: Dict[str, Any]) -> None:
        store, limits = self.store, self.store.limits
        key, _ = _path(record["path"], limits)
        number = _integer(record["number"], NUMBERS[0], NUMBERS[1], "a version's number")
        if (key, number) <= self.last_version:
            raise _Bad("versions out of order, or repeated")
        self.path_versions = self.path_versions + 1 if key == self.last_version[0] else 1
        if self.path_versions > store.history_limits.versions_per_file:
            raise TransferError(TRANSFER_OVER_HISTORY.format(what="versions_per_file"))
        at = _time(record["at"], "a version's time")
        try:
            actor = actor_name(record["actor"], store.history_limits)
        except ValueError:
            raise _Bad("an actor is not a printable name") from None
        command = record["command"]
        if not isinstance(command, str) or not 0 < len(command) <= ECHO_CHARS or not command.isprintable():
            raise _Bad("a command is not a printable name")
        data = _content(record, limits)
        self.versions += 1
        self.version_bytes += len(data) + VERSION_ROW_BYTES
        if self.version_bytes > store.history_limits.bytes_per_tenant:
            raise TransferError(TRANSFER_OVER_HISTORY.format(what="bytes_per_tenant"))
        self.top_number = max(self.top_number, number)
        store._run(self.st.add_version, (self.tenant, key, number, len(data), record["sha256"], at, actor, command,
                                         data))
        self.last_version = (key, number)

    def end(self, record: Dict[str, Any]) -> None:
        counted = tuple(_integer(record[name], 0, NUMBERS[1], "a count") for name in ("folders", "files", "versions"))
        if counted != (self.folders, self.files, self.versions):
            raise TransferError(TRANSFER_COUNTS)
        refusal = self.store.quota.refusal((self.files, self.content_bytes), (self.files, self.content_bytes))
        if refusal is not None:
            raise OsFailure(refusal)
        # The tenant's generation past every imported version's number, so the next change numbers its versions
        # above them; and its journal's floor there too, so every generation a reader held before answers "rescan".
        generation = max(self.generation, self.top_number) + 1
        self.store._run(self.st.finish, (generation, generation, self.files, self.content_bytes, self.version_bytes,
                                         self.tenant))


def import_tenant(store: SqlTenant, source: BinaryIO, replace: bool = False) -> Counts:
    """The export read from `source` made the store's tenant's memories and history, in one writing transaction of the
    tenant: all of it, or (TransferError, or the store's own OsFailure) nothing. The tenant must hold nothing
    (TRANSFER_NOT_EMPTY) unless `replace`, which erases it first in the same transaction."""
    st = _Statements(store.queries)
    tenant = store.tenant_key
    limit = 4 * (store.limits.max_file_bytes // 3 + 1) + LINE_SLACK
    with store.locked():
        store._run(store.queries.add_tenant, (tenant,))
        if store._one(st.any_node, (tenant,)) is not None or store._one(st.any_version, (tenant,)) is not None:
            if not replace:
                shown = "(default)" if tenant == DEFAULT_TENANT else tenant
                raise TransferError(TRANSFER_NOT_EMPTY.format(tenant=shown))
            store.erase()
        state = _Import(store)
        row = store._one(store.queries.generation, (tenant,))
        state.generation = 1 if row is None else int(row[0])
        number = 0
        ended = False
        while True:
            raw = source.readline(limit + 1)
            if not raw:
                break
            number += 1
            if ended:
                raise TransferError(TRANSFER_AFTER_END.format(line=number))
            if len(raw) > limit or not raw.endswith(b"\n"):
                if number == 1:
                    raise TransferError(TRANSFER_NOT_FORMAT)
                raise TransferError(TRANSFER_BAD_LINE.format(line=number, why="too long, or without its newline"))
            if number == 1:
                _header(raw)
                continue
            try:
                record = _record(raw)
                kind = record["type"]
                if kind == "end":
                    state.end(record)
                    ended = True
                elif kind == "version":
                    state.version(record)
                else:
                    state.node(record)
            except _Bad as bad:
                raise TransferError(TRANSFER_BAD_LINE.format(line=number, why=bad)) from None
        if number == 0:
            raise TransferError(TRANSFER_NOT_FORMAT)
        if not ended:
            raise TransferError(TRANSFER_TRUNCATED)
    return Counts(state.folders, state.files, state.versions)


def _header(raw: bytes) -> None:
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (_Bad, UnicodeDecodeError, ValueError, RecursionError):
        raise TransferError(TRANSFER_NOT_FORMAT) from None
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise TransferError(TRANSFER_NOT_FORMAT)
    version = value.get("version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        shown = version if isinstance(version, int) and not isinstance(version, bool) else "?"
        raise TransferError(TRANSFER_VERSION.format(found=shown, known=FORMAT_VERSION))
    if set(value) != {"format", "version"}:
        raise TransferError(TRANSFER_NOT_FORMAT)
