"""The PostgreSQL store: memories of many tenants and many hosts in one PostgreSQL database (extra
`refmem[postgres]`: psycopg 3). The same SQL core (`core.SqlStore`) and queries (`schema.Queries`) as the SQLite
store, in PostgreSQL's dialect.

    store = PostgresStore(os.environ["REFMEM_STORE"], tenant="alice")   # postgresql://... (never printed)
    handler = MemoryHandler(store)

What it promises (SECURITY.md, docs/spec-notes.md D-STORE-PG-*):
* One transaction per command. A writing transaction first takes its tenant's lock (a transaction-level advisory
  lock keyed by the schema's and the tenant's names, `tenant_lock_key`; an edit's, with the read of its file,
  before that read locks any row), so the writers of one tenant queue as
  SQLite's do, whatever host they run on, and the writers of different tenants never wait for each other
  (D-STORE-PG-WRITERS). `str_replace` and `insert` read
  the file with `SELECT ... FOR UPDATE` and write it in the same transaction: no update is lost. A folder's
  rename or delete is one transaction of a fixed number of statements over the key range of its subtree.
* Tenants: every row carries its tenant and every query names it; row-level security is a second wall: each
  store's connection sets `refmem.tenant` once, for its session (a store is one connection of one tenant, never
  shared; pooled stores, `pgpool.PostgresPool`, set it per transaction: D-STORE-PG-POOL), and a policy on
  every table with tenant rows lets a query see and write only the rows of that tenant, forced on the tables'
  owner too (D-STORE-PG-RLS). A query that forgot its tenant filter still
  sees one tenant.
* A connection found broken when a command starts is opened again and the command run (nothing of it was sent):
  at most `RECONNECTS` times. Lost in the middle, the command is answered with the `disconnected` reason (the
  server rolls the transaction back); lost while committing, with `commit_unknown` (D-STORE-PG-RETRY). No
  message of the server, host, DSN or password reaches a result or a StoreError.
* A writer waits at most `LOCK_SECONDS` for another writer of its tenant, then is answered `busy`.
* The schema is versioned (`refmem_schema`) and made by `refmem db init` or the first store opened with
  `create=True` (under an advisory lock, so many processes may start at once); a newer schema is refused.

A store is one connection, used by one thread at a time. Open stores after a fork, never before.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from .. import problems
from .._store_messages import (
    STORE_PG_CANNOT_CONNECT,
    STORE_PG_NO_DRIVER,
    STORE_PG_NO_SCHEMA,
    STORE_PG_NOT_UTF8,
    STORE_PG_SCHEMA_OLDER,
    STORE_SCHEMA_NEWER,
)
from ..limits import DEFAULT_HISTORY_LIMITS, DEFAULT_LIMITS, HistoryLimits, Limits
from ..messages import IO_REASONS, io_reason
from ..store_protocol import tenant_name
from . import StoreError
from .core import Params, SqlStore
from .quota import Quota
from .schema import DEFAULT_TENANT, POSTGRES, RECOUNTS, SCHEMA_VERSION, TABLES, UPGRADES, Queries, upgrade

QUERIES = Queries(POSTGRES)
USE_IF_FREE = QUERIES.use + " AND pg_try_advisory_xact_lock(%s) RETURNING 1"
"""A view's use, written only when its tenant's lock is free (`use_if_free`)."""
RECONNECTS = 2
"""Times a command that found its connection broken before it began opens a new one and starts again."""
LOCK_SECONDS = 30
"""How long a writer waits for its tenant's lock (PostgreSQL's lock_timeout) before it is answered `busy`."""
IDLE_SECONDS = 10
"""How long a session may sit idle inside a transaction before the server ends it (PostgreSQL's
idle_in_transaction_session_timeout, D-STORE-PG-TIMEOUTS): a client frozen while it holds its tenant's lock is cut
off, and the writers waiting for that lock (`LOCK_SECONDS`, longer) are served. A store's transaction never waits
on its caller between statements for so long."""
STATEMENT_SECONDS = 120
"""Longest any one statement may run (statement_timeout, D-STORE-PG-TIMEOUTS), its wait for a lock included: longer
than `LOCK_SECONDS`, so a writer that waits is answered `busy` by the lock's timeout, never by this one."""
CONNECT_SECONDS = 10
TENANT_SETTING = "refmem.tenant"
"""The setting the row-level security policy reads, set for a store's session when it connects (D-STORE-PG-RLS)."""
TENANT_PREFIX = "tenant:"
"""What the setting holds before the tenant's name: an unset setting (NULL, or "" once a transaction set it locally
and ended) therefore matches no row, not even the default tenant's (whose name is "")."""
INIT_LOCK = 0x7265666D656D  # "refmem": the advisory lock that serialises schema changes

_LOCKING: Dict[str, str] = {} if QUERIES.read_for_edit_locking is None else {
    QUERIES.read_for_edit: QUERIES.read_for_edit_locking
}
"""Statements that, first in a writing transaction, take the tenant's lock themselves (D-STORE-PG-WRITERS): the
lock's key is their last parameter. An edit's read (str_replace, insert, `write`) so follows a bare BEGIN, as the
floor's locked read-modify-write does, instead of a BEGIN sent with the lock's SELECT (one statement the server
parses and plans each time, and one result more for the client)."""

BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ"
CONTROLS = frozenset({POSTGRES.begin_write, BEGIN_READ, "COMMIT", "ROLLBACK"})
"""The statements `PostgresEngine._control` sends straight through libpq (D-STORE-PG-CONTROL): none takes a lock that
another transaction can hold (the tenant's lock is taken by another statement), none has a parameter or a row."""

EDITS = frozenset({"str_replace", "insert"})
"""The tool's commands (`acting`) whose writing transaction starts with the file's read for update: the handler's
edit takes the store's lock, then opens the file, with nothing in between that the lock must guard."""

APP_READS = ("refmem_schema",)
"""The tables the application's role may only read (`migrate`'s `app_role`, D-STORE-PG-ROLE)."""
APP_WRITES = tuple(table.name for table in TABLES if table.name not in APP_READS)
"""The tables whose rows the application's role reads and writes: every other one of refmem's."""

_POLICY = f"current_setting('{TENANT_SETTING}', true) = '{TENANT_PREFIX}' || tenant"
_TENANT_TABLES = tuple(table.name for table in TABLES if any(column == "tenant" for column, _ in table.columns))


def _rls_statements(tables: Tuple[str, ...] = _TENANT_TABLES) -> Tuple[str, ...]:
    statements = []
    for table in tables:
        statements.append(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        statements.append(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        statements.append(f"CREATE POLICY refmem_tenant ON {table} USING ({_POLICY}) WITH CHECK ({_POLICY})")
    return tuple(statements)


SCHEMA: Tuple[str, ...] = QUERIES.ddl + _rls_statements()
"""The statements that make the whole schema, of this refmem's version, in a database that has none."""
def _recount(version: int) -> Tuple[str, ...]:
    """A migration's recounts (`schema.RECOUNTS`), run by the tables' owner with row-level security's force lifted
    for them alone and put back in the same transaction: forced, the owner would see no tenant's rows and count 0."""
    statements = RECOUNTS.get(version, ())
    if not statements:
        return ()
    lift = tuple(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY" for table in _TENANT_TABLES)
    force = tuple(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY" for table in _TENANT_TABLES)
    return lift + statements + force


MIGRATIONS: Dict[int, Tuple[str, ...]] = {
    version: upgrade(POSTGRES, version)
    + _rls_statements(tuple(t for t in added[0] if t in _TENANT_TABLES))
    + _recount(version)
    for version, added in UPGRADES.items()
}
"""The statements that bring a schema of version N-1 to version N, row-level security on every table they add.
`refmem db migrate` runs those after the database's version, in one transaction."""

# SQLSTATE (or its class, the first two characters) -> the IO reason it stands for.
_REASON_BY_STATE: Dict[str, str] = {
    "53100": "no_space",  # disk_full
    "53": "os",  # insufficient resources
    "40": "busy",  # serialization failure, deadlock
    "55P03": "busy",  # lock_not_available (lock_timeout)
    "57014": "busy",  # query_canceled (statement_timeout)
    "42501": "denied",  # insufficient_privilege (row-level security refused a row, a missing grant)
    "28": "denied",  # invalid authorization
    "25006": "read_only_fs",  # read_only_sql_transaction (a standby)
    "57P": "disconnected",  # admin shutdown, crash shutdown, cannot connect now
    "08": "disconnected",  # connection exception
    "58": "io",  # system error
    "XX": "io",  # internal error, data corrupted
}


def tenant_lock_key(schema: str, tenant: str) -> int:
    """The key of the advisory lock a writer of `tenant` takes first (D-STORE-PG-WRITERS): 64 bits of the SHA-256
    of the schema's and the tenant's names, so the tenants of two schemas of one database do not share it. Two
    tenants whose keys collide (one chance in 2**64 a pair) would only queue behind each other."""
    digest = hashlib.sha256(f"refmem-tenant-lock\0{schema}\0{tenant}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError(STORE_PG_NO_DRIVER) from None
    return psycopg


def reason_of(error: BaseException, connection: Any = None) -> str:
    """The IO reason (messages.IO_REASONS key) a psycopg error stands for: by SQLSTATE, else by the connection's
    state (a broken connection: `disconnected`)."""
    state = getattr(error, "sqlstate", None) or ""
    for length in (5, 3, 2):
        if state[:length] in _REASON_BY_STATE:
            return _REASON_BY_STATE[state[:length]]
    if connection is not None and (connection.broken or connection.closed):
        return "disconnected"
    return "os"


def _connect_reason(error: BaseException) -> str:
    state = getattr(error, "sqlstate", None) or ""
    if state.startswith("28"):
        return "the login was refused"
    if state == "3D000":
        return "the database does not exist"
    return "no server answered, or it refused the user, the password or the database name"


def session_settings(tenant_key: Optional[str], local: bool) -> Tuple[str, Tuple[Any, ...]]:
    """The one statement that sets a session's timeouts (D-STORE-PG-TIMEOUTS: `LOCK_SECONDS`, `IDLE_SECONDS`,
    `STATEMENT_SECONDS`) and, with `tenant_key`, its tenant (D-STORE-PG-RLS), and returns the server's encoding
    (`require_utf8`): a connection's first statement, no round trip of its own. `local`: for the transaction only."""
    settings = [
        ("lock_timeout", f"{LOCK_SECONDS}s"),
        ("idle_in_transaction_session_timeout", f"{IDLE_SECONDS}s"),
        ("statement_timeout", f"{STATEMENT_SECONDS}s"),
    ]
    if tenant_key is not None:
        settings.append((TENANT_SETTING, TENANT_PREFIX + tenant_key))
    scope = "true" if local else "false"
    calls = ", ".join(f"set_config(%s, %s, {scope})" for _ in settings)
    params = tuple(value for pair in settings for value in pair)
    return f"SELECT current_setting('server_encoding'), {calls}", params


def require_utf8(encoding: object) -> None:
    """StoreError unless the database's encoding is UTF8 (D-STORE-PG-UTF8): in SQL_ASCII or LATIN1 the server
    compares, orders and cuts text by bytes of another meaning, so listings and folder renames go wrong."""
    if encoding == "UTF8":
        return
    said = encoding.decode("ascii", "replace") if isinstance(encoding, bytes) else str(encoding)  # SQL_ASCII: bytes
    shown = said if len(said) <= 32 and all(c.isalnum() or c == "_" for c in said) else "unknown"
    raise StoreError(STORE_PG_NOT_UTF8.format(found=shown))


def connect(dsn: str, tenant_key: Optional[str] = None) -> Any:
    """A psycopg connection (autocommit: the store writes its own BEGIN and COMMIT); StoreError naming no host,
    DSN or password when none can be made. With `tenant_key`, the connection is that tenant's for its whole
    life: `refmem.tenant` set for the session, in the statement that sets its timeouts (D-STORE-PG-RLS); StoreError,
    too, for a database whose encoding is not UTF8 (D-STORE-PG-UTF8)."""
    psycopg = _driver()
    try:
        connection = psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_SECONDS)
    except psycopg.Error as error:
        raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason=_connect_reason(error))) from None
    except (ValueError, TypeError):  # a malformed DSN: its text may hold the password
        raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason="the connection string is malformed")) from None
    try:
        statement, params = session_settings(tenant_key, local=False)
        row = connection.execute(statement, params).fetchone()
    except psycopg.Error as error:
        connection.close()
        raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason=_connect_reason(error))) from None
    try:
        require_utf8(None if row is None else row[0])
    except StoreError:
        connection.close()
        raise
    return connection


def schema_version(connection: Any) -> Optional[int]:
    """The version of the refmem schema the connection's search path finds; None when there is none."""
    row = connection.execute("SELECT to_regclass('refmem_schema') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return None
    found = connection.execute(QUERIES.schema_version).fetchone()
    return None if found is None or found[0] is None else int(found[0])


def migrate(dsn: str, app_role: Optional[str] = None) -> Tuple[Optional[int], int]:
    """Bring the database at `dsn` to this refmem's schema (making it where there is none), in one transaction
    under the schema's advisory lock; (version before, version after). A newer schema: StoreError.

    With `app_role`, that role is granted what the store needs and nothing more (reading and writing the rows of
    refmem's tables, and using their schema): the deployment where the application's role does not own the
    tables, so it cannot turn their row-level security off (D-STORE-PG-RLS), nor change the recorded schema version:
    `refmem_schema` it may only read (D-STORE-PG-ROLE; a migrate with `app_role` takes back a wider grant)."""
    connection = connect(dsn)
    psycopg = _driver()
    from psycopg import sql
    try:
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (INIT_LOCK,))
            found = schema_version(connection)
            if found is not None and found > SCHEMA_VERSION:
                raise StoreError(STORE_SCHEMA_NEWER.format(found=found, known=SCHEMA_VERSION))
            steps = (SCHEMA,) if found is None else tuple(MIGRATIONS[v] for v in range(found + 1, SCHEMA_VERSION + 1))
            for statements in steps:
                for statement in statements:
                    connection.execute(statement)
            if found is None:
                connection.execute(QUERIES.set_schema_version, (SCHEMA_VERSION,))
            elif found < SCHEMA_VERSION:
                connection.execute("UPDATE refmem_schema SET version = %s", (SCHEMA_VERSION,))
            if app_role is not None:
                role = sql.Identifier(app_role)
                schema = connection.execute("SELECT current_schema()").fetchone()
                if schema and schema[0]:
                    usage = sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema[0]), role)
                    connection.execute(usage)
                rows = sql.SQL(", ").join(sql.Identifier(name) for name in APP_WRITES)
                connection.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(rows, role))
                for name in APP_READS:  # read only: the role never changes the recorded schema (D-STORE-PG-ROLE)
                    table = sql.Identifier(name)
                    connection.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(table, role))
                    connection.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(table, role))
        return found, SCHEMA_VERSION
    except psycopg.Error as error:
        raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason=IO_REASONS[reason_of(error, connection)])) from None
    finally:
        connection.close()


def check_schema(dsn: str, create: bool, connection: Any = None) -> bool:
    """Whether the schema is missing and `create` says to make it (`migrate`); StoreError when it is missing and
    not to be made, older or newer than this refmem's, or cannot be read. Over `connection`, else one of its own."""
    psycopg = _driver()
    own = connection is None
    connection = connect(dsn) if own else connection
    try:
        found = schema_version(connection)
    except psycopg.Error as error:
        raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason=IO_REASONS[reason_of(error, connection)])) from None
    finally:
        if own:
            connection.close()
    if found is None:
        if create:
            return True
        raise StoreError(STORE_PG_NO_SCHEMA)
    if found > SCHEMA_VERSION:
        raise StoreError(STORE_SCHEMA_NEWER.format(found=found, known=SCHEMA_VERSION))
    if found < SCHEMA_VERSION:
        raise StoreError(STORE_PG_SCHEMA_OLDER.format(found=found, known=SCHEMA_VERSION))
    return False


class PostgresEngine:
    """The PostgreSQL engine of `SqlStore` (`core.Engine`): one connection to `dsn`, its tenant's (`tenant_key`) for
    its whole life. With `create`, a database without the schema gets it; StoreError when it cannot serve (see
    `PostgresStore`)."""

    queries = QUERIES
    first_mutation_savepoint = False  # a SAVEPOINT is a round trip (D-STORE-PG-WRITERS)

    def __init__(self, dsn: str, tenant_key: str, create: bool = True) -> None:
        self.dsn = dsn
        self.tenant_key = tenant_key
        self.create = create
        self._psycopg = _driver()
        self._command_ok = self._psycopg.pq.ExecStatus.COMMAND_OK
        self._idle = self._psycopg.pq.TransactionStatus.IDLE
        if create and check_schema(dsn, create):
            migrate(dsn)
        self._begin_locked = ""
        self.lock_key = 0
        self._unbegun = False  # a writing transaction to begin at its next statement (`begin_write`)
        self._cursor: Any = None
        self._cursor_of: Any = None  # the connection `_cursor` belongs to
        self.conn: Any = None
        self.conn = self._connect()
        try:
            if not create:
                check_schema(dsn, create, self.conn)
            self._begin(POSTGRES.begin_write)
            try:
                self._send(QUERIES.add_tenant, (tenant_key,))
            except self._psycopg.Error as error:
                raise failure_of(self._psycopg, error, self.conn) or problems.OsFailure("os") from None
            self.commit()
        except problems.FsProblem as failure:
            self.close()
            reason = io_reason(failure.code)
            raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason=reason)) from None
        except BaseException:
            self.close()
            raise

    def execute(self, sql: str, params: Params) -> Any:
        if self._unbegun:
            self._unbegun = False
            locking = _LOCKING.get(sql)
            if locking is not None:  # BEGIN alone, then the statement that takes the tenant's lock itself
                self._begin(POSTGRES.begin_write)
                return self._send(locking, (*params, self.lock_key))
            self._begin(self._begin_locked)
        return self._send(sql, bound(params))

    def _send(self, sql: str, params: Optional[Params] = None) -> Any:
        """One message to the server on the connection's one cursor, made once per connection: a cursor per
        statement (psycopg's `Connection.execute`) costs a new cursor and its adapters in every statement,
        12 µs of the 100 µs a statement took here. The cursor is the statement's (`finished` keeps it open)."""
        connection = self.conn
        if self._cursor_of is not connection:
            self._cursor, self._cursor_of = connection.cursor(), connection
        return self._cursor.execute(sql, params)

    def _control(self, sql: str) -> None:
        """A transaction's control statement that never waits for a lock (`CONTROLS`: a bare BEGIN, COMMIT,
        ROLLBACK): no parameter, no row, so libpq sends it by the simple protocol straight (psycopg's
        `PGconn.exec_`, which releases the GIL while it waits), not through the cursor, whose machinery (the query's
        conversion, the prepared-statement cache, the result's description) costs 35-45 µs of client CPU a statement
        here for nothing such a statement needs: about 80 µs of an edit's four statements (D-STORE-PG-CONTROL). An
        error is the psycopg error the cursor would have raised (`psycopg.errors.error_from_result`), a lost
        connection psycopg's OperationalError: what `reason_of` and `failure_of` read is the same."""
        result = self.conn.pgconn.exec_(sql.encode("ascii"))
        if result.status != self._command_ok:
            raise self._psycopg.errors.error_from_result(result)

    def finished(self, cursor: Any) -> None:
        """The connection's one cursor stays open for its next statement (`_send`)."""

    def restart_write(self, command: str) -> None:
        """The transaction rolled back now and begun again only at its next statement, if one comes: a caller that
        gives up after the failure sends nothing more, and never waits for the tenant's lock again."""
        with contextlib.suppress(Exception):
            self.rollback()
        self._unbegun = True

    def _connect(self) -> Any:
        """The engine's connection: its tenant's for its whole life (`connect`). A store is one connection for one
        tenant, never shared nor pooled, so the setting row-level security reads is set once per connection, not
        per transaction (D-STORE-PG-RLS); and a writer's BEGIN and its tenant's lock are one message of two
        statements (the simple protocol; the lock's key is a number, `tenant_lock_key`)."""
        connection = connect(self.dsn, self.tenant_key)
        try:
            row = connection.execute("SELECT current_schema()").fetchone()
        except self._psycopg.Error as error:
            connection.close()
            raise StoreError(STORE_PG_CANNOT_CONNECT.format(reason=IO_REASONS[reason_of(error)])) from None
        key = tenant_lock_key(str(row[0]) if row and row[0] is not None else "", self.tenant_key)
        self.lock_key = key
        self._begin_locked = f"{POSTGRES.begin_write}; SELECT pg_advisory_xact_lock({key:d})"
        return connection

    def _begin(self, begin: Optional[str]) -> None:
        """`begin` (a transaction's first message: BEGIN, and for a writer its tenant's lock), or nothing for a
        read of one statement. A connection found broken here is opened again (nothing of the command has been
        sent), at most RECONNECTS times."""
        for attempt in range(RECONNECTS + 1):
            try:
                if self.conn.broken or self.conn.closed:
                    self._reconnect()
                self.rollback()  # never run a command inside what an earlier one left open
                if begin in CONTROLS:
                    self._control(begin)
                elif begin is not None:
                    self._send(begin)
                return
            except self._psycopg.Error as error:
                reason = reason_of(error, self.conn)
                self.rollback()
                if reason != "disconnected" or attempt == RECONNECTS:
                    raise problems.OsFailure(reason) from None
                time.sleep(0.05 * 2**attempt)
            except StoreError:
                if attempt == RECONNECTS:
                    raise problems.OsFailure("disconnected") from None
                time.sleep(0.05 * 2**attempt)

    def _reconnect(self) -> None:
        old = self.conn
        self.conn = self._connect()
        with contextlib.suppress(Exception):  # a broken connection's close may fail; it is gone either way
            old.close()

    def begin_write(self, command: str) -> None:
        """BEGIN and the tenant's lock, one message; for the tool's edits (`EDITS`), nothing yet: their transaction
        begins with its first statement (`execute`), the file's read, which takes the lock itself (`_LOCKING`)
        after a bare BEGIN, as a locked read-modify-write does (any other first statement would follow BEGIN and
        the lock, as here). Every other writer holds the lock for its whole block, statements or not
        (store_protocol.Store.locked)."""
        if command in EDITS:
            self._unbegun = True
            return
        self._begin(self._begin_locked)

    def begin_read(self) -> None:
        self._begin(BEGIN_READ)  # one snapshot for every statement of the read

    def begin_single(self) -> bool:
        self._begin(None)  # autocommit: the statement is a transaction of its own, one snapshot
        return True

    def commit(self) -> None:
        if self._unbegun:  # not begun, or rolled back, and nothing sent since: nothing to commit
            self._unbegun = False
            return
        try:
            self._control("COMMIT")
        except self._psycopg.Error as error:
            reason = reason_of(error, self.conn)
            raise problems.OsFailure("commit_unknown" if reason == "disconnected" else reason) from None

    def rollback(self) -> None:
        self._unbegun = False
        connection = self.conn
        if connection is None or connection.broken or connection.closed:
            return
        if connection.info.transaction_status != self._idle:
            self._control("ROLLBACK")

    def use_unwaiting(self, params: Tuple[Any, ...]) -> None:
        use_if_free(self, params)

    def failure(self, error: Exception) -> Optional[problems.FsProblem]:
        return failure_of(self._psycopg, error, self.conn)

    def reopen(self, tenant: str, actor: Optional[str], like: SqlStore) -> PostgresStore:
        return PostgresStore(
            self.dsn, tenant=tenant, create=False, actor=actor, history=like.history_limits, limits=like.limits,
            quota=like.quota,
        )

    def close(self) -> None:
        connection = self.conn
        if connection is not None:
            self.conn = None
            with contextlib.suppress(Exception):
                connection.close()


def bound(params: Params) -> Optional[Params]:
    """What psycopg is given: values by name as they are, by position as a tuple, none as None."""
    if not params:
        return None
    return params if isinstance(params, Mapping) else tuple(params)


def use_if_free(engine: Any, params: Tuple[Any, ...]) -> None:
    """A view's use (`core.Engine.use_unwaiting`) on a PostgreSQL engine: one statement of its own that writes it only
    if it gets its tenant's lock at once (`pg_try_advisory_xact_lock`, D-STORE-SQL-USES): with the lock, no writer of
    the tenant holds the row, so nothing waits; without it, nothing is written and nothing waited for."""
    if not engine.begin_single():
        engine.begin_read()
    try:
        cursor = engine.execute(USE_IF_FREE, params + (engine.lock_key,))
        try:
            cursor.fetchone()
        finally:
            engine.finished(cursor)
    finally:
        engine.rollback()


def failure_of(psycopg: Any, error: Exception, connection: Any) -> Optional[problems.FsProblem]:
    """The problem a psycopg error stands for (`core.Engine.failure`); None for any other exception."""
    if isinstance(error, psycopg.Error):
        if getattr(error, "sqlstate", None) == "23505":  # unique_violation: the path is taken
            return problems.Exists()
        return problems.OsFailure(reason_of(error, connection))
    return None


class PostgresStore(SqlStore):
    """Memories in a PostgreSQL database (`store_protocol.Store`; see the module docstring): `SqlStore` over a
    `PostgresEngine`."""

    engine: PostgresEngine

    def __init__(
        self,
        dsn: str,
        *,
        tenant: Optional[str] = None,
        create: bool = True,
        actor: Optional[str] = None,
        history: Union[HistoryLimits, Mapping[str, int]] = DEFAULT_HISTORY_LIMITS,
        limits: Union[Limits, Mapping[str, int]] = DEFAULT_LIMITS,
        quota: Union[Quota, Mapping[str, Optional[int]], None] = None,
    ) -> None:
        """Connect to `dsn` (a libpq connection string or URI, never shown). With `create`, a database without
        the schema gets it (as `refmem db init`); without, StoreError. StoreError, too, when the schema is
        older (`refmem db migrate`) or newer than this refmem's, or the server cannot be reached. `actor`,
        `history` and `limits`: `core.SqlStore`."""
        name = None if tenant is None else tenant_name(tenant)
        engine = PostgresEngine(dsn, DEFAULT_TENANT if name is None else name, create)
        super().__init__(engine, name, actor, history, limits, quota)

    @property
    def _conn(self) -> Any:
        """The engine's connection (tests end its session on the server)."""
        return self.engine.conn

    @_conn.setter
    def _conn(self, connection: Any) -> None:
        """A wrapper of the engine's connection (bench/stores.py counts the statements through one)."""
        self.engine.conn = connection

    @property
    def _dsn(self) -> str:
        return self.engine.dsn
