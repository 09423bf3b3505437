"""A throwaway PostgreSQL cluster for the tests: a real server, never a mock.

`cluster()` starts one the first time a test asks (then the same one for the whole session; conftest stops it
when the session ends): PostgreSQL 15's `initdb` and `pg_ctl` in a temporary folder, listening on a Unix socket
in that folder only (`listen_addresses=''`: no port, no clash), as the `postgres` system user when the tests run
as root (initdb refuses root). It holds a superuser (`postgres`, for the tests' own checks and for cutting
connections) and the application's role `refmem_app` (neither superuser nor BYPASSRLS: row-level security
applies to it) owning the database `refmem`.

Where the server's binaries or psycopg are missing, or the cluster does not start, `cluster()` skips the test
saying exactly why; with REFMEM_REQUIRE_POSTGRES=1 (CI sets it) it fails instead.

Run as a script, it starts a cluster, runs a command with the application's DSN in REFMEM_CONFORMANCE_POSTGRES,
and stops the cluster (CI's conformance run over the PostgreSQL store):

    python tests/postgres_support.py python -m refmem_conformance --target refmem+postgres --profile hardening

`location_dsn(where)` is a DSN whose search path is a schema of its own for the folder `where`: two stores opened
over one folder share their memories (as two processes would), stores over different folders share nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

BIN = Path(os.environ.get("REFMEM_PG_BIN", "/usr/lib/postgresql/15/bin"))
REQUIRE = "REFMEM_REQUIRE_POSTGRES"
APP_ROLE = "refmem_app"
DATABASE = "refmem"


def missing() -> Optional[str]:
    """Why no cluster can be started here (None when it can be tried)."""
    if not (BIN / "initdb").is_file() or not (BIN / "pg_ctl").is_file():
        return f"PostgreSQL 15's initdb and pg_ctl are not in {BIN} (apt-get install postgresql-15)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg 3 is not installed (pip install 'refmem[postgres]')"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "the tests run as root and runuser is missing: initdb refuses to run as root"
    return None


class Cluster:
    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="refmem-pg-"))
        self.data = self.base / "data"
        self.socket = self.base  # the socket lives beside the data folder
        self.log = self.base / "server.log"
        self._as_postgres: List[str] = []
        self._schemas: set = set()
        if os.geteuid() == 0:
            self._as_postgres = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.base, "postgres", "postgres")
            os.chmod(self.base, 0o755)  # noqa: S103  # the socket must be reachable by the tests (root)

    def _run(self, *command: str) -> None:
        done = subprocess.run(  # noqa: S603  # nosec B603  # fixed binaries, arguments of our own
            self._as_postgres + list(command), capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise RuntimeError(f"{Path(command[0]).name} failed: " + " | ".join(tail))

    def start(self) -> None:
        self._run(str(BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        self._start_server()
        with self.admin("postgres") as connection:
            connection.execute(f"CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS")
            connection.execute(f"CREATE DATABASE {DATABASE} OWNER {APP_ROLE}")

    def _start_server(self) -> None:
        options = f"-k {self.socket} -c listen_addresses='' -c fsync=off -c max_connections=100"
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def restart(self, down_seconds: float = 0.0) -> None:
        """Stop the server as an operator's restart does (`pg_ctl stop -m fast`: every session's transaction rolled
        back, every connection closed), leave it down `down_seconds`, and start it again on the same data and socket;
        the cluster then serves later tests as before."""
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        time.sleep(down_seconds)
        self._start_server()

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def dsn(self, user: str = APP_ROLE, options: str = "", database: str = DATABASE) -> str:
        extra = f" options='{options}'" if options else ""
        return f"host={self.socket} dbname={database} user={user}{extra}"

    def admin(self, database: str = DATABASE) -> Any:
        """A superuser's connection (autocommit)."""
        import psycopg

        return psycopg.connect(self.dsn(user="postgres", database=database), autocommit=True)

    def location_dsn(self, where: object) -> str:
        """A DSN over a schema of its own for `where` (made on first use, owned by the application's role)."""
        schema = "s_" + hashlib.sha256(str(where).encode()).hexdigest()[:16]
        if schema not in self._schemas:
            with self.admin() as connection:
                connection.execute(f"CREATE SCHEMA IF NOT EXISTS {schema} AUTHORIZATION {APP_ROLE}")
            self._schemas.add(schema)
        return self.dsn(options=f"-c search_path={schema}")

    def tablespace_dsn(self, where: Path, name: str) -> str:
        """A DSN over a new schema `name` whose tables, indexes and TOAST go to a new tablespace `name` at `where`
        (an empty folder made here, owned by the server's user as CREATE TABLESPACE requires; its parents must let
        that user through): a store's data on a disk of the test's choosing, while the cluster's catalogs and
        write-ahead log stay where they are. `drop_tablespace(name)` removes both."""
        where.mkdir(mode=0o700)
        if self._as_postgres:
            shutil.chown(where, "postgres", "postgres")
        location = str(where).replace("'", "''")
        with self.admin() as connection:
            connection.execute(f"CREATE TABLESPACE {name} LOCATION '{location}'")
            connection.execute(f"GRANT CREATE ON TABLESPACE {name} TO {APP_ROLE}")
            connection.execute(f"CREATE SCHEMA {name} AUTHORIZATION {APP_ROLE}")
        return self.dsn(options=f"-c search_path={name} -c default_tablespace={name}")

    def drop_tablespace(self, name: str) -> None:
        with self.admin() as connection:
            connection.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
            connection.execute(f"DROP TABLESPACE IF EXISTS {name}")


TOKENS_EACH = 8
SHARED = [f"/memories/shared/f{i}.md" for i in range(4)]
"""The many-writers tests' shared files (tests/stores/test_postgres_store.py, test_postgres_pool.py)."""


def add_tokens(handler: Any, number: int) -> None:
    """Writer `number`'s TOKENS_EACH unique tokens, each added once through `handler` by a str_replace, an insert,
    or a create then a rename, and a rename of a shared file and back; a command refused `busy` or because another
    writer's rename had the file away is sent again (a result saying anything else fails)."""

    def until_done(command: Dict[str, Any]) -> None:
        for _ in range(2000):
            result = handler.execute(command)
            if not result.is_error:
                return
            if "does not exist" not in result.output and "busy" not in result.output:
                raise AssertionError(result.output)
        raise AssertionError(f"never done: {command}")

    for step in range(TOKENS_EACH):
        token = f"tok-{number:02d}-{step:02d}"
        shared = SHARED[(number + step) % len(SHARED)]
        kind = step % 4
        if kind == 0:
            until_done({"command": "str_replace", "path": shared, "old_str": "@@\n", "new_str": f"{token}\n@@\n"})
        elif kind == 1:
            until_done({"command": "insert", "path": shared, "insert_line": 1, "insert_text": f"{token}\n"})
        elif kind == 2:
            until_done({"command": "create", "path": f"/memories/new/{token}.md", "file_text": f"{token}\n"})
        else:
            until_done({"command": "create", "path": f"/memories/inbox/{token}.md", "file_text": f"{token}\n"})
            until_done({"command": "rename", "old_path": f"/memories/inbox/{token}.md",
                        "new_path": f"/memories/done/{token}.md"})
            until_done({"command": "rename", "old_path": shared, "new_path": shared + ".away"})
            until_done({"command": "rename", "old_path": shared + ".away", "new_path": shared})


_CLUSTER: Optional[Cluster] = None
_FAILED: Optional[str] = None


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"PostgreSQL is required here ({REQUIRE}=1) but: {reason}")
    pytest.skip(f"no PostgreSQL server for this test: {reason}", allow_module_level=True)


def import_psycopg() -> Any:
    """psycopg, for a test module's top: the module skips saying why where it is missing (fails where required)."""
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg 3 is not installed (pip install 'refmem[postgres]')")
        raise
    return psycopg


def cluster() -> Cluster:
    """The session's cluster, started on first use; skips (or fails, under REFMEM_REQUIRE_POSTGRES=1) when it
    cannot be."""
    global _CLUSTER, _FAILED
    if _CLUSTER is not None:
        return _CLUSTER
    reason = _FAILED or missing()
    if reason is None:
        started = Cluster()
        try:
            started.start()
            _CLUSTER = started
            return started
        except Exception as error:  # noqa: BLE001
            started.stop()
            _FAILED = reason = f"the throwaway cluster did not start: {error}"
    _unavailable(reason)
    raise AssertionError("not reached")


def stop() -> None:
    """Stop the session's cluster, if one was started (conftest, when the session ends)."""
    global _CLUSTER
    close_pools()
    if _CLUSTER is not None:
        started, _CLUSTER = _CLUSTER, None
        started.stop()


def open_store(where: Path, tenant: Optional[str] = None) -> Any:
    from refmem.stores.postgres import PostgresStore

    return PostgresStore(cluster().location_dsn(where), tenant=tenant)


_POOLS: Dict[Tuple[int, str], Any] = {}
POOLS_KEPT = 6
"""Pools kept open for `open_pooled_store` (the oldest closed past this): each keeps a connection open."""


def open_pooled_store(where: Path, tenant: Optional[str] = None) -> Any:
    """A pooled store (refmem.stores.pgpool) over `where`'s schema: one pool per location and process, so two
    stores opened over one location share a pool, as the requests of one server do."""
    from refmem.stores.pgpool import PostgresPool

    dsn = cluster().location_dsn(where)
    key = (os.getpid(), dsn)
    pool = _POOLS.get(key)
    if pool is None:
        mine = [other for other in _POOLS if other[0] == key[0]]
        while len(mine) >= POOLS_KEPT:
            _POOLS.pop(mine.pop(0)).close()
        pool = _POOLS[key] = PostgresPool(dsn, min_size=1, max_size=4)
    return pool.store(tenant=tenant)


def close_pools() -> None:
    """Close this process's pools (`open_pooled_store`)."""
    for key in [key for key in _POOLS if key[0] == os.getpid()]:
        _POOLS.pop(key).close()


def main(command: List[str]) -> int:
    reason = missing()
    if reason is not None:
        print(f"no PostgreSQL cluster: {reason}", file=sys.stderr)
        return 2
    started = Cluster()
    try:
        started.start()
        environment = dict(os.environ, REFMEM_CONFORMANCE_POSTGRES=started.dsn())
        return subprocess.run(command, env=environment, check=False).returncode  # noqa: S603  # nosec B603
    finally:
        started.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
