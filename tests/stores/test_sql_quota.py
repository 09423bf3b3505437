"""Quotas per tenant on the SQL stores (D-STORE-QUOTA), over SQLite and the session's throwaway PostgreSQL cluster:
a tenant's files and their bytes bounded in the same transaction as the write that would pass the bound, with the
D-IO style of error; never a write refused for what it frees; exact under 16 concurrent writers of one tenant; the
running usage that enforces it migrated from schema 2 by a recount."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import List, Tuple

import pytest
from sql_store_support import Opener, run, vp

from refmem import MemoryHandler
from refmem.problems import OsFailure
from refmem.stores.core import SqlStore
from refmem.stores.quota import Quota


def usage(store: SqlStore) -> Tuple[int, int]:
    """(files, bytes) as the tenant's running usage says, checked against its rows counted one by one."""
    mark = store.queries.dialect.placeholder
    with store._read():
        running = store._one(f"SELECT files, content_bytes FROM refmem_tenants WHERE tenant = {mark}",  # noqa: S608
                             (store.tenant_key,))
        counted = store._one(
            f"SELECT count(*), coalesce(sum(size), 0) FROM refmem_nodes WHERE tenant = {mark} AND kind = 'file'",  # noqa: S608
            (store.tenant_key,),
        )
    assert running is not None and counted is not None
    assert (int(running[0]), int(running[1])) == (int(counted[0]), int(counted[1]))
    return int(running[0]), int(running[1])


def error_of(handler: MemoryHandler, **command: object) -> str:
    result = handler.execute(command)
    assert result.is_error, result.output
    return result.output


def test_the_running_usage_follows_every_command(opener: Opener) -> None:
    store = opener(tenant="alice")
    handler = MemoryHandler(store)
    run(handler, command="create", path="/memories/a/b.md", file_text="12345\n")
    run(handler, command="create", path="/memories/c.md", file_text="1\n")
    assert usage(store) == (2, 8)
    run(handler, command="str_replace", path="/memories/a/b.md", old_str="12345", new_str="1234567")
    run(handler, command="insert", path="/memories/c.md", insert_line=1, insert_text="22\n")
    assert usage(store) == (2, 13)
    run(handler, command="rename", old_path="/memories/a", new_path="/memories/z")
    assert usage(store) == (2, 13)
    run(handler, command="delete", path="/memories/c.md")
    assert usage(store) == (1, 8)
    number = store.history(vp("/memories/c.md"))[0].number
    store.restore(vp("/memories/c.md"), number)
    digest = store.write(vp("/memories/w.md"), b"www", None)
    store.write(vp("/memories/w.md"), b"w", digest)
    assert usage(store) == (3, 14)
    run(handler, command="delete", path="/memories/z")
    assert usage(store) == (2, 6)
    store.erase()
    assert usage(store) == (0, 0)


def test_a_write_past_the_quota_is_refused_whole_in_the_documented_style(opener: Opener) -> None:
    store = opener(tenant="alice", quota={"max_bytes": 20, "max_files": 2})
    handler = MemoryHandler(store)
    run(handler, command="create", path="/memories/a.md", file_text="0123456789\n")  # 11 bytes
    said = error_of(handler, command="create", path="/memories/b.md", file_text="x" * 10)  # 21: one past
    assert said == "Error: Could not create /memories/b.md: the tenant's quota of bytes is used up."
    run(handler, command="create", path="/memories/b.md", file_text="x" * 9)  # 20: the last byte allowed
    assert usage(store) == (2, 20)
    said = error_of(handler, command="create", path="/memories/c.md", file_text="")
    assert said == "Error: Could not create /memories/c.md: the tenant's quota of files is used up."
    said = error_of(handler, command="str_replace", path="/memories/a.md", old_str="0", new_str="00")
    assert said.endswith("the tenant's quota of bytes is used up.")
    assert "\t0123456789" in run(handler, command="view", path="/memories/a.md")  # nothing of it written
    with pytest.raises(OsFailure) as refused:
        store.write(vp("/memories/d.md"), b"", None)
    assert refused.value.code == "quota_files"
    assert usage(store) == (2, 20)
    # what frees is never refused, even past a quota lowered since
    tight = opener(tenant="alice", quota={"max_bytes": 5, "max_files": 1})
    tight_handler = MemoryHandler(tight)
    run(tight_handler, command="str_replace", path="/memories/a.md", old_str="0123456789", new_str="0")
    run(tight_handler, command="rename", old_path="/memories/a.md", new_path="/memories/e.md")
    run(tight_handler, command="delete", path="/memories/b.md")
    assert usage(tight) == (1, 2)
    other = MemoryHandler(opener(tenant="bob", quota={"max_bytes": 5, "max_files": 1}))
    run(other, command="create", path="/memories/a.md", file_text="bob\n")  # tenants' quotas are their own


def test_a_quota_holds_under_16_concurrent_writers_of_one_tenant(opener: Opener) -> None:
    """16 connections of one tenant each create 10-byte files until refused: exactly the 100 bytes allowed are
    written, each once, and nothing past them."""
    quota = {"max_bytes": 100}
    stores = [opener(tenant="alice", quota=quota) for _ in range(16)]
    written: List[str] = []
    refusals: List[str] = []
    lock = threading.Lock()
    start = threading.Barrier(len(stores))

    def writer(number: int, store: SqlStore) -> None:
        handler = MemoryHandler(store)
        start.wait(30)
        for attempt in range(4):
            path = f"/memories/w{number:02}-{attempt}.md"
            result = handler.execute({"command": "create", "path": path, "file_text": f"{number:02}{attempt}4567890"})
            with lock:
                (refusals if result.is_error else written).append(path if not result.is_error else result.output)

    threads = [threading.Thread(target=writer, args=(n, store)) for n, store in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(written) == 10, (written, refusals[:3])
    assert len(refusals) == 64 - 10 and all(said.endswith("quota of bytes is used up.") for said in refusals), refusals
    assert usage(stores[0]) == (10, 100)
    handler = MemoryHandler(stores[0])
    for path in written:
        assert "456789" in run(handler, command="view", path=path)


def test_quota_bounds_are_checked_when_the_store_is_made(tmp_path: Path) -> None:
    for bad in ({"max_bytes": -1}, {"max_files": "10"}, {"max_bytes": True}, {"nonsense": 3}):
        with pytest.raises((ValueError, TypeError)):
            Quota.from_mapping(bad)  # type: ignore[arg-type]
    assert Quota.from_mapping({"max_files": 0}).max_files == 0


def _as_schema_2(execute: object) -> None:
    """The schema 3 columns taken away and the version set back: a database as refmem wrote it before quotas."""
    for statement in ("ALTER TABLE refmem_tenants DROP COLUMN files",
                      "ALTER TABLE refmem_tenants DROP COLUMN content_bytes", "UPDATE refmem_schema SET version = 2"):
        execute(statement)  # type: ignore[operator]


def test_a_schema_2_database_is_migrated_with_its_usage_recounted(engine: str, request: pytest.FixtureRequest,
                                                                   tmp_path: Path) -> None:
    import os

    from refmem.stores import StoreError
    from refmem.stores.schema import SCHEMA_VERSION

    if engine == "sqlite":
        import sqlite3

        from refmem.stores.sqlite import SqliteStore, migrate

        where = tmp_path / "memory.db"

        def open_store(tenant: str) -> SqlStore:
            return SqliteStore(where, tenant=tenant)

        def downgrade() -> None:
            with sqlite3.connect(where, isolation_level=None) as db:
                _as_schema_2(db.execute)

        def migrated() -> object:
            return migrate(where)
    else:
        import psycopg

        from refmem.stores.postgres import PostgresStore
        from refmem.stores.postgres import migrate as migrate_pg

        dsn = request.getfixturevalue("postgres").location_dsn(f"quota-migration:{tmp_path}:{os.getpid()}")

        def open_store(tenant: str) -> SqlStore:
            return PostgresStore(dsn, tenant=tenant, create=tenant == "alice")

        def downgrade() -> None:
            with psycopg.connect(dsn, autocommit=True) as connection:
                _as_schema_2(connection.execute)

        def migrated() -> object:
            return migrate_pg(dsn)

    for tenant, size in (("alice", 5), ("bob", 7)):
        store = open_store(tenant)
        try:
            run(MemoryHandler(store), command="create", path="/memories/a/n.md", file_text="x" * size)
            run(MemoryHandler(store), command="create", path="/memories/m.md", file_text="y")
        finally:
            store.close()
    downgrade()
    with pytest.raises(StoreError):
        open_store("alice")
    assert migrated() == (2, SCHEMA_VERSION)
    for tenant, size in (("alice", 5), ("bob", 7)):
        store = open_store(tenant)
        try:
            assert usage(store) == (2, size + 1)
        finally:
            store.close()
