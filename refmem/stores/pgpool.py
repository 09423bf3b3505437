"""PostgreSQL stores of many tenants served by one pool of connections (extra `refmem[postgres]`: psycopg 3 and
psycopg-pool): what a process serving many users wants, where a store is made per request and a connection per
store would be too slow to open and too many to keep.

    pool = PostgresPool(os.environ["REFMEM_STORE"], max_size=10)        # once per process
    handler = MemoryHandler(pool.store(tenant=user))                    # per request: no connection opened

What it promises beyond the single-connection store's (`postgres.PostgresStore`; D-STORE-PG-POOL):
* A pooled store holds no connection between commands: it borrows one when a transaction begins and gives it back
  when it ends (commit or rollback), so any number of stores, of any tenants, share `max_size` connections.
* Row-level security's setting is transaction-local on a pooled connection: the first message of every
  transaction is its `BEGIN`, `set_config('refmem.tenant', 'tenant:NAME', true)` (and, for a writer, its tenant's
  lock), one round trip; the setting ends with the transaction, so a connection back in the pool carries no tenant
  and a statement run on it without a tenant filter sees no row. A read of one statement is a transaction too: its
  `BEGIN`, the setting, the `SELECT` and the `COMMIT` are one message (bound on the client by psycopg, which quotes
  every value: no name is ever formatted into SQL by refmem).
* A connection found broken by a command's first message (nothing of the command has run) is given back, the pool
  checks the connections it holds, and the command runs on another: at most `RECONNECTS` times (D-STORE-PG-RETRY);
  lost later, the command is answered `disconnected` or `commit_unknown` as on a single connection. No result
  names a host, DSN or password.
* A store is used by one thread at a time; many stores of one pool on many threads at once is the point.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
import weakref
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

from .._store_messages import STORE_PG_CANNOT_CONNECT, STORE_PG_NO_DRIVER
from ..limits import DEFAULT_HISTORY_LIMITS, DEFAULT_LIMITS, HistoryLimits, Limits
from ..messages import IO_REASONS, io_reason
from ..problems import FsProblem, OsFailure
from ..store_protocol import tenant_name
from . import StoreError
from .core import Params, SqlStore
from .postgres import (
    _LOCKING,
    CONNECT_SECONDS,
    EDITS,
    QUERIES,
    RECONNECTS,
    TENANT_PREFIX,
    TENANT_SETTING,
    _connect_reason,
    _driver,
    bound,
    check_schema,
    connect,
    failure_of,
    migrate,
    reason_of,
    require_utf8,
    session_settings,
    tenant_lock_key,
    use_if_free,
)
from .quota import Quota
from .schema import DEFAULT_TENANT, POSTGRES

KNOWN_TENANTS = 65536
"""Tenants whose row the pool remembers having made (then forgets them all and makes each again, once)."""
_SET_TENANT = f"SELECT set_config('{TENANT_SETTING}', %s, true)"
_BEGIN_WRITE = f"{POSTGRES.begin_write}; {_SET_TENANT}, pg_advisory_xact_lock(%s)"
_BEGIN_READ = f"BEGIN ISOLATION LEVEL REPEATABLE READ; {_SET_TENANT}"
_BEGIN_SINGLE = f"BEGIN; {_SET_TENANT}; "  # then the statement, then "; COMMIT"
_BEGIN_LOCKING = f"{POSTGRES.begin_write}; {_SET_TENANT}; "
"""An edit's first message: then its read, which takes the tenant's lock itself (`postgres._LOCKING`), executed
prepared (`prepared`) as a view's read is, so an edit is BEGIN with the read, the write, COMMIT: three messages, where
BEGIN with the lock and then the read were four (D-STORE-PG-POOL-EDIT)."""
_PREPARED_KEPT = 256
_NO_SUCH_STATEMENT = "26000"  # invalid_sql_statement_name: a prepared statement the connection no longer has
_ALREADY_PREPARED = "42P05"  # duplicate_prepared_statement: one the connection has, though not counted as there
_RECOUNTS = 8
"""Times a command's first message may find a connection's count of its prepared statements wrong before the
command fails: each wrong count is put right, and the message sent again, on whichever connection comes next."""
_PREPARED: Dict[str, Tuple[str, str, int]] = {}


def prepared(sql: str) -> Tuple[str, str, int]:
    """A read's statement as a server-side prepared statement: its name (from its text's SHA-256, so every
    connection and process names it alike), the `PREPARE` that makes it, and its number of parameters. A read of
    one statement sends `EXECUTE name(...)`, planned once per connection, not its text planned every time."""
    found = _PREPARED.get(sql)
    if found is None:
        pieces = sql.split("%s")
        body = pieces[0] + "".join(f"${number}{piece}" for number, piece in enumerate(pieces[1:], 1))
        name = "refmem_read_" + hashlib.sha256(sql.encode()).hexdigest()[:16]
        found = (name, f"PREPARE {name} AS {body}", len(pieces) - 1)
        if len(_PREPARED) < _PREPARED_KEPT:
            _PREPARED[sql] = found
    return found


def _pool_driver() -> Any:
    try:
        import psycopg_pool
    except ImportError:
        raise StoreError(STORE_PG_NO_DRIVER) from None
    return psycopg_pool


def _configure(connection: Any) -> None:
    """Every pooled connection's session, once: the timeouts `connect` sets (D-STORE-PG-TIMEOUTS), and its encoding
    checked (D-STORE-PG-UTF8). Never the tenant."""
    statement, params = session_settings(None, local=False)
    row = connection.execute(statement, params).fetchone()
    require_utf8(None if row is None else row[0])


class Rows:
    """A read's rows, fetched whole before its connection went back to the pool: the part of a cursor `SqlStore`
    uses."""

    __slots__ = ("_rows", "_at", "rowcount")

    def __init__(self, rows: List[Tuple[Any, ...]]) -> None:
        self._rows = rows
        self._at = 0
        self.rowcount = len(rows)

    def fetchone(self) -> Optional[Tuple[Any, ...]]:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self) -> List[Tuple[Any, ...]]:
        rest = self._rows[self._at :]
        self._at = len(self._rows)
        return rest

    def __iter__(self) -> Any:
        return iter(self.fetchall())

    def close(self) -> None:
        self._rows = []
        self._at = 0


class PostgresPool:
    """A pool of connections to one PostgreSQL database and the stores that share it (see the module docstring).

    `min_size` connections are kept open, at most `max_size` are ever open; a command that finds every connection
    in use waits up to `CONNECT_SECONDS` for one, then is answered `busy`. With `create`, a database without the
    schema gets it (as `refmem db init`); StoreError when it cannot be used, as `PostgresStore` says. `history`,
    `limits` and `quota` (each tenant's own bound) are every store's of this pool."""

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        create: bool = True,
        history: Union[HistoryLimits, Mapping[str, int]] = DEFAULT_HISTORY_LIMITS,
        limits: Union[Limits, Mapping[str, int]] = DEFAULT_LIMITS,
        quota: Union[Quota, Mapping[str, Optional[int]], None] = None,
    ) -> None:
        psycopg = _driver()
        pool_module = _pool_driver()
        self.history_limits = HistoryLimits.from_mapping(history)
        self.limits = Limits.from_mapping(limits)
        self.quota = Quota.from_mapping(quota)  # every tenant's own bound (D-STORE-QUOTA)
        self._psycopg = psycopg
        self._errors = pool_module
        self._known: Set[str] = set()
        self._known_lock = threading.Lock()
        self._prepared: weakref.WeakKeyDictionary[Any, Set[str]] = weakref.WeakKeyDictionary()
        first = connect(dsn)  # its reasons, naming no host, for a server that cannot be reached
        try:
            missing = check_schema(dsn, create, first)
            row = first.execute("SELECT current_schema()").fetchone()
        except psycopg.Error as error:
            raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason=IO_REASONS[reason_of(error, first)])) from None
        finally:
            first.close()
        if missing:
            migrate(dsn)
        self.schema = str(row[0]) if row and row[0] is not None else ""
        self._pool = pool_module.ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_SECONDS},
            configure=_configure,
            timeout=CONNECT_SECONDS,
            name="refmem",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=CONNECT_SECONDS)
        except psycopg.Error as error:
            self._pool.close()
            raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason=_connect_reason(error))) from None

    def store(self, tenant: Optional[str] = None, actor: Optional[str] = None) -> PooledStore:
        """`tenant`'s store (the default tenant's for None) over this pool; its changes' versions name `actor`.
        No connection is opened for it; the tenant's row is made on its first store in this pool. StoreError when
        that fails (the reason names no host)."""
        made = PooledStore(self, None if tenant is None else tenant_name(tenant), actor)
        with self._known_lock:
            if made.tenant_key in self._known:
                return made
        try:
            with made.locked():
                made._run(QUERIES.add_tenant, (made.tenant_key,))
        except FsProblem as failure:
            raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason=io_reason(failure.code))) from None
        with self._known_lock:
            if len(self._known) >= KNOWN_TENANTS:
                self._known.clear()
            self._known.add(made.tenant_key)
        return made

    # -- the stores' part ----------------------------------------------------------------------------

    def borrow(self) -> Any:
        """A connection of the pool, for one transaction; OsFailure `busy` when none comes free in time (or
        `disconnected` when the pool could not open one), `os` when the pool is closed."""
        try:
            return self._pool.getconn()
        except self._errors.PoolTimeout:
            opened = self._pool.get_stats().get("pool_size", 0)
            raise OsFailure("busy" if opened >= self._pool.max_size else "disconnected") from None
        except self._errors.TooManyRequests:
            raise OsFailure("busy") from None
        except self._psycopg.Error:
            raise OsFailure("os") from None

    def give_back(self, connection: Any) -> None:
        """The connection back to the pool (a broken or closed one is discarded there and replaced)."""
        try:
            self._pool.putconn(connection)
        except Exception:  # noqa: BLE001  # a pool closed meanwhile: the connection is only closed
            with contextlib.suppress(Exception):
                connection.close()

    def prepared_on(self, connection: Any) -> Set[str]:
        """The names of the statements prepared on `connection` (`prepared`); the borrower's to add to."""
        with self._known_lock:
            return self._prepared.setdefault(connection, set())

    def check(self) -> None:
        """Every idle connection tried; the broken ones discarded and replaced (after a command found one)."""
        with contextlib.suppress(Exception):
            self._pool.check()

    # -- life ----------------------------------------------------------------------------------------

    @property
    def max_size(self) -> int:
        return int(self._pool.max_size)

    def close(self) -> None:
        """Close every connection; the pool's stores then answer every command with an error."""
        self._pool.close()

    def __enter__(self) -> PostgresPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PooledEngine:
    """The pooled PostgreSQL engine of `SqlStore` (`core.Engine`): no connection of its own; one borrowed from `pool`
    for each transaction (see the module docstring), for the tenant `tenant_key`."""

    queries = QUERIES
    first_mutation_savepoint = False  # a SAVEPOINT is a round trip (D-STORE-PG-WRITERS)

    def __init__(
        self,
        pool: PostgresPool,
        tenant_key: str,
        prepare_reads: bool = True,
        one_message: bool = True,
        edit_locks_in_read: bool = True,
    ) -> None:
        """`prepare_reads`: a read of one statement executes it prepared (`prepared`) rather than sends its text;
        `one_message`: such a read is one message (else a read transaction of its own); `edit_locks_in_read`: an
        edit's first message is BEGIN with its read, which takes the tenant's lock (else BEGIN with the lock, then
        the read: a message more). bench/pool.py measures each."""
        self.pool = pool
        self.tenant_key = tenant_key
        self.prepare_reads = prepare_reads
        self.one_message = one_message
        self.edit_locks_in_read = edit_locks_in_read
        self._psycopg = pool._psycopg
        self.conn: Any = None  # the connection borrowed for the transaction under way, if any
        self._closed = False
        self._unbegun = False  # a writing transaction to begin at its next statement (`begin_write`)
        self._single = False  # the next statement is a read of one statement: sent in one message
        self._reading_only = False  # the transaction under way is a read's
        self._setting = TENANT_PREFIX + tenant_key
        self.lock_key = tenant_lock_key(pool.schema, tenant_key)

    def send_first_retrying(
        self, message: str, params: Sequence[Any], prepare: Optional[Tuple[str, str, int]] = None
    ) -> Any:
        """Send a command's first message on a borrowed connection (bound on the client, so several statements
        are one message); its cursor, at the message's first result. With `prepare` (`prepared`), the message
        begins by preparing that statement where the connection has not yet (its result skipped). The count of
        what a connection has can be wrong: psycopg deallocates all of a connection's statements after a ROLLBACK
        when it has prepared some of its own, and only then. So a statement the server no longer has is prepared
        again, and one it has though not counted is counted, and the message sent again (up to _RECOUNTS times,
        while other threads' rollbacks may change what the next connection holds); a connection on which the
        message failed otherwise is closed, so that no connection is left unsure of what it holds.
        A connection found broken here ran nothing of the command: it is given back (the pool discards it), the
        pool checks the others, and the command starts on another."""
        if self._closed:
            raise OsFailure("os")
        self.rollback()  # never run a command inside what an earlier one left open
        attempt, recounts = 0, 0
        while True:
            self.conn = self.pool.borrow()
            known = None if prepare is None else self.pool.prepared_on(self.conn)
            try:
                cursor = self._psycopg.ClientCursor(self.conn)
                if prepare is None or known is None or prepare[0] in known:
                    cursor.execute(message, params)
                    return cursor
                cursor.execute(f"{prepare[1]}; {message}", params)
                known.add(prepare[0])
                cursor.nextset()
                return cursor
            except self._psycopg.Error as error:
                reason = reason_of(error, self.conn)
                state = getattr(error, "sqlstate", None)
                recount = state in (_NO_SUCH_STATEMENT, _ALREADY_PREPARED) and recounts < _RECOUNTS
                if prepare is not None and known is not None and recount:
                    if state == _NO_SUCH_STATEMENT:
                        known.clear()  # all of them deallocated on the server since (`rollback`)
                    else:
                        known.add(prepare[0])
                    recounts += 1
                    self.rollback()
                    continue
                if prepare is not None:
                    with contextlib.suppress(Exception):
                        self.conn.close()
                self.rollback()
                if reason != "disconnected" or attempt == RECONNECTS:
                    raise OsFailure(reason) from None
                self.pool.check()
                if attempt:
                    time.sleep(0.05 * 2**attempt)
                attempt += 1

    def begin_write(self, command: str) -> None:
        """BEGIN, the tenant's setting and its lock, one message; for the tool's edits (`EDITS`), nothing yet, as on
        one connection (`PostgresEngine.begin_write`): their transaction begins with its first statement, the
        file's read taking the lock itself, sent in the same message as the BEGIN and the setting (`execute`)."""
        if command in EDITS and self.edit_locks_in_read:
            if self._closed:
                raise OsFailure("os")
            self.rollback()
            self._unbegun = True
            return
        self.send_first_retrying(_BEGIN_WRITE, (self._setting, self.lock_key))

    def restart_write(self, command: str) -> None:
        """The transaction rolled back (its connection given back) and begun again only at its next statement."""
        self.rollback()
        self._unbegun = True

    def begin_read(self) -> None:
        self.send_first_retrying(_BEGIN_READ, (self._setting,))
        self._reading_only = True

    def begin_single(self) -> bool:
        if not self.one_message:
            return False
        if self._closed:
            raise OsFailure("os")
        self._single = True
        return True

    def execute(self, sql: str, params: Params) -> Any:
        if self._unbegun:
            self._unbegun = False
            locking = _LOCKING.get(sql)
            if locking is not None:  # BEGIN, the tenant, and the read that takes the tenant's lock: one message
                prepare = prepared(locking) if self.prepare_reads else None
                if prepare is not None:
                    read = f"EXECUTE {prepare[0]}({', '.join(['%s'] * prepare[2])})"
                else:
                    read = locking
                cursor = self.send_first_retrying(
                    _BEGIN_LOCKING + read, (self._setting, *params, self.lock_key), prepare
                )
                cursor.nextset()
                cursor.nextset()
                return cursor
            self.send_first_retrying(_BEGIN_WRITE, (self._setting, self.lock_key))
        if self._single:  # BEGIN, the tenant, the statement and COMMIT: one message, the connection back at once
            self._single = False
            prepare = prepared(sql) if self.prepare_reads else None
            if prepare is not None:
                arguments = ", ".join(["%s"] * prepare[2])
                message = f"{_BEGIN_SINGLE}EXECUTE {prepare[0]}({arguments}); COMMIT"
            else:
                message = f"{_BEGIN_SINGLE}{sql}; COMMIT"
            cursor = self.send_first_retrying(message, (self._setting, *params), prepare)
            try:
                cursor.nextset()
                cursor.nextset()
                return Rows(cursor.fetchall())
            finally:
                self.rollback()
        if self.conn is None:  # a statement outside any transaction: never sent without its tenant
            raise OsFailure("os")
        return self.conn.execute(sql, bound(params))

    def finished(self, cursor: Any) -> None:
        """Nothing to close: a borrowed connection's cursors go with its transaction."""

    def commit(self) -> None:
        if self._unbegun:  # rolled back, and nothing sent since: nothing to commit, no connection held
            self._unbegun = False
            return
        if self.conn is None:
            raise OsFailure("os")
        try:
            self.conn.execute("COMMIT")
        except self._psycopg.Error as error:
            reason = reason_of(error, self.conn)
            raise OsFailure("commit_unknown" if reason == "disconnected" else reason) from None
        finally:
            self.rollback()  # the connection back to the pool, idle

    def rollback(self) -> None:
        """The transaction ended (rolled back if still open) and its connection given back; never raises."""
        self._unbegun = False
        self._single = False
        reading_only, self._reading_only = self._reading_only, False
        connection, self.conn = self.conn, None
        if connection is None:
            return
        try:
            status = connection.info.transaction_status
            if not (connection.broken or connection.closed) and status != self._psycopg.pq.TransactionStatus.IDLE:
                # A read that went well ends with COMMIT: the same for the server, and psycopg deallocates every
                # prepared statement of the connection after a ROLLBACK (a read of one statement then prepares
                # its own again: `send_first_retrying`).
                ended = reading_only and status == self._psycopg.pq.TransactionStatus.INTRANS
                connection.execute("COMMIT" if ended else "ROLLBACK")
        except Exception:  # noqa: BLE001  # one that cannot be rolled back is closed: the pool discards it
            with contextlib.suppress(Exception):
                connection.close()
        self.pool.give_back(connection)

    def use_unwaiting(self, params: Tuple[Any, ...]) -> None:
        use_if_free(self, params)

    def failure(self, error: Exception) -> Optional[FsProblem]:
        return failure_of(self._psycopg, error, self.conn)

    def reopen(self, tenant: str, actor: Optional[str], like: SqlStore) -> PooledStore:
        return self.pool.store(tenant, actor)

    def close(self) -> None:
        """Give back a connection still held; later commands are answered with an error. The pool stays open."""
        self._closed = True
        self.rollback()


class PooledStore(SqlStore):
    """`SqlStore` over a `PooledEngine`: each transaction runs on a connection borrowed from its `PostgresPool` (see
    the module docstring); made by `PostgresPool.store`."""

    engine: PooledEngine

    def __init__(self, pool: PostgresPool, tenant: Optional[str], actor: Optional[str]) -> None:
        """`tenant`: a name `store_protocol.tenant_name` accepted (None: the default tenant)."""
        engine = PooledEngine(pool, DEFAULT_TENANT if tenant is None else tenant)
        super().__init__(engine, tenant, actor, pool.history_limits, pool.limits, pool.quota)

    @property
    def _conn(self) -> Any:
        """The connection borrowed for the transaction under way, if any."""
        return self.engine.conn
