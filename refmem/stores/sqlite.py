"""The SQLite store: every memory of every tenant in one database file (standard library `sqlite3` only).

    store = SqliteStore("/var/lib/app/memory.db")          # made if missing
    handler = MemoryHandler(store, tenant="alice")          # or SqliteStore(path, tenant="alice")

What it promises (SECURITY.md, docs/spec-notes.md D-STORE-SQL-*):
* One transaction per command: `locked()` is `BEGIN IMMEDIATE`, so writers queue on SQLite's write lock
  (many processes on one host: each opens its own connection) and a read-modify-write reads the very row
  it writes. Before it they queue on the writer gate beside the database (gate.py, D-STORE-SQL-GATE), which
  lets the next writer in within 2 ms where SQLite's busy handler sleeps up to 100 ms. Readers never wait for
  writers (write-ahead log). A writer that finds the database busy waits `BUSY_SECONDS`, then tries again up to
  `BUSY_RETRIES` times, then answers with the D-STORE-SQL-BUSY reason.
* A process killed mid-command leaves the database as it was before the command or after it: SQLite's
  journal makes the transaction atomic, and `synchronous=FULL` makes a committed one durable.
* A database on a network filesystem is refused (mounts.py): SQLite's locks do not work across hosts.
* The schema is versioned (`refmem_schema`): a newer database than this refmem reads is refused, never
  written; an older one is refused until `refmem db migrate` (`migrate`) brings it to this refmem's.
* Engine errors become the problems the handler words (`problems.OsFailure` codes); no message of SQLite's,
  no host path, ever reaches a result.

A store is one connection, used by one thread at a time (a lock inside serialises threads that share it). Open
stores after a fork, never before: a connection must not cross into a child process.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from .. import problems
from .._store_messages import (
    STORE_CANNOT_OPEN,
    STORE_NETWORK_FS,
    STORE_NO_WAL,
    STORE_NOT_A_DATABASE,
    STORE_SCHEMA_NEWER,
    STORE_SCHEMA_OLDER,
)
from ..limits import DEFAULT_HISTORY_LIMITS, DEFAULT_LIMITS, HistoryLimits, Limits
from ..messages import IO_REASONS, io_reason
from ..store_protocol import tenant_name
from . import StoreError, mounts
from .core import Params, SqlStore
from .gate import WriterGate
from .quota import Quota
from .schema import DEFAULT_TENANT, RECOUNTS, SCHEMA_VERSION, SQLITE, Queries, upgrade

BUSY_SECONDS = 5.0
"""How long one attempt waits for another writer's transaction (SQLite's busy handler)."""
BUSY_RETRIES = 4
"""Attempts after the first before a busy database is reported: a bound, so no command waits forever."""
QUERIES = Queries(SQLITE)

# SQLite's primary result codes (sqlite3.h), and the IO reason each stands for.
_REASON_BY_CODE: Dict[int, str] = {
    3: "denied",  # SQLITE_PERM
    5: "busy",  # SQLITE_BUSY
    6: "busy",  # SQLITE_LOCKED
    7: "os",  # SQLITE_NOMEM
    8: "read_only_fs",  # SQLITE_READONLY
    10: "io",  # SQLITE_IOERR
    11: "io",  # SQLITE_CORRUPT
    13: "no_space",  # SQLITE_FULL
    14: "os",  # SQLITE_CANTOPEN
    23: "denied",  # SQLITE_AUTH
    26: "io",  # SQLITE_NOTADB
}
# Extended result codes that say more than their primary code: SQLITE_IOERR_SHMSIZE is SQLite failing to grow the
# `-shm` file beside the database (its first byte written by each connection that opens it when no other has it
# open), which on a full disk is the first thing to fail: read as "io", a full disk passed for a damaged database.
_REASON_BY_EXTENDED_CODE: Dict[int, str] = {
    10 | (19 << 8): "no_space",  # SQLITE_IOERR_SHMSIZE
}
# Before Python 3.11 an error has no code: its text (SQLite's fixed English) tells.
_REASON_BY_TEXT = (
    ("database is locked", "busy"),
    ("database table is locked", "busy"),
    ("disk i/o error", "io"),
    ("database or disk is full", "no_space"),
    ("readonly database", "read_only_fs"),
    ("malformed", "io"),
    ("not a database", "io"),
    ("unable to open", "os"),
)


def reason_of(error: sqlite3.Error) -> str:
    """The IO reason (messages.IO_REASONS key) an sqlite3 error stands for, by its code, else its text."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int) and code in _REASON_BY_EXTENDED_CODE:
        return _REASON_BY_EXTENDED_CODE[code]
    if isinstance(code, int) and (code & 0xFF) in _REASON_BY_CODE:
        return _REASON_BY_CODE[code & 0xFF]
    said = str(error).lower()
    for words, reason in _REASON_BY_TEXT:
        if words in said:
            return reason
    return "os"


def _sha256_hex(data: Optional[bytes]) -> Optional[str]:
    """SQLite's `refmem_sha256(data)` (schema.SQLITE.sha256_hex): SQLite has no SHA-256 of its own."""
    return None if data is None else hashlib.sha256(bytes(data)).hexdigest()


def _schema_version(db: sqlite3.Connection) -> Optional[int]:
    present = db.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'refmem_schema'"
    ).fetchone()
    if not present or not present[0]:
        return None
    row = db.execute(QUERIES.schema_version).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def migrate(path: Union[str, os.PathLike[str]]) -> Tuple[Optional[int], int]:
    """`refmem db init|migrate` for SQLite: the database at `path` made (where it has no schema) or brought to this
    refmem's schema, in one transaction; (version before, version after). A newer schema: StoreError, untouched."""
    kind = mounts.network_type_of(os.path.dirname(os.path.abspath(os.fspath(path))) or ".")
    if kind is not None:
        raise StoreError(STORE_NETWORK_FS.format(kind=kind))
    make_private(os.fspath(path))
    try:
        db = sqlite3.connect(os.fspath(path), timeout=BUSY_SECONDS, isolation_level=None)
    except sqlite3.Error as error:
        raise StoreError(STORE_CANNOT_OPEN.format(reason=IO_REASONS[reason_of(error)])) from None
    try:
        db.execute(SQLITE.begin_write)
        try:
            found = _schema_version(db)
            if found is not None and found > SCHEMA_VERSION:
                raise StoreError(STORE_SCHEMA_NEWER.format(found=found, known=SCHEMA_VERSION))
            if found is not None:
                for version in range(found + 1, SCHEMA_VERSION + 1):
                    for statement in upgrade(SQLITE, version) + RECOUNTS.get(version, ()):
                        db.execute(statement)
                db.execute("UPDATE refmem_schema SET version = ?", (SCHEMA_VERSION,))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    except sqlite3.DatabaseError as error:
        if reason_of(error) == "io":
            raise StoreError(STORE_NOT_A_DATABASE) from None
        raise StoreError(STORE_CANNOT_OPEN.format(reason=IO_REASONS[reason_of(error)])) from None
    finally:
        db.close()
    if found is None:
        SqliteStore(path).close()  # a database without the schema: the store makes it, in WAL mode
    return found, SCHEMA_VERSION


PRIVATE_MODE = 0o600
"""The mode a database this refmem makes is created with (D-STORE-SQL-MODE): SQLite gives its `-wal` and `-shm`
files the database's own mode, so all three are the store's user's alone, as the filesystem store's files are."""


def make_private(path: str) -> None:
    """The database file made, empty and 0600, where nothing is at `path` (SQLite then writes its header into it);
    an existing file is left as it is (D-STORE-SQL-MODE: `refmem db check` reports one open to other users)."""
    if path in ("", ":memory:") or path.startswith("file:"):
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, PRIVATE_MODE)
    except OSError:  # there already (SQLite opens it), or not makeable (SQLite says why, as a reason)
        return
    os.close(fd)


def _busy(error: sqlite3.Error) -> bool:
    return isinstance(error, sqlite3.OperationalError) and reason_of(error) == "busy"


class SqliteEngine:
    """The SQLite engine of `SqlStore` (`core.Engine`): one connection to the database file at `path`, for the tenant
    `tenant_key` (whose row it makes). StoreError when the database cannot serve (see `SqliteStore`)."""

    queries = QUERIES
    first_mutation_savepoint = True

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        tenant_key: str,
        busy_seconds: float = BUSY_SECONDS,
        busy_retries: int = BUSY_RETRIES,
        allow_network_filesystem: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.tenant_key = tenant_key
        self.busy_seconds = busy_seconds
        self.busy_retries = busy_retries
        self.allow_network = allow_network_filesystem
        self.gate = WriterGate(self.path)  # writers queue here before SQLite's lock (D-STORE-SQL-GATE)
        if not allow_network_filesystem:
            kind = mounts.network_type_of(os.path.dirname(os.path.abspath(self.path)) or ".")
            if kind is not None:
                raise StoreError(STORE_NETWORK_FS.format(kind=kind))
        make_private(self.path)
        try:
            self.db = sqlite3.connect(self.path, timeout=busy_seconds, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:
            raise StoreError(STORE_CANNOT_OPEN.format(reason=IO_REASONS[reason_of(error)])) from None
        try:
            self.db.create_function("refmem_sha256", 1, _sha256_hex, deterministic=True)
            self._prepare()
        except BaseException:
            self.db.close()
            raise

    def _prepare(self) -> None:
        """Pragmas, then the schema: made where missing, refused when newer than this refmem's."""
        try:
            mode = self._retrying(lambda: self.db.execute("PRAGMA journal_mode=WAL").fetchone())
            if mode is None or str(mode[0]).lower() != "wal":
                raise StoreError(STORE_NO_WAL)
            for pragma in ("synchronous=FULL", "trusted_schema=OFF", "foreign_keys=OFF"):
                self.db.execute(f"PRAGMA {pragma}")
            self.begin_write("")
            try:
                found = _schema_version(self.db)
                if found is not None and found > SCHEMA_VERSION:
                    raise StoreError(STORE_SCHEMA_NEWER.format(found=found, known=SCHEMA_VERSION))
                if found is not None and found < SCHEMA_VERSION:
                    raise StoreError(STORE_SCHEMA_OLDER.format(found=found, known=SCHEMA_VERSION))
                for statement in QUERIES.ddl:
                    self.db.execute(statement)
                if found is None:
                    self.db.execute(QUERIES.set_schema_version, (SCHEMA_VERSION,))
                self.db.execute(QUERIES.add_tenant, (self.tenant_key,))
            except BaseException:
                self.rollback()
                raise
            self.commit()
        except sqlite3.DatabaseError as error:
            if reason_of(error) == "io":
                raise StoreError(STORE_NOT_A_DATABASE) from None
            raise StoreError(STORE_CANNOT_OPEN.format(reason=IO_REASONS[reason_of(error)])) from None
        except problems.OsFailure as failure:
            raise StoreError(STORE_CANNOT_OPEN.format(reason=io_reason(failure.code))) from None

    def execute(self, sql: str, params: Params) -> Any:
        return self.db.execute(sql, params if isinstance(params, Mapping) else tuple(params))

    def finished(self, cursor: Any) -> None:
        cursor.close()

    def _retrying(self, attempt: Any) -> Any:
        """`attempt()`, tried again while the database is busy, at most `busy_retries` more times."""
        for tries in range(self.busy_retries + 1):
            try:
                return attempt()
            except sqlite3.OperationalError as error:
                if not _busy(error):
                    raise
                if tries == self.busy_retries:
                    raise problems.OsFailure("busy") from None
                time.sleep(min(0.05 * 2**tries, 1.0))
        raise problems.OsFailure("busy")  # not reached: the loop returns or raises

    def begin_write(self, command: str) -> None:
        if not self.gate.acquire(self.busy_seconds * (self.busy_retries + 1)):
            raise problems.OsFailure("busy")
        try:
            self._retrying(lambda: self.db.execute(SQLITE.begin_write))
        except BaseException as error:
            self.gate.release()
            if isinstance(error, sqlite3.Error):
                raise problems.OsFailure(reason_of(error)) from None
            raise

    def restart_write(self, command: str) -> None:
        """Never raises: the mutation's own failure is what its caller hears."""
        with contextlib.suppress(Exception):
            self.rollback()
        with contextlib.suppress(Exception):
            self.begin_write(command)

    def begin_read(self) -> None:
        try:
            self._retrying(lambda: self.db.execute("BEGIN"))
        except sqlite3.Error as error:
            raise problems.OsFailure(reason_of(error)) from None

    def begin_single(self) -> bool:
        return True  # autocommit (isolation_level None): the statement is a read transaction of its own

    def commit(self) -> None:
        try:
            self._retrying(lambda: self.db.execute("COMMIT"))
        except sqlite3.Error as error:
            raise problems.OsFailure(reason_of(error)) from None
        finally:
            if not self.db.in_transaction:
                self.gate.release()

    def rollback(self) -> None:
        try:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        finally:
            self.gate.release()

    def use_unwaiting(self, params: Tuple[Any, ...]) -> None:
        """The gate and SQLite's write lock each tried once, without waiting (D-STORE-SQL-USES): a view's use is not
        worth a wait behind a writer."""
        if not self.gate.acquire(0):
            return
        try:
            self.db.execute("PRAGMA busy_timeout = 0")
            try:
                self.db.execute(SQLITE.begin_write)
            except sqlite3.Error:
                return  # another process's writer holds the database's lock: the next view tries again
            finally:
                self.db.execute(f"PRAGMA busy_timeout = {int(self.busy_seconds * 1000)}")
            try:
                self.db.execute(QUERIES.use, params)
                self.db.execute("COMMIT")
            except sqlite3.Error:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
        finally:
            self.gate.release()

    def failure(self, error: Exception) -> Optional[problems.FsProblem]:
        if isinstance(error, sqlite3.Error):
            return problems.OsFailure(reason_of(error))
        return None

    def reopen(self, tenant: str, actor: Optional[str], like: SqlStore) -> SqliteStore:
        return SqliteStore(
            self.path,
            tenant=tenant,
            busy_seconds=self.busy_seconds,
            busy_retries=self.busy_retries,
            allow_network_filesystem=self.allow_network,
            actor=actor,
            history=like.history_limits,
            limits=like.limits,
            quota=like.quota,
        )

    def close(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            self.db = None  # type: ignore[assignment]
            db.close()
        gate = getattr(self, "gate", None)
        if gate is not None:
            gate.close()


class SqliteStore(SqlStore):
    """Memories in one SQLite database file (`store_protocol.Store`; see the module docstring): `SqlStore` over a
    `SqliteEngine`."""

    engine: SqliteEngine

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        tenant: Optional[str] = None,
        busy_seconds: float = BUSY_SECONDS,
        busy_retries: int = BUSY_RETRIES,
        allow_network_filesystem: bool = False,
        actor: Optional[str] = None,
        history: Union[HistoryLimits, Mapping[str, int]] = DEFAULT_HISTORY_LIMITS,
        limits: Union[Limits, Mapping[str, int]] = DEFAULT_LIMITS,
        quota: Union[Quota, Mapping[str, Optional[int]], None] = None,
    ) -> None:
        """Open (making it if missing) the database at `path`. Raises StoreError, whose text names no host path,
        when it lies on a network filesystem, is not a database, or has an older (`refmem db migrate`) or newer
        schema than this refmem's. `actor`, `history`, `limits` and `quota`: `core.SqlStore`."""
        name = None if tenant is None else tenant_name(tenant)
        key = DEFAULT_TENANT if name is None else name
        engine = SqliteEngine(path, key, busy_seconds, busy_retries, allow_network_filesystem)
        super().__init__(engine, name, actor, history, limits, quota)

    @property
    def path(self) -> str:
        return self.engine.path

    @property
    def busy_seconds(self) -> float:
        return self.engine.busy_seconds

    @property
    def busy_retries(self) -> int:
        return self.engine.busy_retries

    @property
    def _db(self) -> sqlite3.Connection:
        """The engine's connection (tests read SQLite's own counters on it)."""
        return self.engine.db

    @_db.setter
    def _db(self, connection: sqlite3.Connection) -> None:
        """A wrapper of the engine's connection (bench/stores.py counts the statements through one)."""
        self.engine.db = connection

    @property
    def _gate(self) -> WriterGate:
        return self.engine.gate
