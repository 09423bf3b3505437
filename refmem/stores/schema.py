"""The SQL stores' schema and queries, written once for every SQL engine.

The schema is data (`TABLES`, `INDEXES`), rendered for an engine by its `Dialect`; every query the stores
run is a constant of `Queries`, built here and nowhere else, and every one of them names the tenant (a
column of every row, part of every key). A PostgreSQL store reuses all of this with its own dialect:
`%s` placeholders, `BYTEA`, byte-order collation, `SELECT ... FOR UPDATE`.

A memory is one row per folder or file (`refmem_nodes`), keyed by (tenant, path): `path` is the virtual
path below `/memories` with `/` between names ("" is `/memories` itself, which has no row), `parent` the
path of the folder holding it, `depth` its number of names. A subtree is a range of the key
(`path > 'a/'` and `path < 'a0'`: "0" is the character after "/"), so a folder's delete or rename is one
statement over exactly its subtree, served by the primary key's index.

History (`refmem_versions`, schema version 2): the content a write replaces or a delete removes, one row per
(tenant, path, number), where the number is the tenant's generation of the change that kept it (so it only grows,
per path and per tenant, and is never given twice even after retention dropped every older one), and the tenant's
oldest versions are the lowest numbers of the index `(tenant, number)`. `refmem_tenants.version_bytes` is the
tenant's running total of version bytes, so the retention rule never sums over the tenant (refmem/stores/history.py).
"""

from __future__ import annotations

from typing import Callable, Dict, NamedTuple, Optional, Tuple

SCHEMA_VERSION = 3
"""The schema this refmem writes and reads. A database of a later version is refused (the store's open)."""
VERSION_ROW_BYTES = 512
"""What a kept version counts against its tenant's `bytes_per_tenant` beyond its content (D-STORE-HISTORY-RETENTION):
its row's other columns and its two index entries (about 300 bytes on SQLite for a short path), rounded up, so that
versions of empty files are bounded by the budget too, not only by `versions_per_file` per path."""

DEFAULT_TENANT = ""
"""The tenant column of the default namespace: no accepted tenant name is empty (store_protocol.tenant_name)."""


class Dialect(NamedTuple):
    """What differs between SQL engines, as text the queries are built from."""

    name: str
    placeholder: str  # "?" (sqlite3) or "%s" (psycopg)
    text: str  # a column type whose comparison is by code point (SQLite's TEXT; PostgreSQL: TEXT COLLATE "C")
    blob: str  # BLOB or BYTEA
    real: str  # a float column: REAL or DOUBLE PRECISION
    integer: str  # a 64-bit integer: INTEGER or BIGINT
    byte_length: str  # an expression's length in UTF-8 bytes, "{}" standing for the expression
    begin_write: str  # the statement that starts a writing transaction
    for_update: str  # appended to a read of a row a transaction will change ("" where the write lock is global)
    sha256_hex: str  # an expression's SHA-256 as 64 lower-case hex digits, "{}" standing for the expression
    returning: bool  # whether an UPDATE may end in RETURNING (one statement where two would be: a round trip less)
    tenant_lock: str  # an expression that takes a transaction's lock keyed by "{}" ("" where the write lock is global)


SQLITE = Dialect(
    name="sqlite",
    placeholder="?",
    text="TEXT",
    blob="BLOB",
    real="REAL",
    integer="INTEGER",
    byte_length="length(CAST({} AS BLOB))",
    begin_write="BEGIN IMMEDIATE",
    for_update="",
    sha256_hex="refmem_sha256({})",  # a function the SQLite store registers on its connection
    returning=False,  # SQLite has it from 3.35 only, older than CPython 3.9 may bring; in process, a statement is cheap
    tenant_lock="",  # BEGIN IMMEDIATE takes the database's one write lock
)

POSTGRES = Dialect(
    name="postgresql",
    placeholder="%s",
    text='TEXT COLLATE "C"',  # byte order of UTF-8 is code point order: listings and key ranges as on SQLite
    blob="BYTEA",
    real="DOUBLE PRECISION",
    integer="BIGINT",
    byte_length="octet_length({})",
    begin_write="BEGIN ISOLATION LEVEL READ COMMITTED",
    for_update=" FOR UPDATE",
    sha256_hex="encode(sha256({}), 'hex')",
    returning=True,
    tenant_lock="pg_advisory_xact_lock({})",
)
"""The PostgreSQL store's dialect (`refmem.stores.postgres`): the same schema and statements, rendered for psycopg.
A writer's transaction is serialised per tenant by the tenant's advisory lock the store takes when it begins
(D-STORE-PG-WRITERS); an edit's read also locks the file's row."""


class Table(NamedTuple):
    name: str
    columns: Tuple[Tuple[str, str], ...]  # (name, type): a type is a Dialect field name or literal SQL
    key: Tuple[str, ...]


TABLES: Tuple[Table, ...] = (
    Table("refmem_schema", (("version", "integer NOT NULL"),), ()),
    Table(  # one row per tenant: its change journal's generation, and the oldest it can answer from
        "refmem_tenants",
        (
            ("tenant", "text NOT NULL"),
            ("generation", "integer NOT NULL"),
            ("floor", "integer NOT NULL"),
            ("version_bytes", "integer NOT NULL DEFAULT 0"),  # the bytes of its versions (schema 2)
            ("files", "integer NOT NULL DEFAULT 0"),  # its files (schema 3, D-STORE-QUOTA)
            ("content_bytes", "integer NOT NULL DEFAULT 0"),  # their bytes (schema 3, D-STORE-QUOTA)
        ),
        ("tenant",),
    ),
    Table(
        "refmem_nodes",
        (
            ("tenant", "text NOT NULL"),
            ("path", "text NOT NULL"),
            ("parent", "text NOT NULL"),
            ("name", "text NOT NULL"),
            ("depth", "integer NOT NULL"),
            ("kind", "text NOT NULL"),  # problems.DIR or problems.FILE
            ("size", "integer NOT NULL"),
            ("data", "blob"),  # a file's bytes; NULL for a folder
            ("version", "integer NOT NULL"),  # the generation of its last write: an edit's precondition
            ("used", "real"),  # its last recorded use (seconds since the epoch), D-STORE-SQL-USES
        ),
        ("tenant", "path"),
    ),
    Table(  # the change journal: the paths each generation changed
        "refmem_changes",
        (("tenant", "text NOT NULL"), ("generation", "integer NOT NULL"), ("path", "text NOT NULL")),
        (),
    ),
    Table(  # history (schema 2): the content a change replaced or removed, D-STORE-HISTORY
        "refmem_versions",
        (
            ("tenant", "text NOT NULL"),
            ("path", "text NOT NULL"),
            ("number", "integer NOT NULL"),  # the tenant's generation of the change that kept it
            ("size", "integer NOT NULL"),
            ("sha256", "text NOT NULL"),  # of the bytes, 64 lower-case hex digits
            ("kept_at", "real NOT NULL"),  # when (seconds since the epoch)
            ("actor", "text"),  # who: what the deployer gave the store, or NULL
            ("command", "text NOT NULL"),  # what: the tool's command, or the store's operation
            ("data", "blob NOT NULL"),  # last, so that reading the other columns never reads the bytes
        ),
        ("tenant", "path", "number"),
    ),
)

INDEXES: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = (
    ("refmem_nodes_by_parent", "refmem_nodes", ("tenant", "parent", "name")),
    ("refmem_changes_by_generation", "refmem_changes", ("tenant", "generation")),
    ("refmem_versions_by_number", "refmem_versions", ("tenant", "number", "path")),
)

UPGRADES: Dict[int, Tuple[Tuple[str, ...], Tuple[Tuple[str, str], ...], Tuple[str, ...]]] = {
    2: (("refmem_versions",), (("refmem_tenants", "version_bytes"),), ("refmem_versions_by_number",)),
    3: ((), (("refmem_tenants", "files"), ("refmem_tenants", "content_bytes")), ()),
}
"""What each schema version adds to the one before: (tables, (table, column) pairs, indexes), all named in
`TABLES` and `INDEXES`, which describe the latest version whole."""
RECOUNT_USAGE = (
    "UPDATE refmem_tenants SET files = (SELECT count(*) FROM refmem_nodes n"
    " WHERE n.tenant = refmem_tenants.tenant AND n.kind = 'file'),"
    " content_bytes = (SELECT coalesce(sum(n.size), 0) FROM refmem_nodes n"
    " WHERE n.tenant = refmem_tenants.tenant AND n.kind = 'file')"
)
"""Every tenant's running usage (D-STORE-QUOTA) counted from its rows: what schema 3's migration runs once, after it
added the columns (a pass over every file row; the migration's, never a command's)."""
RECOUNTS: Dict[int, Tuple[str, ...]] = {3: (RECOUNT_USAGE,)}
"""Statements a migration to a version runs after `upgrade`'s (an engine may wrap them: PostgreSQL lifts row-level
security's force for them, as the tables' owner, so that they see every tenant)."""


def _column_type(spec: str, dialect: Dialect) -> str:
    kind, _, rest = spec.partition(" ")
    rendered = getattr(dialect, kind) if kind in ("text", "blob", "real", "integer") else kind
    return f"{rendered} {rest}".strip()


def _create_table(table: Table, dialect: Dialect) -> str:
    columns = [f"{name} {_column_type(spec, dialect)}" for name, spec in table.columns]
    if table.key:
        columns.append(f"PRIMARY KEY ({', '.join(table.key)})")
    return f"CREATE TABLE IF NOT EXISTS {table.name} ({', '.join(columns)})"


def _create_index(name: str, table_name: str, columns_of: Tuple[str, ...]) -> str:
    return f"CREATE INDEX IF NOT EXISTS {name} ON {table_name} ({', '.join(columns_of)})"


def ddl(dialect: Dialect) -> Tuple[str, ...]:
    """The statements that create the latest schema where it is missing (each idempotent)."""
    statements = [_create_table(table, dialect) for table in TABLES]
    statements.extend(_create_index(*index) for index in INDEXES)
    return tuple(statements)


def upgrade(dialect: Dialect, version: int) -> Tuple[str, ...]:
    """The statements that bring a schema of version `version - 1` to `version` (`UPGRADES`)."""
    tables, columns, indexes = UPGRADES[version]
    by_name = {table.name: table for table in TABLES}
    statements = [_create_table(by_name[name], dialect) for name in tables]
    for table_name, column in columns:
        spec = dict(by_name[table_name].columns)[column]
        statements.append(f"ALTER TABLE {table_name} ADD COLUMN {column} {_column_type(spec, dialect)}")
    statements.extend(_create_index(*index) for index in INDEXES if index[0] in indexes)
    return tuple(statements)


class Queries:
    """Every statement the SQL stores run, in one dialect. `{p}` in the templates is the placeholder."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

        def q(template: str) -> str:
            return template.replace("{p}", dialect.placeholder)

        upd = dialect.for_update
        self.ddl = ddl(dialect)
        self.schema_version = "SELECT max(version) FROM refmem_schema"
        self.set_schema_version = q("INSERT INTO refmem_schema (version) VALUES ({p})")
        self.add_tenant = q(
            "INSERT INTO refmem_tenants (tenant, generation, floor) VALUES ({p}, 1, 1) ON CONFLICT DO NOTHING"
        )
        self.generation = q("SELECT generation, floor FROM refmem_tenants WHERE tenant = {p}")
        # a new generation, and the tenant's usage moved by what the mutation adds or frees (D-STORE-QUOTA)
        self.next_generation = q(
            "UPDATE refmem_tenants SET generation = generation + 1, files = files + {p},"
            " content_bytes = content_bytes + {p} WHERE tenant = {p}"
        )
        self.generation_usage = q("SELECT generation, files, content_bytes FROM refmem_tenants WHERE tenant = {p}")
        # Where an UPDATE may return rows (and a WITH hold one): a new generation and its journal lines in one
        # statement; the generation comes back (once per path: the paths are an array, unnested).
        self.note_returning: Optional[str] = (
            q(
                "WITH advanced AS (" + self.next_generation  # noqa: S608  # nosec B608
                + " RETURNING generation, files, content_bytes), journal AS ("
                " INSERT INTO refmem_changes (tenant, generation, path) SELECT {p}, generation, path"
                " FROM advanced, unnest(CAST({p} AS TEXT[])) AS changed(path))"
                " SELECT generation, files, content_bytes FROM advanced"
            )
            if dialect.returning
            else None
        )
        self.trim_floor = q("UPDATE refmem_tenants SET floor = {p} WHERE tenant = {p} AND floor < {p}")
        self.journal = q("INSERT INTO refmem_changes (tenant, generation, path) VALUES ({p}, {p}, {p})")
        self.trim_journal = q("DELETE FROM refmem_changes WHERE tenant = {p} AND generation <= {p}")
        self.changed = q(
            "SELECT DISTINCT path FROM refmem_changes WHERE tenant = {p} AND generation > {p} ORDER BY path LIMIT {p}"
        )
        self.kind = q("SELECT kind, size FROM refmem_nodes WHERE tenant = {p} AND path = {p}")
        self.read = q("SELECT kind, data, used FROM refmem_nodes WHERE tenant = {p} AND path = {p}")
        # The fragments joined below are the dialect's constants, never input: every value is a placeholder.
        edit_read = "SELECT kind, size, data, version FROM refmem_nodes WHERE tenant = {p} AND path = {p}"
        self.read_for_edit = q(edit_read + upd)
        # Where the engine has a tenant's lock: the same read taking the lock first, for a writing transaction whose
        # first statement it is (D-STORE-PG-WRITERS): the lock is an uncorrelated scalar subquery, so PostgreSQL
        # evaluates it once as a one-time filter above the scan, before any row is read or locked.
        self.read_for_edit_locking: Optional[str] = (
            q(edit_read + f" AND (SELECT {dialect.tenant_lock.format('{p}')}) IS NOT NULL" + upd)
            if dialect.tenant_lock
            else None
        )
        self.children = q(
            "SELECT name, kind, size FROM refmem_nodes WHERE tenant = {p} AND parent = {p} ORDER BY name"
        )
        length = dialect.byte_length.format("path")
        self.extent = q(
            f"SELECT max(depth), max({length}) FROM refmem_nodes"  # noqa: S608  # nosec B608
            " WHERE tenant = {p} AND path > {p} AND path < {p} AND depth <= {p}"
        )
        self.insert = q(
            "INSERT INTO refmem_nodes (tenant, path, parent, name, depth, kind, size, data, version, used)"
            " VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})"
        )
        self.rewrite = q(  # a change is a use (D-STORE-SQL-USES): `used` is the time of the write
            "UPDATE refmem_nodes SET data = {p}, size = {p}, version = {p}, used = {p}"
            " WHERE tenant = {p} AND path = {p}"
        )
        # an edit's write: only while the row still holds the version the edit read (else it changes no row)
        self.rewrite_if = q(self.rewrite + " AND version = {p}")
        self.delete_one = q("DELETE FROM refmem_nodes WHERE tenant = {p} AND path = {p}")
        self.delete_below = q("DELETE FROM refmem_nodes WHERE tenant = {p} AND path > {p} AND path < {p}")
        self.move_one = q(
            "UPDATE refmem_nodes SET path = {p}, parent = {p}, name = {p}, depth = {p}, used = {p}"
            " WHERE tenant = {p} AND path = {p}"
        )
        # substr is 1-based and counts characters in both engines: the old prefix is cut, the new one put first
        self.move_below = q(
            "UPDATE refmem_nodes SET path = {p} || substr(path, {p}), parent = {p} || substr(parent, {p}),"
            " depth = depth + {p} WHERE tenant = {p} AND path > {p} AND path < {p}"
        )
        self._history_queries(q, dialect)
        self.use = q("UPDATE refmem_nodes SET used = {p} WHERE tenant = {p} AND path = {p} AND kind = {p}")
        self.used = q("SELECT used FROM refmem_nodes WHERE tenant = {p} AND path = {p}")
        # prune (D-STORE-SQL-PRUNE): the files last used before a time; whether a folder holds anything
        self.unused_files = q(
            "SELECT path FROM refmem_nodes WHERE tenant = {p} AND kind = {p} AND used < {p} ORDER BY path"
        )
        self.file_count = q("SELECT count(*) FROM refmem_nodes WHERE tenant = {p} AND kind = {p}")
        self.has_child = q("SELECT 1 FROM refmem_nodes WHERE tenant = {p} AND parent = {p} LIMIT 1")
        # `refmem db tenants` (D-STORE-DB-TENANTS): every tenant, with its files, their bytes, its versions and what
        # they count; an operator's statement over the whole database, linear in its rows (each subquery an index
        # range of one tenant)
        self.tenants = q(
            "SELECT t.tenant,"
            " (SELECT count(*) FROM refmem_nodes n WHERE n.tenant = t.tenant AND n.kind = {p}),"
            " (SELECT coalesce(sum(n.size), 0) FROM refmem_nodes n WHERE n.tenant = t.tenant AND n.kind = {p}),"
            " (SELECT count(*) FROM refmem_versions v WHERE v.tenant = t.tenant), t.version_bytes"
            " FROM refmem_tenants t ORDER BY t.tenant"
        )


    def _history_queries(self, q: Callable[[str], str], dialect: Dialect) -> None:
        """History's statements (D-STORE-HISTORY): every one names its tenant and is served by an index."""
        digest = dialect.sha256_hex.format("data")  # the dialect's constant, never input: values are placeholders
        keep = (
            "INSERT INTO refmem_versions (tenant, path, number, size, sha256, kept_at, actor, command, data)"  # noqa: S608  # nosec B608
            f" SELECT tenant, path, {{p}}, size, {digest}, {{p}}, {{p}}, {{p}}, data"
            " FROM refmem_nodes WHERE tenant = {p} AND kind = {p}"
        )
        self.keep_one = q(keep + " AND path = {p}")
        # Where an UPDATE may return rows: one file's version kept, counted in the tenant's total, in one statement
        # that returns the new total, the versions kept (0 or 1) and the path's versions before it (one snapshot:
        # the count does not see the row the WITH adds), so that retention needs no statement to decide.
        self.keep_one_counted: Optional[str] = (
            q(
                "WITH kept AS (" + self.keep_one + f" RETURNING size + {VERSION_ROW_BYTES} AS size)"  # noqa: S608  # nosec B608
                " UPDATE refmem_tenants SET version_bytes = version_bytes + (SELECT coalesce(sum(size), 0) FROM kept)"
                " WHERE tenant = {p} RETURNING version_bytes, (SELECT count(*) FROM kept),"
                " (SELECT count(*) FROM refmem_versions WHERE tenant = {p} AND path = {p})"
            )
            if dialect.returning
            else None
        )
        self.keep_below = q(keep + " AND path > {p} AND path < {p}")
        self.count_kept = q(
            "UPDATE refmem_tenants SET version_bytes = version_bytes + (SELECT coalesce(sum(size), 0)"  # noqa: S608  # nosec B608
            f" + {VERSION_ROW_BYTES} * count(*) FROM refmem_versions WHERE tenant = {{p}} AND number = {{p}})"
            " WHERE tenant = {p}"
        )
        self.count_kept_returning: Optional[str] = (  # the tenant's new total in the same statement, where it can
            self.count_kept + " RETURNING version_bytes" if dialect.returning else None
        )
        self.crowded = q(  # the paths a change kept versions of, with more versions than {p}: one count per path
            "SELECT path, kept FROM (SELECT k.path AS path, (SELECT count(*) FROM refmem_versions v"
            " WHERE v.tenant = k.tenant AND v.path = k.path) AS kept FROM refmem_versions k"
            " WHERE k.tenant = {p} AND k.number = {p}) AS counted WHERE kept > {p}"
        )
        self.oldest_of_path = q(
            f"SELECT number, size + {VERSION_ROW_BYTES} FROM refmem_versions"  # noqa: S608  # nosec B608
            " WHERE tenant = {p} AND path = {p} ORDER BY number LIMIT {p}"
        )
        self.drop_of_path = q("DELETE FROM refmem_versions WHERE tenant = {p} AND path = {p} AND number <= {p}")
        # Where an UPDATE may return rows: a path's {p} oldest versions dropped and uncounted in one statement that
        # returns the bytes freed.
        self.drop_oldest_of_path: Optional[str] = (
            q(
                "WITH dropped AS (DELETE FROM refmem_versions WHERE tenant = {p} AND path = {p} AND number IN"  # noqa: S608  # nosec B608
                " (SELECT number FROM refmem_versions WHERE tenant = {p} AND path = {p} ORDER BY number LIMIT {p})"
                f" RETURNING size + {VERSION_ROW_BYTES} AS size),"
                " freed AS (SELECT coalesce(sum(size), 0) AS size FROM dropped)"
                " UPDATE refmem_tenants SET version_bytes = version_bytes - (SELECT size FROM freed)"
                " WHERE tenant = {p} RETURNING (SELECT size FROM freed)"
            )
            if dialect.returning
            else None
        )
        self.version_bytes = q("SELECT version_bytes FROM refmem_tenants WHERE tenant = {p}")
        self.oldest = q(
            f"SELECT number, size + {VERSION_ROW_BYTES} FROM refmem_versions"  # noqa: S608  # nosec B608
            " WHERE tenant = {p} AND number > {p} ORDER BY number LIMIT {p}"
        )
        self.bytes_up_to = q(
            f"SELECT coalesce(sum(size), 0) + {VERSION_ROW_BYTES} * count(*) FROM refmem_versions"  # noqa: S608  # nosec B608
            " WHERE tenant = {p} AND number <= {p}"
        )
        # a folder's files, and their bytes: what its delete would keep, counted before anything is copied
        self.subtree_files = q(
            "SELECT count(*), coalesce(sum(size), 0) FROM refmem_nodes"
            " WHERE tenant = {p} AND kind = {p} AND path > {p} AND path < {p}"
        )
        self.drop_up_to = q("DELETE FROM refmem_versions WHERE tenant = {p} AND number <= {p}")
        self.uncount = q("UPDATE refmem_tenants SET version_bytes = version_bytes - {p} WHERE tenant = {p}")
        # Where an UPDATE may return rows: an edit's whole write in one statement (one snapshot, so the version
        # kept reads the content before the write): a new generation and its journal line, the file's content kept
        # as a version of that number and counted, the file rewritten, each only while the file's row still holds
        # the version the edit read (its size, read with it, is what the tenant's count grows by: a row changed since
        # writes nothing and the edit is undone, so no statement reads it again). It returns the generation, the
        # tenant's version bytes, the versions kept (0 or 1), the path's versions before it, the rows written
        # (0: the edit is refused `changed`), and the tenant's files and content bytes after it (D-STORE-QUOTA).
        kept_digest = dialect.sha256_hex.format("n.data")
        self.edit_in_one: Optional[str] = (
            (
                "WITH advanced AS (UPDATE refmem_tenants SET generation = generation + 1,"  # noqa: S608  # nosec B608
                " version_bytes = version_bytes + %(counted)s, content_bytes = content_bytes + %(grown)s"
                " WHERE tenant = %(tenant)s RETURNING generation, version_bytes, files, content_bytes),"
                " journal AS (INSERT INTO refmem_changes (tenant, generation, path)"
                " SELECT %(tenant)s, generation, %(canonical)s FROM advanced),"
                " kept AS (INSERT INTO refmem_versions"
                " (tenant, path, number, size, sha256, kept_at, actor, command, data)"
                f" SELECT n.tenant, n.path, a.generation, n.size, {kept_digest}, %(now)s, %(actor)s, %(command)s,"
                " n.data FROM refmem_nodes n, advanced a WHERE n.tenant = %(tenant)s AND n.path = %(key)s"
                " AND n.kind = %(kind)s AND n.version = %(version)s RETURNING size),"
                " written AS (UPDATE refmem_nodes SET data = %(data)s, size = %(size)s, used = %(now)s,"
                " version = (SELECT generation FROM advanced)"
                " WHERE tenant = %(tenant)s AND path = %(key)s AND version = %(version)s RETURNING path)"
                " SELECT generation, version_bytes, (SELECT count(*) FROM kept),"
                " (SELECT count(*) FROM refmem_versions WHERE tenant = %(tenant)s AND path = %(key)s),"
                " (SELECT count(*) FROM written), files, content_bytes FROM advanced"
            )
            if dialect.returning and dialect.placeholder == "%s"  # named: each value bound once (psycopg)
            else None
        )
        self.history = q(
            "SELECT number, size, sha256, kept_at, actor, command FROM refmem_versions"
            " WHERE tenant = {p} AND path = {p} ORDER BY number DESC"
        )
        self.version_data = q("SELECT data FROM refmem_versions WHERE tenant = {p} AND path = {p} AND number = {p}")
        # A tenant erased (D-STORE-SQL-ERASE): its rows of every table but its own, whose generation moves on so
        # that every generation before answers "rescan"; its version bytes are none.
        self.erase_rows = tuple(
            q(f"DELETE FROM {table} WHERE tenant = {{p}}")  # noqa: S608  # nosec B608  # table names of ours
            for table in ("refmem_nodes", "refmem_versions", "refmem_changes")
        )
        self.erase_mark = q(
            "UPDATE refmem_tenants SET generation = generation + 1, floor = generation + 1, version_bytes = 0,"
            " files = 0, content_bytes = 0 WHERE tenant = {p}"
        )


def subtree(path: str) -> Tuple[str, str]:
    """The bounds of the key range strictly below the folder `path` (never ""): every path that starts with
    `path + "/"` sorts between them, in code point order, and nothing else does."""
    return path + "/", path + "0"
