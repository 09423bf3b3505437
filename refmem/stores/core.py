"""The SQL stores' logic, the same for every engine: `SqlStore` implements `store_protocol.Store` over the queries
of `schema.Queries`, over an `Engine` (composed, never subclassed: D-STORE-ENGINES) that supplies only the
connection, the transactions and what the engine's errors mean.

Every command is one transaction: `locked()` is a writing transaction (SQLite's `BEGIN IMMEDIATE`), and
each mutation inside it is a savepoint of its own, so a mutation that fails changes nothing and leaves the
transaction usable. Reads outside `locked()` run in a read transaction of their own, so a listing sees one
state of the memories. The change journal and the access records are tables: a change and its journal
line commit together or not at all.

History (D-STORE-HISTORY, refmem/stores/history.py): an edit keeps the content it replaces and a delete the
content of every file it removes, as versions, in the same savepoint as the change; `history`, `restore` and the
conditional `write` are `store_protocol.VersionedStore`. A create never replaces anything and a rename never overwrites
(both refuse an existing destination), so neither keeps a version. `erase` (store_protocol.ErasableStore) removes a
tenant
whole, versions too: the deployer's offboarding (D-STORE-SQL-ERASE).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from typing import (
    Any,
    Callable,
    ContextManager,
    Iterator,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Set,
    Tuple,
    Union,
)

from .. import problems
from .._store_extras import Changes, ErasableStore, PrunableStore, Version, VersionedStore
from .._store_messages import RESTORE_NUMBER_TYPE, WRITE_DATA_TYPE, WRITE_EXPECTED_TYPE
from ..limits import DEFAULT_HISTORY_LIMITS, DEFAULT_LIMITS, HistoryLimits, Limits
from ..messages import TENANT_NESTED
from ..paths import RESERVED_PREFIX, VirtualPath
from ..problems import DIR, FILE, Conflict, Exists, Missing, NotRegular, NoVersion, OsFailure, ParentNotDir, TooBig
from ..store_protocol import Entry, ReadFile, Store, TenantError
from . import history
from .quota import Quota
from .schema import DEFAULT_TENANT, VERSION_ROW_BYTES, Queries, subtree

JOURNAL_KEPT = 4096
"""Generations of change journal kept per tenant; an older generation asked about means rescan."""
JOURNAL_TRIM_EVERY = 256
"""The journal is trimmed once every this many generations (one indexed delete)."""
CHANGES_MAX = 1024
"""More paths changed than this since a generation means rescan (D-STORE-CHANGES)."""
USE_GRANULARITY = 60.0
"""Seconds within which a view's use is not written again (D-STORE-SQL-USES): a view writes at most once a minute
per file, so reads do not queue behind writers."""
Params = Union[Sequence[Any], Mapping[str, Any]]
"""A statement's values: by position, or by name where a statement names a value more than once (each bound once:
`Queries.edit_in_one`)."""
READ_CHUNK = 1 << 20
VERSION_NUMBERS = (1, 2**63 - 1)
"""The version numbers there can be (a generation: a signed 64-bit integer from 1 on in every engine); any other
asked of `restore` is not kept, said before any statement (SQLite's driver cannot bind one past 64 bits)."""


class BlobFile:
    """A file read whole from its row (`store_protocol.ReadFile`): the bytes as they were when it was opened."""

    __slots__ = ("_data", "_at", "used")

    def __init__(self, data: bytes, used: Optional[float]) -> None:
        self._data = data
        self._at = 0
        self.used = used

    @property
    def size(self) -> int:
        return len(self._data)

    def read_all(self) -> bytes:
        rest = self._data[self._at :] if self._at else self._data
        self._at = len(self._data)
        return rest

    def chunks(self) -> Iterator[bytes]:
        while self._at < len(self._data):
            chunk = self._data[self._at : self._at + READ_CHUNK]
            self._at += len(chunk)
            yield chunk

    def close(self) -> None:
        self._data = b""
        self._at = 0

    def __enter__(self) -> BlobFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SqlEdit:
    """A file read for a read-modify-write; `replace` writes only if its row still holds the version read."""

    __slots__ = ("data", "_store", "_path", "_version")

    def __init__(self, store: SqlStore, path: VirtualPath, data: bytes, version: int) -> None:
        self.data = data
        self._store = store
        self._path = path
        self._version = version

    def replace(self, new_data: bytes) -> None:
        """The write is conditional on the version read (`rewrite_if`), not preceded by a read of it: a row changed
        or gone since the edit's read changes no row, and the mutation (its version kept, its generation) is undone
        with OsFailure("changed")."""
        store, key = self._store, _key(self._path)
        q, tenant = store.queries, store.tenant_key
        with store._mutation():
            if q.edit_in_one is not None:  # PostgreSQL: the whole write is one statement, retention's after it
                now = time.time()
                counted = len(self.data) + VERSION_ROW_BYTES  # what the version kept counts (D-STORE-HISTORY-RETENTION)
                grown = len(new_data) - len(self.data)  # the tenant's content bytes (D-STORE-QUOTA)
                values = {  # each bound once, however often the statement names it
                    "counted": counted, "grown": grown, "tenant": tenant, "canonical": self._path.canonical,
                    "now": now, "actor": store.actor, "command": store._command_or("edit"), "key": key,
                    "kind": FILE, "version": self._version, "data": new_data, "size": len(new_data),
                }
                row = store._one(q.edit_in_one, values)
                if row is None:
                    raise OsFailure("bookkeeping")
                generation, total, kept, before, written, files, size = (int(value) for value in row)
                if written != 1:
                    raise OsFailure("changed")
                store._grown, store._usage = (0, grown), (files, size)
                store._enforce()
                store._trim_journal(generation)
                history.retain(store, key, total, kept, before)
                return
            generation = store._note((self._path.canonical,), 0, len(new_data) - len(self.data))
            history.keep(store, generation, store._command_or("edit"), one=key)
            params = (new_data, len(new_data), generation, time.time(), store.tenant_key, key, self._version)
            if store._run(store.queries.rewrite_if, params).rowcount != 1:
                raise OsFailure("changed")
            store._enforce()


def _key(path: VirtualPath) -> str:
    return "/".join(path.parts)


class _DryRun(Exception):
    """Raised inside a dry run's transaction, to roll back what it did."""


class Engine(Protocol):
    """What one SQL engine supplies to `SqlStore` (D-STORE-ENGINES): one connection's (or one pool's) transactions
    and statements for one tenant, and what its errors mean. The rules (which statements, in which transaction,
    with which savepoints) are `SqlStore`'s alone; an engine never decides what a command does.

    `execute` runs one statement (returning a DB-API cursor, or anything with `fetchone`, `fetchall`, iteration,
    `rowcount`) and `finished` is told when its rows are read. `begin_write(command)` starts a writing transaction
    (`command`: the tool's command it is for, "" when none: an engine may begin an edit's lazily), `begin_read` a
    read transaction, `begin_single` makes ready for a read of one statement outside any (False: the engine wants
    `begin_read` for it), `commit` and `rollback` end one, `restart_write` rolls a writing transaction back and
    begins it again (its first mutation failed, and had no savepoint: `first_mutation_savepoint`). `failure` is the
    problem an exception of the engine stands for (None: not the engine's). `use_unwaiting(params)` writes
    `queries.use` only if no writer of the tenant holds its lock at that moment (D-STORE-SQL-USES). `reopen` is a
    store over the same database for another tenant, with `like`'s bounds; `close` ends it all."""

    queries: Queries
    first_mutation_savepoint: bool

    def execute(self, sql: str, params: Params) -> Any: ...

    def finished(self, cursor: Any) -> None: ...

    def begin_write(self, command: str) -> None: ...

    def begin_read(self) -> None: ...

    def begin_single(self) -> bool: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def restart_write(self, command: str) -> None: ...

    def failure(self, error: Exception) -> Optional[problems.FsProblem]: ...

    def use_unwaiting(self, params: Tuple[Any, ...]) -> None: ...

    def reopen(self, tenant: str, actor: Optional[str], like: SqlStore) -> SqlStore: ...

    def close(self) -> None: ...


class SqlStore:
    """`store_protocol.Store` over SQL (see the module docstring), over one `Engine`: every rule here, the
    connection, transactions and errors the engine's. `SqliteStore`, `PostgresStore` and `PooledStore` are this
    class with their engine made by their constructor; none overrides a rule."""

    queries: Queries

    def __init__(
        self,
        engine: Engine,
        tenant: Optional[str],
        actor: Optional[str] = None,
        history_limits: Union[HistoryLimits, Mapping[str, int]] = DEFAULT_HISTORY_LIMITS,
        limits: Union[Limits, Mapping[str, int]] = DEFAULT_LIMITS,
        quota: Union[Quota, Mapping[str, Optional[int]], None] = None,
    ) -> None:
        """`engine` serves `tenant` (its name, checked by the caller; None: the default tenant). `actor` names who
        makes this store's changes in their versions (the deployer's, e.g. a user or service name; None by
        default); `history_limits` bound what is kept (D-STORE-HISTORY-RETENTION); `limits` bound what `restore`
        and `write` may write (as the handler's bound the tool's commands); `quota` bounds what the tenant holds
        (`quota.Quota`, D-STORE-QUOTA; None: no bound)."""
        self.engine = engine
        self.queries = engine.queries
        self.tenant = tenant
        self.tenant_key = DEFAULT_TENANT if tenant is None else tenant
        self.history_limits = HistoryLimits.from_mapping(history_limits)
        self.limits = Limits.from_mapping(limits)
        self.actor = history.actor_name(actor, self.history_limits)
        self.quota = Quota.from_mapping(quota)
        self._grown = (0, 0)  # what the mutation under way added to the tenant's (files, bytes), and the usage after
        self._usage = (0, 0)
        self._acting = threading.local()  # the tool's command a thread's mutations belong to
        self._guard = threading.RLock()  # one connection: one thread at a time uses it
        self._depth = 0  # nesting of locked() on this store's transaction
        self._reading = False
        self._savepoints = 0
        self._mutations = 0  # mutations begun in this store's transaction
        self._release: Optional[str] = None  # the savepoint of a mutation that succeeded, released before the next
        # statement (with every savepoint after it) or by the COMMIT

    def _execute(self, sql: str, params: Params) -> Any:
        """Every statement of the rules goes through here to the engine (one place to count them)."""
        return self.engine.execute(sql, params)

    def _begin_write(self) -> None:
        self.engine.begin_write(self._command_or(""))

    def close(self) -> None:
        self.engine.close()

    # -- statements ----------------------------------------------------------------------------------

    def _run(self, sql: str, params: Params) -> Any:
        try:
            if self._release is not None:
                name, self._release = self._release, None
                self._execute(f"RELEASE SAVEPOINT {name}", ())
            return self._execute(sql, params)
        except problems.FsProblem:
            raise
        except Exception as error:
            problem = self.engine.failure(error)
            if problem is None:
                raise
            raise problem from None

    def _one(self, sql: str, params: Params) -> Optional[Tuple[Any, ...]]:
        cursor = self._run(sql, params)
        try:
            row = cursor.fetchone()
        finally:
            self._finished(cursor)
        return None if row is None else tuple(row)

    def _all(self, sql: str, params: Sequence[Any]) -> List[Tuple[Any, ...]]:
        cursor = self._run(sql, params)
        try:
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            self._finished(cursor)

    def _finished(self, cursor: Any) -> None:
        self.engine.finished(cursor)

    # -- transactions --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One writing transaction: committed when the block ends, rolled back when it raises."""
        with self._guard:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._begin_write()
            self._depth = 1
            self._mutations = 0
            try:
                yield
            except BaseException:
                self._depth = 0
                self._release = None
                with contextlib.suppress(Exception):
                    self.engine.rollback()
                raise
            self._depth = 0
            self._release = None  # COMMIT releases every savepoint still open
            try:
                self.engine.commit()
            except BaseException:
                with contextlib.suppress(Exception):
                    self.engine.rollback()
                raise

    @contextlib.contextmanager
    def _mutation(self) -> Iterator[None]:
        """A mutation: inside the writing transaction (taken here when the caller has not), as a savepoint,
        so that a failed one changes nothing whatever else the transaction holds. A mutation that is its
        transaction's whole needs none: its failure rolls the transaction back; nor does a transaction's first
        where the engine says so (`first_mutation_savepoint`). A savepoint that succeeded is released before the
        transaction's next statement, or by its COMMIT (one statement less)."""
        with self._guard:
            if not self._depth:
                with self.locked():
                    self._mutations += 1  # one inside this one is not the transaction's first
                    yield
                return
            with self.locked():
                self._mutations += 1
                if self._mutations == 1 and not self.engine.first_mutation_savepoint:
                    try:
                        yield
                    except BaseException:
                        self._release = None
                        self._mutations = 0
                        # nothing but this mutation was written: the transaction goes whole
                        self.engine.restart_write(self._command_or(""))
                        raise
                    return
                self._savepoints += 1
                name = f"refmem_{self._savepoints}"
                self._run(f"SAVEPOINT {name}", ())
                try:
                    yield
                except BaseException:
                    self._release = None  # one of a mutation inside this one: rolled back with it
                    with contextlib.suppress(Exception):
                        self._execute(f"ROLLBACK TO SAVEPOINT {name}", ())
                        self._execute(f"RELEASE SAVEPOINT {name}", ())
                    raise
                finally:
                    self._savepoints -= 1
                self._release = name  # releasing it releases any inside it still open

    @contextlib.contextmanager
    def _read(self, single: bool = False) -> Iterator[None]:
        """A consistent read: inside the caller's transaction, or a read transaction of its own; a `single`
        statement's read none where the engine allows (`Engine.begin_single`): one statement sees one state."""
        with self._guard:
            if self._depth or self._reading:
                yield
                return
            if single and self.engine.begin_single():
                self._reading = True
                try:
                    yield
                finally:
                    self._reading = False
                return
            self.engine.begin_read()
            self._reading = True
            try:
                yield
            finally:
                self._reading = False
                with contextlib.suppress(Exception):
                    self.engine.rollback()  # a read changes nothing: ending it without a commit costs nothing

    # -- queries -------------------------------------------------------------------------------------

    def entry(self, path: VirtualPath) -> Optional[Entry]:
        if path.is_root:
            return Entry(DIR, 0)
        with self._read(single=True):
            row = self._one(self.queries.kind, (self.tenant_key, _key(path)))
        if row is None or (path.trailing_slash and row[0] != DIR):
            return None
        return Entry(row[0], row[1] if row[0] == FILE else 0)

    def open_regular(self, path: VirtualPath, refuse_hard_links: bool = True) -> BlobFile:
        if not path.parts:
            raise NotRegular(DIR)
        with self._read(single=True):
            row = self._one(self.queries.read, (self.tenant_key, _key(path)))
        if row is None or (path.trailing_slash and row[0] != DIR):
            raise Missing()
        if row[0] != FILE:
            raise NotRegular(row[0])
        return BlobFile(bytes(row[1]), row[2])

    def children(
        self, path: VirtualPath, keep: Callable[[str], bool], limit: int
    ) -> Tuple[List[Tuple[str, str, int]], bool]:
        """The folder's entries by name, at most `limit` that `keep` accepts; the folder's own row is read only
        when it has none (an empty folder, or no folder: Missing)."""
        batch: List[Tuple[str, str, int]] = []
        more = False
        folder = _key(path)
        with self._read():
            cursor = self._run(self.queries.children, (self.tenant_key, folder))
            try:
                any_row = False
                for name, kind, size in cursor:
                    any_row = True
                    if not keep(name):
                        continue
                    if len(batch) == limit:
                        more = True
                        break
                    batch.append((name, kind, size if kind == FILE else 0))
            finally:
                self._finished(cursor)
            if path.parts and not any_row:
                row = self._one(self.queries.kind, (self.tenant_key, folder))
                if row is None or row[0] != DIR:
                    raise Missing()
        return batch, more

    def reading(self) -> ContextManager[None]:
        """One read transaction for several questions (`listing.list_tree` asks one per folder)."""
        return self._read()

    def extent(self, path: VirtualPath, max_depth: int) -> Tuple[int, int]:
        key = _key(path)
        low, high = subtree(key)
        base_depth = len(path.parts)
        with self._read(single=True):
            row = self._one(self.queries.extent, (self.tenant_key, low, high, base_depth + max_depth + 1))
        if row is None or row[0] is None:
            return 0, 0
        return int(row[0]) - base_depth, int(row[1]) - len(key.encode("utf-8"))

    # -- mutations -----------------------------------------------------------------------------------

    def _note(self, paths: Tuple[str, ...], files: int = 0, size: int = 0) -> int:
        """Start a new generation recording `paths` in the change journal, the tenant's usage moved by the `files`
        and `size` bytes the mutation adds (or frees: negative); the generation (the version of what the mutation
        writes). Every `JOURNAL_TRIM_EVERY` generations, lines older than `JOURNAL_KEPT` go. The mutation calls
        `_enforce` once it knows it will be written (D-STORE-QUOTA)."""
        q, tenant = self.queries, self.tenant_key
        if q.note_returning is not None:  # the generation and its journal lines: one statement
            row = self._one(q.note_returning, (files, size, tenant, tenant, list(dict.fromkeys(paths))))
            if row is None:
                raise OsFailure("bookkeeping")
        else:
            self._run(q.next_generation, (files, size, tenant))
            row = self._one(q.generation_usage, (tenant,))
            if row is None:
                raise OsFailure("bookkeeping")
        generation = int(row[0])
        self._grown, self._usage = (files, size), (int(row[1]), int(row[2]))
        if q.note_returning is None:
            for path in dict.fromkeys(paths):
                self._run(q.journal, (tenant, generation, path))
        self._trim_journal(generation)
        return generation

    def _enforce(self) -> None:
        """The tenant's quota (D-STORE-QUOTA) against the usage the mutation's `_note` returned: OsFailure with the
        quota's reason when the mutation grew a count past its bound (its savepoint or transaction then undoes it
        whole). Inside the tenant's write lock, so no other writer of the tenant moved the count meanwhile."""
        refusal = self.quota.refusal(self._grown, self._usage)
        if refusal is not None:
            raise OsFailure(refusal)

    def _trim_journal(self, generation: int) -> None:
        """Every `JOURNAL_TRIM_EVERY` generations, the journal's lines older than `JOURNAL_KEPT` go."""
        if generation % JOURNAL_TRIM_EVERY == 0 and generation > JOURNAL_KEPT:
            q, tenant, oldest = self.queries, self.tenant_key, generation - JOURNAL_KEPT
            self._run(q.trim_journal, (tenant, oldest))
            self._run(q.trim_floor, (oldest, tenant, oldest))

    def _make_parents(self, parts: Tuple[str, ...], generation: int, now: float) -> None:
        """The folders holding `parts`, made where missing; ParentNotDir(depth) at the first file on the way."""
        q, tenant = self.queries, self.tenant_key
        missing_from = None
        for depth in range(1, len(parts)):
            key = "/".join(parts[:depth])
            row = self._one(q.kind, (tenant, key))
            if row is None:
                missing_from = depth
                break
            if row[0] != DIR:
                raise ParentNotDir(depth)
        if missing_from is None:
            return
        for depth in range(missing_from, len(parts)):
            key = "/".join(parts[:depth])
            parent = "/".join(parts[: depth - 1])
            self._run(q.insert, (tenant, key, parent, parts[depth - 1], depth, DIR, 0, None, generation, now))

    def write_new(self, path: VirtualPath, data: bytes) -> None:
        if path.is_root:
            raise Exists()
        q, tenant, key = self.queries, self.tenant_key, _key(path)
        with self._mutation():
            now = time.time()
            generation = self._note((path.canonical,), 1, len(data))
            self._make_parents(path.parts, generation, now)
            if self._one(q.kind, (tenant, key)) is not None:
                raise Exists()
            parent = _key(path.parent)
            row = (tenant, key, parent, path.name, len(path.parts), FILE, len(data), data, generation, now)
            self._run(q.insert, row)
            self._enforce()

    @contextlib.contextmanager
    def open_edit(self, path: VirtualPath, limit: int) -> Iterator[SqlEdit]:
        if not path.parts:
            raise NotRegular(DIR)
        with self._read(single=True):
            row = self._one(self.queries.read_for_edit, (self.tenant_key, _key(path)))
        if row is None or (path.trailing_slash and row[0] != DIR):
            raise Missing()
        kind, size, data, version = row
        if kind != FILE:
            raise NotRegular(kind)
        if size > limit:
            raise TooBig(size)
        yield SqlEdit(self, path, bytes(data), version)

    def delete(self, path: VirtualPath) -> None:
        if path.is_root:
            raise OsFailure("denied")
        q, tenant, key = self.queries, self.tenant_key, _key(path)
        with self._mutation():
            row = self._one(q.kind, (tenant, key))
            if row is None or (path.trailing_slash and row[0] != DIR):
                raise Missing()
            below = subtree(key) if row[0] == DIR else None
            freed = (1, int(row[1])) if below is None else self._one(q.subtree_files, (tenant, FILE) + below)
            files, size = (0, 0) if freed is None else (int(freed[0]), int(freed[1]))
            generation = self._note((path.canonical,), -files, -size)
            history.keep(self, generation, self._command_or("delete"), one=key, below=below)
            self._run(q.delete_one, (tenant, key))
            if below is not None:
                self._run(q.delete_below, (tenant,) + below)

    def rename(self, old: VirtualPath, new: VirtualPath) -> None:
        if old.is_root or new.is_root:
            raise OsFailure("denied")
        q, tenant = self.queries, self.tenant_key
        old_key, new_key = _key(old), _key(new)
        with self._mutation():
            row = self._one(q.kind, (tenant, old_key))
            if row is None:
                raise Missing()
            now = time.time()
            generation = self._note((old.canonical, new.canonical))
            self._make_parents(new.parts, generation, now)  # below a file (itself, for one): ParentNotDir
            if new.is_within(old):
                raise OsFailure("os")  # a folder into itself: the handler refuses it before (D-RENAME-INTO-SELF)
            if self._one(q.kind, (tenant, new_key)) is not None:
                raise Exists()
            self._run(q.move_one, (new_key, _key(new.parent), new.name, len(new.parts), now, tenant, old_key))
            if row[0] == DIR:
                cut = len(old_key) + 1  # substr from the "/" after the old prefix
                shift = len(new.parts) - len(old.parts)
                self._run(q.move_below, (new_key, cut, new_key, cut, shift, tenant) + subtree(old_key))

    # -- history (store_protocol.VersionedStore, D-STORE-HISTORY) -----------------------------------------

    @contextlib.contextmanager
    def acting(self, command: str) -> Iterator[None]:
        """The mutations inside the block are the tool's `command` (their versions say so)."""
        before = getattr(self._acting, "command", None)
        self._acting.command = command
        try:
            yield
        finally:
            self._acting.command = before

    def _command_or(self, operation: str) -> str:
        command = getattr(self._acting, "command", None)
        return operation if command is None else str(command)

    def history(self, path: VirtualPath) -> List[Version]:
        with self._read(single=True):
            rows = self._all(self.queries.history, (self.tenant_key, _key(path)))
        return [history.version_of(row) for row in rows]

    def restore(self, path: VirtualPath, number: int) -> str:
        """D-STORE-HISTORY-RESTORE: version `number`'s bytes become the file's content (the file made, with its
        missing parents, when it is gone; the content it replaces kept as a version). NoVersion when that version
        is not kept, NotRegular(DIR) when a folder is at the path, ParentNotDir(depth) when a file is on the way,
        TooBig(size) past `limits.max_file_bytes`. Restoring the content already there changes nothing."""
        if not isinstance(number, int) or isinstance(number, bool):
            raise TypeError(RESTORE_NUMBER_TYPE)
        if not path.parts:
            raise NotRegular(DIR)
        if not VERSION_NUMBERS[0] <= number <= VERSION_NUMBERS[1]:
            raise NoVersion()  # no engine can hold it, so none is kept (D-STORE-HISTORY-RESTORE)
        q, tenant, key = self.queries, self.tenant_key, _key(path)
        with self._mutation():
            row = self._one(q.version_data, (tenant, key, number))
            if row is None:
                raise NoVersion()
            data = bytes(row[0])
            if len(data) > self.limits.max_file_bytes:
                raise TooBig(len(data))
            current = self._one(q.read_for_edit, (tenant, key))
            if current is not None and current[0] != FILE:
                raise NotRegular(current[0])
            if current is None or bytes(current[2]) != data:
                self._put(path, data, None if current is None else int(current[1]), "restore")
        return hashlib.sha256(data).hexdigest()

    def write(self, path: VirtualPath, data: bytes, expected_sha256: Optional[str]) -> str:
        """D-STORE-HISTORY-WRITE: a conditional write for programmatic callers. With `expected_sha256`, the file
        must be there with content of that SHA-256 (hex, either case); with None, nothing may be at the path.
        Otherwise Conflict(found), changing nothing; NotRegular(DIR) for a folder, TooBig past
        `limits.max_file_bytes`, ParentNotDir when a file is on the way. The content replaced is kept as a version.
        No content policy applies: the caller is the application, not the model."""
        if not isinstance(data, bytes):
            raise TypeError(WRITE_DATA_TYPE)
        if expected_sha256 is not None and not isinstance(expected_sha256, str):
            raise TypeError(WRITE_EXPECTED_TYPE)
        if not path.parts:
            raise NotRegular(DIR)
        if len(data) > self.limits.max_file_bytes:
            raise TooBig(len(data))
        expected = None if expected_sha256 is None else expected_sha256.lower()
        with self._mutation():
            current = self._one(self.queries.read_for_edit, (self.tenant_key, _key(path)))
            if current is not None and current[0] != FILE:
                raise NotRegular(current[0])
            found = None if current is None else hashlib.sha256(bytes(current[2])).hexdigest()
            if found != expected:
                raise Conflict(found)
            self._put(path, data, None if current is None else int(current[1]), "write")
        return hashlib.sha256(data).hexdigest()

    def _put(self, path: VirtualPath, data: bytes, replacing: Optional[int], command: str) -> None:
        """`data` as the file's content, inside a mutation: the content replaced (`replacing`: its size) kept as a
        version, or (None) the file made with its missing parents; the tenant's quota enforced."""
        q, tenant, key = self.queries, self.tenant_key, _key(path)
        now = time.time()
        if replacing is not None:
            generation = self._note((path.canonical,), 0, len(data) - replacing)
            history.keep(self, generation, command, one=key)
            self._run(q.rewrite, (data, len(data), generation, now, tenant, key))
            self._enforce()
            return
        generation = self._note((path.canonical,), 1, len(data))
        self._make_parents(path.parts, generation, now)
        row = (tenant, key, _key(path.parent), path.name, len(path.parts), FILE, len(data), data, generation, now)
        self._run(q.insert, row)
        self._enforce()

    # -- expiry (D-STORE-SQL-PRUNE) -------------------------------------------------------------------

    def prune(self, cutoff: float, dry_run: bool = False) -> Tuple[List[str], int]:
        """The files whose last use (D-STORE-SQL-USES: made, changed, renamed into place or viewed) is before
        `cutoff` removed, each as `delete` removes a file (its content kept as a version, of the command `prune`),
        then the folders that left empty, deepest first (never /memories; a folder empty before stays): (the virtual
        paths removed, files then folders, each sorted; the files kept). One writing transaction, so writers wait
        and nothing is half pruned; a dry run does all of it and rolls it back. Paths through the store's own names
        (`.refmem`) are never touched."""
        q, tenant = self.queries, self.tenant_key
        files: List[str] = []
        folders: List[str] = []
        total = 0
        try:
            with self.locked(), self.acting("prune"):
                row = self._one(q.file_count, (tenant, FILE))
                total = 0 if row is None else int(row[0])
                emptied: Set[Tuple[str, ...]] = set()
                for (key,) in self._all(q.unused_files, (tenant, FILE, cutoff)):
                    parts = tuple(key.split("/"))
                    if any(part.startswith(RESERVED_PREFIX) for part in parts):
                        continue
                    path = VirtualPath(parts)
                    self.delete(path)
                    files.append(path.canonical)
                    emptied.update(parts[:depth] for depth in range(1, len(parts)))
                for parts in sorted(emptied, key=len, reverse=True):
                    if self._one(q.has_child, (tenant, "/".join(parts))) is None:
                        folder = VirtualPath(parts)
                        self.delete(folder)
                        folders.append(folder.canonical)
                if dry_run:
                    raise _DryRun()
        except _DryRun:
            pass
        return sorted(files) + sorted(folders), total - len(files)

    # -- a tenant's offboarding (D-STORE-SQL-ERASE) ----------------------------------------------------

    def erase(self) -> Tuple[int, int]:
        """Every memory (files and folders), kept version and journal line of this store's tenant deleted, in one
        writing transaction of the tenant (its writers wait; nothing is half erased): (paths deleted, versions
        deleted). The tenant stays usable, empty, and every generation before the erase answers "rescan", so no
        cache keeps what was erased. Unlike a delete, nothing is kept to restore: this is the deployer's way to
        remove a tenant, never a command of the model's."""
        q, tenant = self.queries, self.tenant_key
        with self.locked():
            counts = [int(self._run(statement, (tenant,)).rowcount) for statement in q.erase_rows]
            self._run(q.erase_mark, (tenant,))
        return counts[0], counts[1]

    # -- the journal and the access records ----------------------------------------------------------

    def changes_since(self, generation: int) -> Changes:
        q, tenant = self.queries, self.tenant_key
        with self._read():
            row = self._one(q.generation, (tenant,))
            if row is None:
                return Changes(generation, None)
            now, floor = int(row[0]), int(row[1])
            if generation == now:
                return Changes(now, ())
            if generation < floor or generation > now:
                return Changes(now, None)
            paths = [found[0] for found in self._all(q.changed, (tenant, generation, CHANGES_MAX + 1))]
        if len(paths) > CHANGES_MAX:
            return Changes(now, None)
        return Changes(now, tuple(sorted(paths)))

    def record_use(self, path: VirtualPath, opened: ReadFile) -> None:
        """A view's use, unless one was recorded (or the file written) within `USE_GRANULARITY` seconds; best effort
        and never waiting (D-STORE-SQL-USES): written only when no writer of the tenant holds its lock at that moment
        (`Engine.use_unwaiting`), else left to the next view, so a view never queues behind a write."""
        now = time.time()
        used = getattr(opened, "used", None)
        if isinstance(used, (int, float)) and 0 <= now - used < USE_GRANULARITY:
            return
        with contextlib.suppress(Exception):  # bookkeeping never fails a command
            with self._guard:
                params = (now, self.tenant_key, _key(path), FILE)
                if self._depth:  # inside this store's own writing transaction: written with it
                    self._run(self.queries.use, params)
                elif not self._reading:
                    self.engine.use_unwaiting(params)

    def last_access(self, path: VirtualPath) -> Optional[float]:
        with self._read(single=True):
            row = self._one(self.queries.used, (self.tenant_key, _key(path)))
        return None if row is None or row[0] is None else float(row[0])

    def for_tenant(self, tenant: str, actor: Optional[str] = None) -> SqlStore:
        """`tenant`'s store over the same database; its changes' versions name `actor` (else this store's)."""
        if self.tenant is not None:
            raise TenantError(TENANT_NESTED)
        from ..store_protocol import tenant_name

        name = tenant_name(tenant)
        named = self.actor if actor is None else history.actor_name(actor, self.history_limits)
        return self.engine.reopen(name, named, self)


def _as_store(store: SqlStore) -> Store:
    """Nothing at run time: mypy checks here that `SqlStore` implements `store_protocol.Store`."""
    return store


def _as_prunable(store: SqlStore) -> PrunableStore:
    """Nothing at run time: mypy checks here that `SqlStore` implements `store_protocol.PrunableStore`."""
    return store


def _as_erasable(store: SqlStore) -> ErasableStore:
    """Nothing at run time: mypy checks here that `SqlStore` implements `store_protocol.ErasableStore`."""
    return store


def _as_versioned(store: SqlStore) -> VersionedStore:
    """Nothing at run time: mypy checks here that `SqlStore` implements `store_protocol.VersionedStore`."""
    return store
