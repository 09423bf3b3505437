"""`refmem db init` / `refmem db migrate` and `refmem exec --store postgresql://...` against the session's throwaway
cluster: the schema made once and found again, tenants apart, and no line the commands print names the location
(host, socket folder, user or password)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict
from urllib.parse import quote

import pytest
from postgres_support import APP_ROLE, DATABASE, Cluster

from refmem.stores.schema import SCHEMA_VERSION


def run(*argv: str, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603
        [sys.executable, "-m", "refmem", *argv], capture_output=True, text=True, timeout=60,
        env=dict(os.environ, **env), check=False,
    )


def uri(postgres: Cluster, schema_for: str, password: str = "") -> str:
    """A postgresql:// URI over the cluster's socket, with the search path of a schema of its own."""
    options = postgres.location_dsn(schema_for).split("options='")[1].rstrip("'")
    secret = f":{password}" if password else ""
    return (f"postgresql://{APP_ROLE}{secret}@/{DATABASE}?host={quote(str(postgres.socket), safe='')}"
            f"&options={quote(options, safe='')}")


def test_db_init_then_exec_per_tenant_then_migrate(postgres: Cluster) -> None:
    location = uri(postgres, "cli")
    env = {"REFMEM_STORE": location}
    refused = run("exec", "--tenant", "alice", '{"command": "view", "path": "/memories"}', env=env)
    assert refused.returncode == 2 and "refmem db init" in refused.stderr  # no schema yet: not made by accident
    made = run("db", "init", env=env)
    assert (made.returncode, made.stdout) == (0, f"schema made: version {SCHEMA_VERSION}\n")
    create = '{"command": "create", "path": "/memories/n.md", "file_text": "ALICE\\n"}'
    assert run("exec", "--tenant", "alice", create, env=env).returncode == 0
    view = '{"command": "view", "path": "/memories/n.md"}'
    assert "ALICE" in run("exec", "--tenant", "alice", view, env=env).stdout
    other = run("exec", "--tenant", "bob", view, env=env)
    assert other.returncode == 1 and "ALICE" not in other.stdout
    again = run("db", "migrate", "--store", location, env={})
    assert (again.returncode, again.stdout) == (0, f"schema already at version {SCHEMA_VERSION}: nothing to do\n")
    for done in (refused, made, other, again):
        said = done.stdout + done.stderr
        assert str(postgres.socket) not in said and APP_ROLE not in said


def test_an_unreachable_database_is_refused_naming_nothing_of_it(postgres: Cluster) -> None:
    location = f"postgresql://{APP_ROLE}:hunter2@/nowhere?host={quote(str(postgres.socket), safe='')}"
    for argv in (("db", "init", "--store", location), ("exec", "--store", location, '{"command": "view"}')):
        done = run(*argv, env={})
        said = done.stdout + done.stderr
        assert done.returncode == 2 and "cannot be used: no server answered, or it refused" in said, said
        assert "hunter2" not in said and str(postgres.socket) not in said and "nowhere" not in said


def test_the_application_role_need_not_own_the_tables(postgres: Cluster) -> None:
    """`db init --app-role`: the tables' owner makes them and grants the application's role their rows only; that
    role then works as before but cannot turn row-level security off."""
    import psycopg

    with postgres.admin() as admin:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'refmem_owner'").fetchone() is None:
            admin.execute("CREATE ROLE refmem_owner LOGIN NOSUPERUSER NOBYPASSRLS")
        admin.execute("CREATE SCHEMA IF NOT EXISTS s_split AUTHORIZATION refmem_owner")
    socket = quote(str(postgres.socket), safe="")
    search = quote("-c search_path=s_split", safe="")
    owner = f"postgresql://refmem_owner@/{DATABASE}?host={socket}&options={search}"
    app = f"postgresql://{APP_ROLE}@/{DATABASE}?host={socket}&options={search}"
    made = run("db", "init", "--store", owner, "--app-role", APP_ROLE, env={})
    assert (made.returncode, made.stdout) == (0, f"schema made: version {SCHEMA_VERSION}\n"), made.stderr
    create = '{"command": "create", "path": "/memories/n.md", "file_text": "ALICE\\n"}'
    assert run("exec", "--store", app, "--tenant", "alice", create, env={}).returncode == 0
    assert "ALICE" in run("exec", "--store", app, "--tenant", "alice", '{"command": "view", "path": "/memories/n.md"}',
                          env={}).stdout
    with psycopg.connect(app, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # must be owner of table refmem_nodes
            connection.execute("ALTER TABLE refmem_nodes NO FORCE ROW LEVEL SECURITY")
        assert connection.execute("SELECT count(*) FROM refmem_nodes").fetchone() == (0,)  # no tenant set: no rows
