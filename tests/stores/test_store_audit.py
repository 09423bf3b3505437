"""The outside audit of the database stores, each point reproduced against a real SQLite file and the session's
throwaway PostgreSQL cluster (never a mock): a private database file, a frozen client cut off, a version number no
engine holds, a database that is not UTF-8, a view that never waits for a writer, an application role that cannot
change the schema's version, and history bounded by its budget whatever the files weigh (D-STORE-SQL-MODE,
D-STORE-PG-TIMEOUTS, D-STORE-HISTORY-RESTORE, D-STORE-PG-UTF8, D-STORE-SQL-USES, D-STORE-PG-ROLE,
D-STORE-HISTORY-RETENTION)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Iterator, List
from urllib.parse import quote

import pytest
from postgres_support import APP_ROLE, DATABASE, Cluster
from sql_store_support import Opener, refmem_cli, run, vp

from refmem import MemoryHandler
from refmem.problems import NoVersion
from refmem.stores import StoreError
from refmem.stores.core import SqlStore
from refmem.stores.schema import VERSION_ROW_BYTES
from refmem.stores.sqlite import SqliteStore


def _count(store: SqlStore, table: str) -> int:
    """The tenant's rows of one of refmem's tables (the test's own statement, through the store's connection)."""
    mark = store.queries.dialect.placeholder
    with store._read():
        row = store._one(f"SELECT count(*) FROM {table} WHERE tenant = {mark}", (store.tenant_key,))  # noqa: S608
    assert row is not None
    return int(row[0])


# --- the SQLite database, its -wal and its -shm: the store's user's alone ----------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


@pytest.mark.usefixtures("umask_022")
def test_a_new_sqlite_database_and_its_logs_are_open_to_no_other_user(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    store = SqliteStore(database)
    try:
        run(MemoryHandler(store, tenant="alice"), command="create", path="/memories/a.md", file_text="secret\n")
        made = [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
        for path in made:
            assert path.exists(), path.name
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, (path.name, oct(path.stat().st_mode))
    finally:
        store.close()


@pytest.mark.usefixtures("umask_022")
def test_db_init_makes_a_private_sqlite_database_too(tmp_path: Path) -> None:
    database = tmp_path / "made.db"
    done = refmem_cli("db", "init", "--store", f"sqlite:///{database}", environment=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(database.stat().st_mode) == 0o600


# --- a version number no engine holds ---------------------------------------------------------------------------


def test_restore_of_a_version_past_64_bits_is_no_such_version_on_every_engine(opener: Opener) -> None:
    store = opener(tenant="alice")
    run(MemoryHandler(store), command="create", path="/memories/a.md", file_text="one\n")
    for number in (2**63, 2**63 - 1, 2**64 + 5, -(2**63) - 1, 0, -1):
        with pytest.raises(NoVersion):
            store.restore(vp("/memories/a.md"), number)


def test_the_cli_answers_a_huge_restore_version_without_a_traceback(tmp_path: Path) -> None:
    location = f"sqlite:///{tmp_path / 'memory.db'}"
    environment = dict(os.environ)
    create = '{"command": "create", "path": "/memories/a.md", "file_text": "one\\n"}'
    assert refmem_cli("exec", "--store", location, "--tenant", "alice", create, environment=environment).returncode == 0
    done = refmem_cli("restore", "/memories/a.md", "--version", str(2**63), "--store", location, "--tenant", "alice",
                      environment=environment)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr and str(tmp_path) not in done.stderr
    assert "/memories/a.md" in done.stderr


# --- a view never waits for a writer ----------------------------------------------------------------------------


def test_a_view_that_records_its_use_never_waits_for_a_writer(opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every view records its use here (granularity none); while another connection's writer of the tenant holds the
    write lock, a view is answered at once, the writer still holding it: the use is not written then, and it is at
    the next view once the lock is free (best effort, D-STORE-SQL-USES)."""
    monkeypatch.setattr("refmem.stores.core.USE_GRANULARITY", -1.0)
    writer, reader = opener(tenant="alice"), opener(tenant="alice")
    run(MemoryHandler(writer), command="create", path="/memories/a.md", file_text="one\n")
    first_use = reader.last_access(vp("/memories/a.md"))
    holding, release = threading.Event(), threading.Event()
    gave_up: List[bool] = []

    def hold() -> None:
        with writer.locked():
            holding.set()
            gave_up.append(not release.wait(20))

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(20)
        assert "one" in run(MemoryHandler(reader), command="view", path="/memories/a.md")
        assert not release.is_set() and thread.is_alive()  # answered while the writer held the lock
        assert reader.last_access(vp("/memories/a.md")) == first_use  # nothing written, nothing waited for
    finally:
        release.set()
        thread.join(30)
    assert gave_up == [False]
    run(MemoryHandler(reader), command="view", path="/memories/a.md")
    later = reader.last_access(vp("/memories/a.md"))
    assert later is not None and first_use is not None and later > first_use


# --- history bounded by its budget, rows and all ----------------------------------------------------------------


def test_versions_of_empty_files_count_against_the_tenants_budget(opener: Opener) -> None:
    budget = 16 * 1024
    store = opener(tenant="alice", history={"bytes_per_tenant": budget})
    handler = MemoryHandler(store)
    for number in range(300):
        run(handler, command="create", path=f"/memories/n{number}.md", file_text="")
        run(handler, command="delete", path=f"/memories/n{number}.md")
    kept = _count(store, "refmem_versions")
    assert 0 < kept <= budget // VERSION_ROW_BYTES, kept
    with store._read():
        row = store._one(store.queries.version_bytes, (store.tenant_key,))
    assert row is not None and int(row[0]) == kept * VERSION_ROW_BYTES


def _big_folder(handler: MemoryHandler, files: int, size: int) -> None:
    for number in range(files):
        run(handler, command="create", path=f"/memories/big/f{number}.md", file_text="x" * size)


def test_a_folder_delete_over_the_budget_copies_nothing(tmp_path: Path) -> None:
    """Counted before copying: the folder's files would be dropped whole by retention the moment they were kept,
    so none is copied (SQLite's count of rows written by the delete: the folder and its 50 files, the tenant's row,
    the journal; not 50 versions written and dropped)."""
    store = SqliteStore(tmp_path / "memory.db", tenant="alice", history={"bytes_per_tenant": 64 * 1024})
    try:
        handler = MemoryHandler(store)
        _big_folder(handler, 50, 4096)
        run(handler, command="create", path="/memories/old.md", file_text="old\n")
        run(handler, command="str_replace", path="/memories/old.md", old_str="old", new_str="new")
        assert _count(store, "refmem_versions") == 1
        before = store._db.total_changes
        run(handler, command="delete", path="/memories/big")
        written = store._db.total_changes - before
        assert written < 51 + 10, written  # 51 rows deleted, a few of bookkeeping; no copy of the 50 files
        assert _count(store, "refmem_versions") == 0  # as retention would have left it: every older version gone
        assert store.history(vp("/memories/big/f0.md")) == [] and store.history(vp("/memories/old.md")) == []
    finally:
        store.close()


def test_a_folder_delete_within_the_budget_keeps_its_files(opener: Opener) -> None:
    store = opener(tenant="alice", history={"bytes_per_tenant": 64 * 1024})
    handler = MemoryHandler(store)
    _big_folder(handler, 5, 1000)
    run(handler, command="delete", path="/memories/big")
    versions = store.history(vp("/memories/big/f3.md"))
    assert len(versions) == 1 and versions[0].size == 1000
    store.restore(vp("/memories/big/f3.md"), versions[0].number)
    assert "x" * 1000 in run(handler, command="view", path="/memories/big/f3.md")


def test_a_folder_delete_over_the_budget_on_either_engine_leaves_history_within_it(opener: Opener) -> None:
    store = opener(tenant="alice", history={"bytes_per_tenant": 16 * 1024})
    handler = MemoryHandler(store)
    _big_folder(handler, 10, 4096)
    run(handler, command="create", path="/memories/keep.md", file_text="a\n")
    run(handler, command="str_replace", path="/memories/keep.md", old_str="a", new_str="b")
    run(handler, command="delete", path="/memories/big")
    assert _count(store, "refmem_versions") == 0
    with store._read():
        row = store._one(store.queries.version_bytes, (store.tenant_key,))
    assert row is not None and int(row[0]) == 0
    run(handler, command="str_replace", path="/memories/keep.md", old_str="b", new_str="c")
    assert [version.size for version in store.history(vp("/memories/keep.md"))] == [2]


# --- PostgreSQL: a frozen client, a database not in UTF-8, the application role ---------------------------------


def test_a_frozen_client_is_cut_off_and_the_tenants_next_writer_served(
    postgres: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that stops inside its writing transaction (here: holds `locked()` and does nothing) is ended by the
    server after IDLE_SECONDS, so another writer of the tenant, waiting up to LOCK_SECONDS, is served."""
    from refmem.stores import postgres as pg

    monkeypatch.setattr(pg, "IDLE_SECONDS", 1)
    monkeypatch.setattr(pg, "LOCK_SECONDS", 6)
    dsn = postgres.location_dsn(tmp_path)
    frozen, other = pg.PostgresStore(dsn, tenant="alice"), pg.PostgresStore(dsn, tenant="alice")
    holding, release = threading.Event(), threading.Event()
    ended: List[str] = []

    def freeze() -> None:
        try:
            with frozen.locked():
                holding.set()
                release.wait(30)
        except Exception as error:  # noqa: BLE001  # the server cut the session: its commit cannot succeed
            ended.append(type(error).__name__)

    thread = threading.Thread(target=freeze)
    thread.start()
    try:
        assert holding.wait(20)
        result = MemoryHandler(other).execute({"command": "create", "path": "/memories/a.md", "file_text": "B\n"})
        assert not result.is_error, result.output
        assert not release.is_set()  # served while the frozen client still "held" it
    finally:
        release.set()
        thread.join(30)
        other.close()
    assert ended, "the frozen client's transaction was not ended by the server"
    try:  # the frozen client, woken, opens a new connection and goes on
        assert "B" in run(MemoryHandler(frozen), command="view", path="/memories/a.md")
    finally:
        frozen.close()


@pytest.mark.parametrize("encoding", ["SQL_ASCII", "LATIN1"])
def test_a_database_not_in_utf8_is_refused(postgres: Cluster, encoding: str) -> None:
    from refmem.stores.postgres import PostgresStore, migrate

    name = f"refmem_{encoding.lower()}"
    with postgres.admin() as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name} ENCODING '{encoding}' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
                      f" OWNER {APP_ROLE}")
    try:
        dsn = postgres.dsn(database=name)
        for attempt in (lambda: PostgresStore(dsn, tenant="alice"), lambda: migrate(dsn)):
            with pytest.raises(StoreError) as refused:
                attempt()
            assert f"encoding is {encoding}, not UTF8" in str(refused.value)
        location = f"postgresql://{APP_ROLE}@/{name}?host={quote(str(postgres.socket), safe='')}"
        done = refmem_cli("db", "init", "--store", location, environment=dict(os.environ))
        assert done.returncode == 2 and "not UTF8" in done.stderr and "Traceback" not in done.stderr
    finally:
        with postgres.admin() as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _split_roles(postgres: Cluster, schema: str) -> tuple:
    with postgres.admin() as admin:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'refmem_owner'").fetchone() is None:
            admin.execute("CREATE ROLE refmem_owner LOGIN NOSUPERUSER NOBYPASSRLS")
        admin.execute(f"CREATE SCHEMA IF NOT EXISTS {schema} AUTHORIZATION refmem_owner")
    socket = quote(str(postgres.socket), safe="")
    search = quote(f"-c search_path={schema}", safe="")
    owner = f"postgresql://refmem_owner@/{DATABASE}?host={socket}&options={search}"
    app = f"postgresql://{APP_ROLE}@/{DATABASE}?host={socket}&options={search}"
    return owner, app


def test_the_application_role_only_reads_the_schema_version(postgres: Cluster) -> None:
    import psycopg

    owner, app = _split_roles(postgres, "s_audit_role")
    made = refmem_cli("db", "init", "--store", owner, "--app-role", APP_ROLE, environment=dict(os.environ))
    assert made.returncode == 0, made.stderr
    with psycopg.connect(app, autocommit=True) as connection:
        assert connection.execute("SELECT count(*) FROM refmem_schema").fetchone() == (1,)
        for statement in ("UPDATE refmem_schema SET version = 99", "DELETE FROM refmem_schema",
                          "INSERT INTO refmem_schema (version) VALUES (99)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute(statement)
    create = '{"command": "create", "path": "/memories/n.md", "file_text": "ALICE\\n"}'
    done = refmem_cli("exec", "--store", app, "--tenant", "alice", create, environment=dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr
    # a grant made wider by an older refmem is taken back by `db migrate --app-role`
    with psycopg.connect(owner, autocommit=True) as connection:
        connection.execute(f"GRANT INSERT, UPDATE, DELETE ON refmem_schema TO {APP_ROLE}")
    again = refmem_cli("db", "migrate", "--store", owner, "--app-role", APP_ROLE, environment=dict(os.environ))
    assert again.returncode == 0, again.stderr
    with psycopg.connect(app, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("UPDATE refmem_schema SET version = 99")
