"""What an operator asks of a database store as a whole: `refmem db check` (is it healthy?) and `refmem db tenants`
(who keeps what?), for SQLite and PostgreSQL alike (D-STORE-DB-CHECK, D-STORE-DB-TENANTS).

`check_sqlite(path)` and `check_postgres(dsn, app_role)` (the `db check` of their rows in `location.SCHEMES`,
D-STORE-SCHEMES) read, never write: the store reachable, its schema at this refmem's version with every
table there, and per engine what can go wrong with it. SQLite: the database, `-wal` and `-shm` open to no other user
(D-STORE-SQL-MODE). PostgreSQL: row-level security enabled and forced, with its policy, on every table of tenant rows
(D-STORE-PG-RLS), and the application's role no wider than `db init --app-role` grants (D-STORE-PG-ROLE): not a
superuser nor BYPASSRLS, no privilege beyond reading and writing rows, `refmem_schema` only read, and (when the role is
named apart from the store's) owning no table. Every problem is one line of `_store_messages.CHECK_*`, naming no
location, host, user (but a role the operator named) or password.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from typing import Any, List, Optional, Tuple
from urllib.parse import quote

from .. import _store_messages as m
from ..messages import IO_REASONS, escape
from ..problems import FILE
from . import StoreError
from .schema import SCHEMA_VERSION, SQLITE, TABLES, Queries

Tenant = Tuple[str, int, int, int, int]
"""One line of `tenants`: (name, files, their bytes, versions kept, what the versions count against the budget)."""

ROW_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE")
"""What the application's role may do on a table of rows (D-STORE-PG-ROLE); on `refmem_schema`, SELECT alone."""
OTHER_PRIVILEGES = ("TRUNCATE", "REFERENCES", "TRIGGER")
READ_ONLY_TABLES = ("refmem_schema",)


def _healthy(engine: str, more: str = "") -> str:
    return m.CHECK_HEALTHY.format(engine=engine, version=SCHEMA_VERSION, more=more)


def _schema_problems(found: Optional[int], missing: List[str]) -> List[str]:
    if found is None:
        return [m.CHECK_NO_SCHEMA]
    if found > SCHEMA_VERSION:
        return [m.CHECK_SCHEMA_NEWER.format(found=found, known=SCHEMA_VERSION)]
    if found < SCHEMA_VERSION:
        return [m.CHECK_SCHEMA_OLDER.format(found=found, known=SCHEMA_VERSION)]
    return [m.CHECK_TABLE_MISSING.format(table=table) for table in missing]


# --- SQLite -----------------------------------------------------------------------------------------------------


def _read_only(path: str) -> sqlite3.Connection:
    """The database opened to be read (`mode=rw`: never made where nothing is; read-only would need its `-shm` to be
    there already, which it is not while no other connection has the database open). Nothing is written."""
    from .sqlite import BUSY_SECONDS

    uri = f"file://{quote(os.path.abspath(path))}?mode=rw"
    return sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS, isolation_level=None)


def check_sqlite(path: str) -> Tuple[List[str], str]:
    from .sqlite import _schema_version, reason_of

    if not os.path.isfile(path):
        return [m.CHECK_NO_DATABASE], ""
    problems: List[str] = []
    for part, suffix in (("file", ""), ("-wal", "-wal"), ("-shm", "-shm")):
        try:
            mode = os.stat(path + suffix).st_mode
        except OSError:
            continue  # no -wal or -shm while no connection has the database open
        if stat.S_IMODE(mode) & 0o077:
            problems.append(m.CHECK_FILE_OPEN.format(part=part, mode=oct(stat.S_IMODE(mode))[2:]))
    try:
        db = _read_only(path)
        try:
            found = _schema_version(db)
            present = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            db.close()
    except sqlite3.DatabaseError as error:
        reason = m.STORE_NOT_A_DATABASE if reason_of(error) == "io" else IO_REASONS[reason_of(error)]
        return problems + [m.CHECK_UNREACHABLE.format(reason=reason)], ""
    problems += _schema_problems(found, [table.name for table in TABLES if table.name not in present])
    return problems, _healthy("sqlite")


# --- PostgreSQL -------------------------------------------------------------------------------------------------


def check_postgres(dsn: str, app_role: Optional[str]) -> Tuple[List[str], str]:
    from .postgres import _TENANT_TABLES, _driver, connect, reason_of, schema_version

    try:
        connection = connect(dsn)
    except StoreError as error:
        return [m.CHECK_UNREACHABLE.format(reason=error)], ""
    psycopg = _driver()
    try:
        found = schema_version(connection)
        missing = [table.name for table in TABLES if not _one(connection, "SELECT to_regclass(%s) IS NOT NULL",
                                                                 (table.name,))]
        problems = _schema_problems(found, missing)
        for table in _TENANT_TABLES:
            if table in missing:
                continue
            security = _row(connection, "SELECT relrowsecurity AND relforcerowsecurity FROM pg_class"
                            " WHERE oid = to_regclass(%s)", (table,))
            if security is None or not security[0]:
                problems.append(m.CHECK_NO_RLS.format(table=table))
            if not _one(connection, "SELECT count(*) FROM pg_policy WHERE polrelid = to_regclass(%s)"
                        " AND polname = 'refmem_tenant'", (table,)):
                problems.append(m.CHECK_NO_POLICY.format(table=table))
        problems += _role_problems(connection, app_role, [t.name for t in TABLES if t.name not in missing])
    except psycopg.Error as error:
        return [m.CHECK_UNREACHABLE.format(reason=IO_REASONS[reason_of(error, connection)])], ""
    finally:
        connection.close()
    more = "" if app_role is None else f", role {escape(app_role, 63)} checked"
    return problems, _healthy("postgresql", more)


def _role_problems(connection: Any, app_role: Optional[str], tables: List[str]) -> List[str]:
    """The role's privileges against D-STORE-PG-ROLE: the named `app_role`, else the store's own (the DSN's user,
    then not named in what is printed, and allowed to own the tables: the deployment without a split)."""
    role = app_role if app_role is not None else str(_one(connection, "SELECT current_user", ()))
    shown = escape(app_role, 63) if app_role is not None else "of the store"
    found = _row(connection, "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s", (role,))
    if found is None:
        return [m.CHECK_ROLE_MISSING.format(role=shown)]
    problems: List[str] = []
    if found[0] or found[1]:
        problems.append(m.CHECK_ROLE_BYPASSES.format(role=shown))
    for table in tables:
        owner = _one(connection, "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass(%s)",
                     (table,))
        if owner == role:
            if app_role is not None:
                problems.append(m.CHECK_ROLE_OWNS.format(role=shown, table=table))
            continue  # an owner holds every privilege: its width is the ownership, said above when it matters
        allowed = ("SELECT",) if table in READ_ONLY_TABLES else ROW_PRIVILEGES
        for privilege in ROW_PRIVILEGES + OTHER_PRIVILEGES:
            held = _one(connection, "SELECT has_table_privilege(%s, to_regclass(%s), %s)", (role, table, privilege))
            if held and privilege not in allowed:
                problems.append(m.CHECK_ROLE_WIDER.format(role=shown, privilege=privilege, table=table))
            elif not held and privilege in allowed:
                problems.append(m.CHECK_ROLE_CANNOT.format(role=shown, privilege=privilege, table=table))
    return problems


def _row(connection: Any, sql: str, params: Tuple[Any, ...]) -> Optional[Tuple[Any, ...]]:
    row = connection.execute(sql, params).fetchone()
    return None if row is None else tuple(row)


def _one(connection: Any, sql: str, params: Tuple[Any, ...]) -> Any:
    row = _row(connection, sql, params)
    return None if row is None else row[0]


# --- every tenant -----------------------------------------------------------------------------------------------


def tenants_sqlite(path: str) -> List[Tenant]:
    """Every tenant of the SQLite database at `path`, by name ("" the default one), with its files, their bytes, its
    versions and what they count (`Tenant`); StoreError when the store cannot be read so (D-STORE-DB-TENANTS)."""
    from .sqlite import _schema_version, reason_of

    if not os.path.isfile(path):
        raise StoreError(m.CHECK_NO_DATABASE)
    try:
        db = _read_only(path)
        try:
            found = _schema_version(db)
            problems = _schema_problems(found, [])
            if problems:
                raise StoreError(problems[0])
            rows = db.execute(Queries(SQLITE).tenants, (FILE, FILE)).fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as error:
        reason = m.STORE_NOT_A_DATABASE if reason_of(error) == "io" else IO_REASONS[reason_of(error)]
        raise StoreError(m.STORE_CANNOT_OPEN.format(reason=reason)) from None
    return [_tenant(row) for row in rows]


def tenants_postgres(dsn: str) -> List[Tenant]:
    """`tenants_sqlite` of the PostgreSQL database at `dsn`; StoreError, too, when the role is held by row-level
    security, which would show it no tenant at all (D-STORE-DB-TENANTS)."""
    from .postgres import QUERIES, _driver, check_schema, connect, reason_of

    connection = connect(dsn)
    psycopg = _driver()
    try:
        check_schema(dsn, False, connection)
        if not _one(connection, "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user", ()):
            raise StoreError(m.TENANTS_NEED_BYPASS)
        with connection.transaction():  # one snapshot of every table
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            rows = connection.execute(QUERIES.tenants, (FILE, FILE)).fetchall()
    except psycopg.Error as error:
        reason = IO_REASONS[reason_of(error, connection)]
        raise StoreError(m.STORE_PG_CANNOT_CONNECT.format(reason=reason)) from None
    finally:
        connection.close()
    return [_tenant(row) for row in rows]


def _tenant(row: Tuple[Any, ...]) -> Tenant:
    name, files, size, versions, counted = row
    return str(name), int(files), int(size), int(versions), int(counted)


def tenant_line(tenant: Tenant) -> str:
    """One line of `refmem db tenants`: the name (escaped: it is read from the database), files, bytes, versions,
    version bytes."""
    name, files, size, versions, counted = tenant
    shown = m.TENANTS_DEFAULT if name == "" else escape(name, 80)
    return m.TENANTS_LINE.format(tenant=shown, files=files, size=size, versions=versions, version_bytes=counted)
