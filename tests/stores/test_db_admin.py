"""`refmem db check` and `refmem db tenants` over a real SQLite file and the session's throwaway PostgreSQL cluster
(D-STORE-DB-CHECK, D-STORE-DB-TENANTS): the exit status is the answer, one line per problem, and no line names the
location, the host, the user or a password."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Callable, List
from urllib.parse import quote

from postgres_support import APP_ROLE, DATABASE, Cluster
from sql_store_support import refmem_cli, run

from refmem import MemoryHandler
from refmem.stores.schema import SCHEMA_VERSION, VERSION_ROW_BYTES
from refmem.stores.sqlite import SqliteStore


def db(*arguments: str) -> subprocess.CompletedProcess:
    return refmem_cli("db", *arguments, environment=dict(os.environ))


def _said(done: subprocess.CompletedProcess) -> str:
    return done.stdout + done.stderr


def _two_tenants(open_store: Callable[[str], Any]) -> None:
    """alice with two files, bob with one edited once; every store opened for it is closed again."""
    opened: List[Any] = []

    def store_of(tenant: str) -> Any:
        opened.append(open_store(tenant))
        return opened[-1]

    try:
        for tenant, files in (("alice", ("a.md", "b/c.md")), ("bob", ("z.md",))):
            handler = MemoryHandler(store_of(tenant))
            for name in files:
                run(handler, command="create", path=f"/memories/{name}", file_text="12345\n")
        bob = MemoryHandler(store_of("bob"))
        run(bob, command="str_replace", path="/memories/z.md", old_str="12345", new_str="1")
    finally:
        for store in opened:
            store.close()


# --- SQLite -----------------------------------------------------------------------------------------------------


def test_db_check_of_a_healthy_sqlite_store_says_so_and_exits_0(tmp_path: Path) -> None:
    location = f"sqlite:///{tmp_path / 'memory.db'}"
    assert db("init", "--store", location).returncode == 0
    done = db("check", "--store", location)
    assert (done.returncode, done.stdout) == (0, f"healthy: sqlite store, schema version {SCHEMA_VERSION}\n")


def test_db_check_names_each_problem_of_an_sqlite_store_on_a_line(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    location = f"sqlite:///{database}"
    missing = db("check", "--store", location)
    assert (missing.returncode, missing.stdout) == (1, "unreachable: there is no SQLite database there\n")
    assert not database.exists()  # a check makes nothing
    assert db("init", "--store", location).returncode == 0
    os.chmod(database, 0o644)
    opened = db("check", "--store", location)
    assert opened.returncode == 1
    assert opened.stdout == "permissions: the database's file is open to other users (mode 644): chmod 600 it\n"
    os.chmod(database, 0o600)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    garbage.chmod(0o600)
    damaged = db("check", "--store", f"sqlite:///{garbage}")
    assert damaged.returncode == 1 and damaged.stdout.startswith("unreachable: the memory database is not a database")
    for done in (missing, opened, damaged):
        assert str(tmp_path) not in _said(done) and "Traceback" not in _said(done)


def test_db_tenants_lists_every_sqlite_tenant_with_its_sizes(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    _two_tenants(lambda tenant: SqliteStore(database, tenant=tenant))
    done = db("tenants", "--store", f"sqlite:///{database}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "tenant  files  bytes  versions  version_bytes",
        "alice  2  12  0  0",
        "bob  1  2  1  " + str(6 + VERSION_ROW_BYTES),
    ]


# --- PostgreSQL -------------------------------------------------------------------------------------------------


def _uri(postgres: Cluster, schema: str, user: str = APP_ROLE) -> str:
    socket = quote(str(postgres.socket), safe="")
    return f"postgresql://{user}@/{DATABASE}?host={socket}&options={quote(f'-c search_path={schema}', safe='')}"


def test_db_check_of_a_postgres_store_reads_rls_and_the_roles_privileges(postgres: Cluster, tmp_path: Path) -> None:
    import psycopg

    schema = postgres.location_dsn(tmp_path).split("search_path=")[1].rstrip("'")
    location = _uri(postgres, schema)
    nothing = db("check", "--store", location)
    assert (nothing.returncode, nothing.stdout) == (1, "schema: none yet: run `refmem db init`\n")
    assert db("init", "--store", location).returncode == 0
    healthy = db("check", "--store", location)
    assert (healthy.returncode, healthy.stdout) == (0, f"healthy: postgresql store, schema version {SCHEMA_VERSION}\n")
    with psycopg.connect(location, autocommit=True) as owner:  # the application's role owns them here
        owner.execute("ALTER TABLE refmem_versions NO FORCE ROW LEVEL SECURITY")
        owner.execute("DROP POLICY refmem_tenant ON refmem_changes")
    broken = db("check", "--store", location)
    assert broken.returncode == 1
    assert broken.stdout.splitlines() == [
        "row-level security: the policy refmem_tenant is missing on refmem_changes",
        "row-level security: not forced on refmem_versions",
    ]
    superuser = db("check", "--store", _uri(postgres, schema, user="postgres"))
    assert superuser.returncode == 1 and "role of the store: row-level security does not hold it" in superuser.stdout
    for done in (nothing, healthy, broken, superuser):
        said = _said(done)
        assert str(postgres.socket) not in said and APP_ROLE not in said and "Traceback" not in said


def test_db_check_of_a_split_deployment_checks_the_named_role(postgres: Cluster) -> None:
    import psycopg

    with postgres.admin() as admin:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'refmem_owner'").fetchone() is None:
            admin.execute("CREATE ROLE refmem_owner LOGIN NOSUPERUSER NOBYPASSRLS")
        admin.execute("CREATE SCHEMA IF NOT EXISTS s_check_split AUTHORIZATION refmem_owner")
    owner = _uri(postgres, "s_check_split", user="refmem_owner")
    assert db("init", "--store", owner, "--app-role", APP_ROLE).returncode == 0
    healthy = db("check", "--store", owner, "--app-role", APP_ROLE)
    assert (healthy.returncode, healthy.stdout) == (
        0, f"healthy: postgresql store, schema version {SCHEMA_VERSION}, role {APP_ROLE} checked\n"
    )
    with psycopg.connect(owner, autocommit=True) as connection:
        connection.execute(f"GRANT UPDATE, TRUNCATE ON refmem_schema TO {APP_ROLE}")
        connection.execute(f"REVOKE DELETE ON refmem_nodes FROM {APP_ROLE}")
    wide = db("check", "--store", owner, "--app-role", APP_ROLE)
    assert wide.returncode == 1
    assert sorted(wide.stdout.splitlines()) == sorted([
        f"role {APP_ROLE}: may not DELETE on refmem_nodes, which refmem needs",
        f"role {APP_ROLE}: may UPDATE on refmem_schema, more than refmem grants (`db migrate --app-role` narrows it)",
        f"role {APP_ROLE}: may TRUNCATE on refmem_schema, more than refmem grants (`db migrate --app-role` narrows it)",
    ])
    owns = db("check", "--store", owner, "--app-role", "refmem_owner")
    assert owns.returncode == 1 and "role refmem_owner: owns refmem_nodes" in owns.stdout
    nobody = db("check", "--store", owner, "--app-role", "no_such_role")
    assert (nobody.returncode, nobody.stdout) == (1, "role no_such_role: there is no such role\n")
    gone = f"postgresql://{APP_ROLE}:hunter2@/nowhere?host={quote(str(postgres.socket), safe='')}"
    unreachable = db("check", "--store", gone)
    assert unreachable.returncode == 1 and unreachable.stdout.startswith("unreachable: ")
    assert "hunter2" not in _said(unreachable) and "nowhere" not in _said(unreachable)


def test_db_tenants_of_a_postgres_store_needs_a_role_rls_does_not_hold(postgres: Cluster, tmp_path: Path) -> None:
    from refmem.stores.postgres import PostgresStore

    dsn = postgres.location_dsn(tmp_path)
    schema = dsn.split("search_path=")[1].rstrip("'")
    _two_tenants(lambda tenant: PostgresStore(dsn, tenant=tenant))
    refused = db("tenants", "--store", _uri(postgres, schema))
    assert refused.returncode == 2 and "needs a role that row-level security does not hold" in refused.stderr
    done = db("tenants", "--store", _uri(postgres, schema, user="postgres"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "tenant  files  bytes  versions  version_bytes",
        "alice  2  12  0  0",
        "bob  1  2  1  " + str(6 + VERSION_ROW_BYTES),
    ]
