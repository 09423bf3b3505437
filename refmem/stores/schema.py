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
"""

from __future__ import annotations

from typing import NamedTuple, Tuple

SCHEMA_VERSION = 1
"""The schema this refmem writes and reads. A database of a later version is refused (the store's open)."""

DEFAULT_TENANT = ""
"""The tenant column of the default namespace: no accepted tenant name is empty (storage.tenant_name)."""


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
)
"""The PostgreSQL store's dialect (`refmem.stores.postgres`): the same schema and statements, rendered for psycopg.
A writer's transaction is serialised per tenant by the lock the store takes on its tenant's row when it begins
(D-STORE-PG-WRITERS); an edit's read also locks the file's row."""


class Table(NamedTuple):
    name: str
    columns: Tuple[Tuple[str, str], ...]  # (name, type): a type is a Dialect field name or literal SQL
    key: Tuple[str, ...]


TABLES: Tuple[Table, ...] = (
    Table("refmem_schema", (("version", "integer NOT NULL"),), ()),
    Table(  # one row per tenant: its change journal's generation, and the oldest it can answer from
        "refmem_tenants",
        (("tenant", "text NOT NULL"), ("generation", "integer NOT NULL"), ("floor", "integer NOT NULL")),
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
)

INDEXES: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = (
    ("refmem_nodes_by_parent", "refmem_nodes", ("tenant", "parent", "name")),
    ("refmem_changes_by_generation", "refmem_changes", ("tenant", "generation")),
)


def _column_type(spec: str, dialect: Dialect) -> str:
    kind, _, rest = spec.partition(" ")
    rendered = getattr(dialect, kind) if kind in ("text", "blob", "real", "integer") else kind
    return f"{rendered} {rest}".strip()


def ddl(dialect: Dialect) -> Tuple[str, ...]:
    """The statements that create the schema where it is missing (each idempotent)."""
    statements = []
    for table in TABLES:
        columns = [f"{name} {_column_type(spec, dialect)}" for name, spec in table.columns]
        if table.key:
            columns.append(f"PRIMARY KEY ({', '.join(table.key)})")
        statements.append(f"CREATE TABLE IF NOT EXISTS {table.name} ({', '.join(columns)})")
    for name, table_name, columns_of in INDEXES:
        statements.append(f"CREATE INDEX IF NOT EXISTS {name} ON {table_name} ({', '.join(columns_of)})")
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
        self.next_generation = q("UPDATE refmem_tenants SET generation = generation + 1 WHERE tenant = {p}")
        self.trim_floor = q("UPDATE refmem_tenants SET floor = {p} WHERE tenant = {p} AND floor < {p}")
        self.journal = q("INSERT INTO refmem_changes (tenant, generation, path) VALUES ({p}, {p}, {p})")
        self.trim_journal = q("DELETE FROM refmem_changes WHERE tenant = {p} AND generation <= {p}")
        self.changed = q(
            "SELECT DISTINCT path FROM refmem_changes WHERE tenant = {p} AND generation > {p} ORDER BY path LIMIT {p}"
        )
        self.kind = q("SELECT kind, size FROM refmem_nodes WHERE tenant = {p} AND path = {p}")
        self.read = q("SELECT kind, data, used FROM refmem_nodes WHERE tenant = {p} AND path = {p}")
        # The fragments joined below are the dialect's constants, never input: every value is a placeholder.
        self.read_for_edit = q(
            "SELECT kind, size, data, version FROM refmem_nodes WHERE tenant = {p} AND path = {p}" + upd  # noqa: S608  # nosec B608
        )
        self.version = q("SELECT version FROM refmem_nodes WHERE tenant = {p} AND path = {p}" + upd)  # noqa: S608  # nosec B608
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
        self.rewrite = q(
            "UPDATE refmem_nodes SET data = {p}, size = {p}, version = {p} WHERE tenant = {p} AND path = {p}"
        )
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
        self.use = q("UPDATE refmem_nodes SET used = {p} WHERE tenant = {p} AND path = {p} AND kind = {p}")
        self.used = q("SELECT used FROM refmem_nodes WHERE tenant = {p} AND path = {p}")


def subtree(path: str) -> Tuple[str, str]:
    """The bounds of the key range strictly below the folder `path` (never ""): every path that starts with
    `path + "/"` sorts between them, in code point order, and nothing else does."""
    return path + "/", path + "0"
