"""History in the SQL stores (D-STORE-HISTORY-*), over SQLite and PostgreSQL alike: what each command keeps, restore,
the conditional write, retention and its cost, tenants, the migration from schema 1, and `refmem history` /
`refmem restore`. The PostgreSQL cases run on the session's throwaway cluster (the `postgres` fixture) and fail,
rather than skip, under REFMEM_REQUIRE_POSTGRES=1."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import quote

import pytest
from sql_store_support import Opener, run, vp

from refmem import MemoryHandler
from refmem._store_extras import Version, VersionedStore
from refmem.limits import HistoryLimits
from refmem.problems import Conflict, Exists, NotRegular, NoVersion, OsFailure, ParentNotDir, TooBig
from refmem.stores import StoreError
from refmem.stores.core import SqlStore
from refmem.stores.history import line
from refmem.stores.schema import SCHEMA_VERSION, VERSION_ROW_BYTES
from refmem.stores.sqlite import SqliteStore

R = VERSION_ROW_BYTES


def counted(*sizes: int) -> Tuple[int, int]:
    """What `total_kept` says of a tenant whose versions have these sizes."""
    total = sum(sizes) + R * len(sizes)
    return total, total


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()



def content(store: SqlStore, raw: str) -> bytes:
    with store.open_regular(vp(raw)) as opened:
        return opened.read_all()


def total_kept(store: SqlStore) -> Tuple[int, int]:
    """(the tenant's running total of version bytes, what its versions count, counted row by row: each its size and
    VERSION_ROW_BYTES, D-STORE-HISTORY-RETENTION)."""
    every = (
        f"SELECT coalesce(sum(size), 0) + {R} * count(*) FROM refmem_versions WHERE tenant = "  # noqa: S608
        + store.queries.dialect.placeholder
    )
    with store._read():
        running = store._one(store.queries.version_bytes, (store.tenant_key,))
        counted = store._one(every, (store.tenant_key,))
    assert running is not None and counted is not None
    return int(running[0]), int(counted[0])


# --- what each command keeps ------------------------------------------------------------------------


def test_each_mutating_command_keeps_what_it_replaces_or_removes(opener: Opener) -> None:
    store = opener(actor="svc-notes")
    assert isinstance(store, VersionedStore)
    handler = MemoryHandler(store)
    before = time.time()
    run(handler, command="create", path="/memories/a/n.md", file_text="one\r\ntwo\r\n")
    assert store.history(vp("/memories/a/n.md")) == []  # a create replaces nothing
    run(handler, command="str_replace", path="/memories/a/n.md", old_str="one", new_str="uno")
    run(handler, command="insert", path="/memories/a/n.md", insert_line=0, insert_text="zero\n")
    run(handler, command="create", path="/memories/a/m.md", file_text="é\n")
    run(handler, command="rename", old_path="/memories/a/m.md", new_path="/memories/b/m.md")
    assert store.history(vp("/memories/a/m.md")) == [] and store.history(vp("/memories/b/m.md")) == []
    run(handler, command="delete", path="/memories/b/m.md")
    run(handler, command="create", path="/memories/a/k.md", file_text="kay\n")
    run(handler, command="view", path="/memories/a/k.md")
    run(handler, command="delete", path="/memories/a")
    after = time.time()

    kept = store.history(vp("/memories/a/n.md"))
    assert [(v.command, v.size) for v in kept] == [("delete", 16), ("insert", 10), ("str_replace", 10)]
    assert [v.sha256 for v in kept] == [
        sha(b"zero\r\nuno\r\ntwo\r\n"),
        sha(b"uno\r\ntwo\r\n"),
        sha(b"one\r\ntwo\r\n"),
    ]
    assert kept[0].number > kept[1].number > kept[2].number  # newest first, numbers growing
    assert all(v.actor == "svc-notes" and before <= v.at <= after for v in kept)
    assert [(v.command, v.sha256) for v in store.history(vp("/memories/b/m.md"))] == [("delete", sha("é\n".encode()))]
    folder = store.history(vp("/memories/a/k.md"))
    assert [(v.command, v.sha256) for v in folder] == [("delete", sha(b"kay\n"))]
    assert folder[0].number == kept[0].number  # one delete of the folder: one generation for all its files
    assert store.history(vp("/memories/a")) == []  # a folder has no content to keep
    assert total_kept(store) == counted(16, 10, 10, 3, 4)


def test_a_store_without_an_actor_keeps_none_and_its_own_operations_name_themselves(opener: Opener) -> None:
    store = opener()
    store.write(vp("/memories/x.md"), b"1\n", None)
    with store.open_edit(vp("/memories/x.md"), 100) as edit:  # an edit outside the handler: no tool command
        edit.replace(b"2\n")
    store.write(vp("/memories/x.md"), b"3\n", sha(b"2\n"))
    assert [(v.command, v.actor) for v in store.history(vp("/memories/x.md"))] == [("write", None), ("edit", None)]


# --- restore ----------------------------------------------------------------------------------------


def test_restore_after_delete_and_after_overwrite_brings_back_the_exact_bytes(opener: Opener) -> None:
    store = opener()
    handler = MemoryHandler(store)
    original = "first line\r\nzweite Zeile ü\n\tthird\n"
    run(handler, command="create", path="/memories/deep/er/n.md", file_text=original)
    run(handler, command="str_replace", path="/memories/deep/er/n.md", old_str="first line", new_str="CHANGED")
    overwritten = store.history(vp("/memories/deep/er/n.md"))[0]
    run(handler, command="delete", path="/memories/deep")
    assert handler.execute({"command": "view", "path": "/memories/deep"}).is_error

    deleted = store.history(vp("/memories/deep/er/n.md"))[0]
    assert deleted.command == "delete"
    assert store.restore(vp("/memories/deep/er/n.md"), deleted.number) == deleted.sha256
    assert content(store, "/memories/deep/er/n.md") == original.replace("first line", "CHANGED").encode()
    assert store.history(vp("/memories/deep/er/n.md"))[0] == deleted  # nothing was replaced: nothing more kept

    assert store.restore(vp("/memories/deep/er/n.md"), overwritten.number) == sha(original.encode())
    assert content(store, "/memories/deep/er/n.md") == original.encode()
    newest = store.history(vp("/memories/deep/er/n.md"))[0]
    assert (newest.command, newest.sha256) == ("restore", deleted.sha256)  # what the restore replaced is kept
    versions = len(store.history(vp("/memories/deep/er/n.md")))
    store.restore(vp("/memories/deep/er/n.md"), overwritten.number)  # the content already there: no change
    assert len(store.history(vp("/memories/deep/er/n.md"))) == versions
    listing = run(handler, command="view", path="/memories/deep")
    assert "/memories/deep/er/n.md" in listing  # the folders came back with the file


def test_restore_refusals_change_nothing(opener: Opener) -> None:
    store = opener()
    handler = MemoryHandler(store)
    run(handler, command="create", path="/memories/n.md", file_text="x" * 60)
    run(handler, command="create", path="/memories/d/x.md", file_text="in d\n")
    run(handler, command="delete", path="/memories/n.md")
    run(handler, command="delete", path="/memories/d")
    number = store.history(vp("/memories/n.md"))[0].number
    below = store.history(vp("/memories/d/x.md"))[0].number
    run(handler, command="create", path="/memories/n.md/inside.md", file_text="a folder now\n")
    run(handler, command="create", path="/memories/d", file_text="a file on the way\n")
    generation = store.changes_since(0).generation
    small = opener(limits={"max_file_bytes": 10})
    refusals: List[Tuple[SqlStore, str, int, type]] = [
        (store, "/memories/n.md", number, NotRegular),  # a folder is there now
        (store, "/memories/n.md", number + 1000, NoVersion),
        (store, "/memories/other.md", number, NoVersion),  # a number is a version of its own path only
        (store, "/memories/d/x.md", below, ParentNotDir),  # a file where its folder was
        (small, "/memories/d/x.md", number, NoVersion),
    ]
    for where, raw, wanted, problem in refusals:
        with pytest.raises(problem):
            where.restore(vp(raw), wanted)
    run(handler, command="delete", path="/memories/n.md")
    generation = store.changes_since(0).generation
    with pytest.raises(TooBig):
        small.restore(vp("/memories/n.md"), number)  # 60 bytes: more than that store's files may have
    assert store.changes_since(0).generation == generation
    assert handler.execute({"command": "view", "path": "/memories/n.md"}).is_error
    assert content(store, "/memories/d") == b"a file on the way\n"
    assert [v.number for v in store.history(vp("/memories/n.md"))][-1] == number


# --- the conditional write --------------------------------------------------------------------------


def test_a_conditional_write_refuses_a_stale_sha_and_changes_nothing(opener: Opener) -> None:
    store = opener(limits={"max_file_bytes": 100})
    path = vp("/memories/notes.md")
    assert store.write(path, b"v1\n", None) == sha(b"v1\n")
    assert store.write(path, b"v2\n", sha(b"v1\n").upper()) == sha(b"v2\n")  # hex in either case
    generation, versions = store.changes_since(0).generation, store.history(path)
    for expected, found in ((sha(b"v1\n"), sha(b"v2\n")), (None, sha(b"v2\n")), ("not a digest", sha(b"v2\n"))):
        with pytest.raises(Conflict) as refused:
            store.write(path, b"lost update\n", expected)
        assert refused.value.found == found
    with pytest.raises(Conflict) as refused:
        store.write(vp("/memories/missing.md"), b"x", sha(b"v2\n"))
    assert refused.value.found is None
    with pytest.raises(TooBig):
        store.write(path, b"x" * 101, sha(b"v2\n"))
    with pytest.raises(TypeError, match="must be bytes"):
        store.write(path, "text", sha(b"v2\n"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected_sha256 must be a string"):
        store.write(path, b"x", 7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a version number must be an integer"):
        store.restore(path, "1")  # type: ignore[arg-type]
    store.write(vp("/memories/dir/f.md"), b"f", None)
    with pytest.raises(NotRegular):
        store.write(vp("/memories/dir"), b"x", None)
    assert content(store, "/memories/notes.md") == b"v2\n"
    assert store.history(path) == versions and [v.command for v in versions] == ["write"]
    assert store.changes_since(0).generation == generation + 1  # only the folder's file was written


# --- retention --------------------------------------------------------------------------------------


def test_retention_keeps_the_newest_versions_of_each_file(opener: Opener) -> None:
    store = opener(history={"versions_per_file": 3})
    path = vp("/memories/n.md")
    digest = store.write(path, b"0", None)
    for n in range(1, 10):
        digest = store.write(path, str(n).encode(), digest)
    assert [v.sha256 for v in store.history(path)] == [sha(b"8"), sha(b"7"), sha(b"6")]
    assert total_kept(store) == counted(1, 1, 1)


def test_retention_holds_for_the_tools_edits(opener: Opener) -> None:
    """str_replace's write (one statement on PostgreSQL, several on SQLite) keeps and trims as a store's write."""
    store = opener(history={"versions_per_file": 3, "bytes_per_tenant": 35 + 3 * R})  # a row counts R beside its bytes
    handler = MemoryHandler(store)
    run(handler, command="create", path="/memories/e.md", file_text="v0\n")
    for n in range(1, 8):
        run(handler, command="str_replace", path="/memories/e.md", old_str=f"v{n - 1}", new_str=f"v{n}")
    assert [v.sha256 for v in store.history(vp("/memories/e.md"))] == [sha(f"v{n}\n".encode()) for n in (6, 5, 4)]
    assert total_kept(store) == counted(3, 3, 3)
    run(handler, command="create", path="/memories/big.md", file_text="x" * 30 + "\n")
    run(handler, command="str_replace", path="/memories/big.md", old_str="x" * 30, new_str="y")  # 40 + 4R: over
    assert [v.size for v in store.history(vp("/memories/big.md"))] == [31]
    assert [v.sha256 for v in store.history(vp("/memories/e.md"))] == [sha(b"v6\n")]  # v4 and v5 went, oldest
    assert total_kept(store) == counted(3, 31)


def test_retention_keeps_a_tenants_bytes_under_its_budget_oldest_first(opener: Opener) -> None:
    store = opener(history={"bytes_per_tenant": 1000 + 6 * R})  # each version's row counts R beside its bytes
    digests = {name: store.write(vp(f"/memories/{name}.md"), b"a" * 300, None) for name in "abc"}
    for name in "abc":  # three versions of 300 bytes: 900, under the budget
        digests[name] = store.write(vp(f"/memories/{name}.md"), b"b" * 10, digests[name])
    assert total_kept(store) == counted(300, 300, 300)
    digests["a"] = store.write(vp("/memories/a.md"), b"c" * 200, digests["a"])  # 910: still under
    store.write(vp("/memories/c.md"), b"d", digests["c"])  # 920
    store.write(vp("/memories/b.md"), b"e" * 5, digests["b"])  # 930
    store.write(vp("/memories/a.md"), b"f", digests["a"])  # 1130: the oldest (a's 300 bytes) goes
    assert [v.size for v in store.history(vp("/memories/a.md"))] == [200, 10]
    assert [v.size for v in store.history(vp("/memories/b.md"))] == [10, 300]
    assert total_kept(store) == counted(300, 300, 10, 10, 10, 200)
    lone = opener(tenant="lone", history={"bytes_per_tenant": 5})
    lone.write(vp("/memories/x.md"), b"123456", None)
    lone.write(vp("/memories/x.md"), b"1", sha(b"123456"))  # a version larger than the budget is not kept
    assert lone.history(vp("/memories/x.md")) == [] and total_kept(lone) == (0, 0)


def _measured(store: SqlStore, action: Callable[[], Any]) -> int:
    """How many statements `action` has the store run."""
    count = 0
    execute = store._execute

    def counting(sql: str, params: Any) -> Any:
        nonlocal count
        count += 1
        return execute(sql, params)

    store._execute = counting  # type: ignore[method-assign]
    try:
        action()
    finally:
        del store._execute
    return count


def _vm_steps(store: SqlStore, action: Callable[[], Any]) -> int:
    """SQLite's virtual machine instructions for `action` (its work, whatever the machine's speed)."""
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0

    db = store._db  # type: ignore[attr-defined]
    db.set_progress_handler(step, 1)
    try:
        action()
    finally:
        db.set_progress_handler(None, 1)
    return steps


def _tenant_with_versions(opener: Opener, tenant: str, files: int, budget: int) -> SqlStore:
    """A tenant holding `files` files of 10 bytes with 2 versions each (one generation per file); its byte budget
    then lowered to `budget`, so the next write trims."""
    store = opener(tenant=tenant)
    with store.locked():
        for n in range(files):
            path = vp(f"/memories/f{n:05}.md")
            digest = store.write(path, b"0123456789", None)
            digest = store.write(path, b"1123456789", digest)
            store.write(path, b"2123456789", digest)
    return opener(tenant=tenant, history={"bytes_per_tenant": budget})


@pytest.mark.slow
def test_retention_costs_what_it_trims_not_what_the_tenant_holds(opener: Opener, engine: str) -> None:
    """One write costs the same statements whether its tenant holds 50 or 200 files' versions, and whether the
    byte budget then drops 8 or 32 of the tenant's oldest versions. On SQLite, whose virtual machine's instructions
    count the work: what a write costs does not grow with the tenant (200 files against 50: under 1.25x, with and
    without a drop), and what a drop costs grows linearly with what is dropped (the cost of each version dropped is
    the same, within 2x, from 8 to 32 and from 32 to 128)."""
    unbounded = HistoryLimits().bytes_per_tenant
    path = vp("/memories/f00000.md")

    def one_write(store: SqlStore) -> Callable[[], Any]:
        return lambda: store.write(path, b"3123456789", sha(b"2123456789"))

    counts: Dict[Tuple[int, int], int] = {}
    steps: Dict[Tuple[int, int], int] = {}
    for files, dropped in ((50, 0), (50, 8), (50, 32), (200, 0), (200, 8), (200, 32), (200, 128)):
        # each file keeps 2 versions of 10 bytes; the write keeps one more: the budget drops `dropped` + 1
        budget = unbounded if dropped == 0 else (10 + R) * (2 * files - dropped)
        store = _tenant_with_versions(opener, f"t{files}-{dropped}", files, budget)
        counts[files, dropped] = _measured(store, one_write(store))
        kept = sum(len(store.history(vp(f"/memories/f{n:05}.md"))) for n in range(files))
        assert kept == 2 * files + 1 - (dropped + 1 if dropped else 0), (files, dropped, kept)
        if engine == "sqlite":
            again = _tenant_with_versions(opener, f"v{files}-{dropped}", files, budget)
            steps[files, dropped] = _vm_steps(again, one_write(again))
    assert counts[50, 0] == counts[200, 0], counts
    assert counts[50, 8] == counts[50, 32] == counts[200, 8] == counts[200, 32], counts
    assert counts[200, 128] == counts[200, 32] + 2, counts  # 129 dropped: three reads of 64 oldest, not one
    if engine == "sqlite":
        for dropped in (0, 8, 32):
            assert steps[200, dropped] < 1.25 * steps[50, dropped], steps
        per_version = ((steps[200, 32] - steps[200, 8]) / 24, (steps[200, 128] - steps[200, 32]) / 96)
        assert 0.5 < per_version[1] / per_version[0] < 2, (per_version, steps)


def test_the_history_statements_search_indexes_and_never_scan(tmp_path: Path) -> None:
    """SQLite's plan for every history statement: each table reached through an index on more than the tenant
    (a search on `tenant=?` alone reads every row of the tenant: what the retention rule must never do)."""
    store = SqliteStore(tmp_path / "m.db")
    try:
        q = store.queries
        names = ("keep_one", "keep_below", "count_kept", "crowded", "oldest_of_path", "drop_of_path", "oldest",
                 "bytes_up_to", "drop_up_to", "history", "version_data")
        for name in names:
            sql = getattr(q, name)
            plan = [row[3] for row in store._db.execute("EXPLAIN QUERY PLAN " + sql, (0,) * sql.count("?"))]
            for step in plan:
                assert not step.startswith("SCAN"), (name, plan)
                if step.startswith("SEARCH") and "refmem_tenants" not in step:
                    assert not step.endswith("(tenant=?)"), (name, plan)
            assert any("refmem_versions" in step for step in plan) or name.startswith("keep"), (name, plan)
    finally:
        store.close()


# --- tenants ------------------------------------------------------------------------------------------


def test_tenants_never_see_each_others_history(opener: Opener) -> None:
    alice, bob = opener(tenant="alice", actor="alice-app"), opener(tenant="bob")
    for store, words in ((alice, b"alice secret\n"), (bob, b"CANARY bob\n")):
        digest = store.write(vp("/memories/same.md"), words, None)
        store.write(vp("/memories/same.md"), b"gone\n", digest)
    mine, theirs = alice.history(vp("/memories/same.md")), bob.history(vp("/memories/same.md"))
    assert [v.sha256 for v in mine] == [sha(b"alice secret\n")] and [v.sha256 for v in theirs] == [sha(b"CANARY bob\n")]
    with pytest.raises(NoVersion):
        alice.restore(vp("/memories/same.md"), theirs[0].number + 1000)
    run(MemoryHandler(bob), command="delete", path="/memories/same.md")
    assert alice.history(vp("/memories/same.md")) == mine
    bob_numbers = {v.number for v in bob.history(vp("/memories/same.md"))}
    for number in bob_numbers - {v.number for v in mine}:
        with pytest.raises(NoVersion):
            alice.restore(vp("/memories/same.md"), number)
    assert content(alice, "/memories/same.md") == b"gone\n"
    default = opener()
    tenant = default.for_tenant("carol", actor="carol-app")
    try:
        tenant.write(vp("/memories/c.md"), b"c", None)
        tenant.write(vp("/memories/c.md"), b"d", sha(b"c"))
        assert [v.actor for v in tenant.history(vp("/memories/c.md"))] == ["carol-app"]
        assert default.history(vp("/memories/c.md")) == []
    finally:
        tenant.close()


def test_postgres_keeps_row_level_security_on_the_versions_table(postgres: Any, tmp_path: Path) -> None:
    from refmem.stores.postgres import PostgresStore, connect

    dsn = postgres.location_dsn(f"test_history:rls:{tmp_path}:{os.getpid()}")
    store, bob = PostgresStore(dsn, tenant="alice"), PostgresStore(dsn, tenant="bob")
    for each in (store, bob):
        each.write(vp("/memories/a.md"), b"secret\n", None)
        each.write(vp("/memories/a.md"), b"other\n", sha(b"secret\n"))
    connection = store._conn  # type: ignore[attr-defined]
    row = connection.execute(
        "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = to_regclass('refmem_versions')"
    ).fetchone()
    assert tuple(row) == (True, True)
    # The store's connection is alice's for its life (D-STORE-PG-RLS): a query without a tenant filter sees hers only.
    assert connection.execute("SELECT tenant, count(*) FROM refmem_versions GROUP BY tenant").fetchall() == [
        ("alice", 1)
    ]
    unset = connect(dsn)
    try:
        assert unset.execute("SELECT count(*) FROM refmem_versions").fetchone()[0] == 0  # no tenant set: nothing
    finally:
        unset.close()
    store.close()
    bob.close()


# --- schema 1 to 2 ------------------------------------------------------------------------------------

V1_SQLITE = (  # the DDL of schema version 1, as refmem 1's SQLite store made it
    "CREATE TABLE refmem_schema (version INTEGER NOT NULL)",
    "CREATE TABLE refmem_tenants (tenant TEXT NOT NULL, generation INTEGER NOT NULL, floor INTEGER NOT NULL,"
    " PRIMARY KEY (tenant))",
    "CREATE TABLE refmem_nodes (tenant TEXT NOT NULL, path TEXT NOT NULL, parent TEXT NOT NULL, name TEXT NOT NULL,"
    " depth INTEGER NOT NULL, kind TEXT NOT NULL, size INTEGER NOT NULL, data BLOB, version INTEGER NOT NULL,"
    " used REAL, PRIMARY KEY (tenant, path))",
    "CREATE TABLE refmem_changes (tenant TEXT NOT NULL, generation INTEGER NOT NULL, path TEXT NOT NULL)",
    "CREATE INDEX refmem_nodes_by_parent ON refmem_nodes (tenant, parent, name)",
    "CREATE INDEX refmem_changes_by_generation ON refmem_changes (tenant, generation)",
)
V1_POSTGRES_TABLES = (
    "CREATE TABLE refmem_schema (version BIGINT NOT NULL)",
    'CREATE TABLE refmem_tenants (tenant TEXT COLLATE "C" NOT NULL, generation BIGINT NOT NULL,'
    " floor BIGINT NOT NULL, PRIMARY KEY (tenant))",
    'CREATE TABLE refmem_nodes (tenant TEXT COLLATE "C" NOT NULL, path TEXT COLLATE "C" NOT NULL,'
    ' parent TEXT COLLATE "C" NOT NULL, name TEXT COLLATE "C" NOT NULL, depth BIGINT NOT NULL,'
    ' kind TEXT COLLATE "C" NOT NULL, size BIGINT NOT NULL, data BYTEA, version BIGINT NOT NULL,'
    " used DOUBLE PRECISION, PRIMARY KEY (tenant, path))",
    'CREATE TABLE refmem_changes (tenant TEXT COLLATE "C" NOT NULL, generation BIGINT NOT NULL,'
    ' path TEXT COLLATE "C" NOT NULL)',
    "CREATE INDEX refmem_nodes_by_parent ON refmem_nodes (tenant, parent, name)",
    "CREATE INDEX refmem_changes_by_generation ON refmem_changes (tenant, generation)",
)
V1_POLICY = "current_setting('refmem.tenant', true) = 'tenant:' || tenant"
V1_ROWS = (  # alice's memory /memories/old.md ("from v1\n") and her tenant row
    "INSERT INTO refmem_schema (version) VALUES (1)",
    "INSERT INTO refmem_tenants (tenant, generation, floor) VALUES ('alice', 2, 1)",
    "INSERT INTO refmem_nodes (tenant, path, parent, name, depth, kind, size, data, version, used)"
    " VALUES ('alice', 'old.md', '', 'old.md', 1, 'file', 8, {blob}, 2, NULL)",
)


def cli(*argv: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603
        [sys.executable, "-m", "refmem", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, **(env or {})),
        check=False,
    )


def _v1_location(engine: str, request: pytest.FixtureRequest, tmp_path: Path) -> Tuple[str, Opener]:
    """A database of schema version 1 holding alice's old.md; its location for the CLI and an opener."""
    if engine == "sqlite":
        where = tmp_path / "v1-place" / "memory.db"
        where.parent.mkdir()
        with sqlite3.connect(where) as db:
            for statement in V1_SQLITE + V1_ROWS:
                db.execute(statement.replace("{blob}", "X'66726f6d2076310a'"))
        db.close()
        return f"sqlite://{where}", lambda **options: SqliteStore(where, **options)
    cluster = request.getfixturevalue("postgres")
    from refmem.stores.postgres import PostgresStore

    dsn = cluster.location_dsn(f"test_history:v1:{tmp_path}:{os.getpid()}")
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection:
        with connection.transaction():
            for statement in V1_POSTGRES_TABLES:
                connection.execute(statement)
            for table in ("refmem_tenants", "refmem_nodes", "refmem_changes"):
                connection.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
                connection.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
                connection.execute(
                    f"CREATE POLICY refmem_tenant ON {table} USING ({V1_POLICY}) WITH CHECK ({V1_POLICY})"
                )
            connection.execute("SELECT set_config('refmem.tenant', 'tenant:alice', true)")
            for statement in V1_ROWS:
                connection.execute(statement.replace("{blob}", "'\\x66726f6d2076310a'::bytea"))
    options = dsn.split("options='")[1].rstrip("'")
    location = (
        f"postgresql://refmem_app:hunter2@/refmem?host={quote(str(cluster.socket), safe='')}"
        f"&options={quote(options, safe='')}"
    )
    return location, lambda **options: PostgresStore(dsn, create=False, **options)


def test_a_version_1_database_is_refused_then_migrated_and_used(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location, open_v1 = _v1_location(engine, request, tmp_path)
    with pytest.raises(StoreError) as refused:
        open_v1(tenant="alice")
    assert f"version 1, older than this refmem's (version {SCHEMA_VERSION})" in str(refused.value)
    assert "refmem db migrate" in str(refused.value)
    migrated = cli("db", "migrate", "--store", location)
    assert (migrated.returncode, migrated.stdout) == (0, f"schema migrated from version 1 to {SCHEMA_VERSION}\n")
    assert location not in migrated.stdout + migrated.stderr
    again = cli("db", "migrate", "--store", location)
    assert again.stdout == f"schema already at version {SCHEMA_VERSION}: nothing to do\n", again.stderr
    store = open_v1(tenant="alice")
    try:
        assert content(store, "/memories/old.md") == b"from v1\n"
        handler = MemoryHandler(store)
        run(handler, command="str_replace", path="/memories/old.md", old_str="v1", new_str="v2")
        assert [(v.command, v.sha256) for v in store.history(vp("/memories/old.md"))] == [
            ("str_replace", sha(b"from v1\n"))
        ]
        assert total_kept(store) == counted(8)
        assert store.changes_since(0).generation == 3  # the generations went on from the v1 tenant row's
        if engine == "postgresql":  # the table the migration added has row-level security, forced, as the others
            connection = store._conn  # type: ignore[attr-defined]
            row = connection.execute(
                "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = to_regclass('refmem_versions')"
            ).fetchone()
            assert tuple(row) == (True, True)
            policies = connection.execute(
                "SELECT count(*) FROM pg_policies WHERE tablename = 'refmem_versions' AND schemaname = current_schema()"
            )
            assert policies.fetchone()[0] == 1
    finally:
        store.close()


def test_a_newer_database_stays_refused_by_migrate(tmp_path: Path) -> None:
    where = tmp_path / "m.db"
    SqliteStore(where).close()
    with sqlite3.connect(where) as db:
        db.execute("UPDATE refmem_schema SET version = ?", (SCHEMA_VERSION + 1,))
    db.close()
    before = where.read_bytes()
    refused = cli("db", "migrate", "--store", f"sqlite://{where}")
    assert refused.returncode == 2 and "newer than this refmem reads" in refused.stderr
    assert str(tmp_path) not in refused.stderr and where.read_bytes() == before


# --- the command line -----------------------------------------------------------------------------


def _location(engine: str, request: pytest.FixtureRequest, tmp_path: Path) -> Tuple[str, Opener]:
    if engine == "sqlite":
        where = tmp_path / "secret-place" / "memory.db"
        where.parent.mkdir()
        return f"sqlite://{where}", lambda **options: SqliteStore(where, **options)
    cluster = request.getfixturevalue("postgres")
    from refmem.stores.postgres import PostgresStore

    dsn = cluster.location_dsn(f"test_history:cli:{tmp_path}:{os.getpid()}")
    options = dsn.split("options='")[1].rstrip("'")
    location = (
        f"postgresql://refmem_app:hunter2@/refmem?host={quote(str(cluster.socket), safe='')}"
        f"&options={quote(options, safe='')}"
    )
    return location, lambda **opts: PostgresStore(dsn, **opts)


def test_the_cli_lists_and_restores_and_prints_no_location(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location, open_store = _location(engine, request, tmp_path)
    store = open_store(tenant="alice", actor="ops team")
    try:
        digest = store.write(vp("/memories/n.md"), b"first\n", None)
        store.write(vp("/memories/n.md"), b"second\n", digest)
        MemoryHandler(store).execute({"command": "delete", "path": "/memories/n.md"})
        expected = [line(version) for version in store.history(vp("/memories/n.md"))]
    finally:
        store.close()
    assert expected[0].split("  ")[2:] == ["7 bytes", sha(b"second\n")[:12], "delete", "ops team"]
    said: List[str] = []
    shown = cli("history", "/memories/n.md", "--store", location, "--tenant", "alice")
    said.append(shown.stdout + shown.stderr)
    assert (shown.returncode, shown.stdout.splitlines()) == (0, expected), shown.stderr
    when = shown.stdout.split("  ")[1]
    assert time.strptime(when, "%Y-%m-%dT%H:%M:%SZ")
    number = expected[-1].split("  ")[0]
    back = cli(
        "restore", "/memories/n.md", "--version", number, "--tenant", "alice", "--actor", "oncall",
        env={"REFMEM_STORE": location},
    )
    said.append(back.stdout + back.stderr)
    first = sha(b"first\n")
    assert (back.returncode, back.stdout) == (0, f"restored /memories/n.md to version {number} (sha256 {first})\n")
    missing = cli("restore", "/memories/n.md", "--version", "999999", "--store", location, "--tenant", "alice")
    said.append(missing.stdout + missing.stderr)
    assert missing.returncode == 1 and "there is no version 999999 of /memories/n.md" in missing.stderr
    other = cli("history", "/memories/n.md", "--store", location, "--tenant", "bob")
    said.append(other.stdout + other.stderr)
    assert (other.returncode, other.stdout) == (0, "no versions kept of /memories/n.md\n")
    for path in ("/etc/passwd", "/memories/../x", "/memories/", "/memories/a/"):
        refused = cli("history", path, "--store", location)
        said.append(refused.stdout + refused.stderr)
        assert refused.returncode == 2 and refused.stderr.startswith("refmem: cannot use the path"), path
    for text in said:
        assert "secret-place" not in text and "hunter2" not in text and location not in text
        assert str(tmp_path) not in text and "search_path" not in text
    opened = open_store(tenant="alice")
    try:
        assert content(opened, "/memories/n.md") == b"first\n"
        assert opened.history(vp("/memories/n.md"))[0].command == "delete"  # restored over nothing: nothing kept
        opened.write(vp("/memories/n.md"), b"third\n", sha(b"first\n"))
        again = cli("restore", "/memories/n.md", "--version", number, "--tenant", "alice", "--actor", "oncall",
                    "--store", location)
        assert again.returncode == 0, again.stderr
        assert [(v.command, v.actor) for v in opened.history(vp("/memories/n.md"))[:2]] == [
            ("restore", "oncall"), ("write", None)
        ]
        bad = cli("restore", "/memories/n.md", "--version", number, "--actor", "a\nb", "--store", location)
        assert bad.returncode == 2 and "an actor is a string" in bad.stderr
    finally:
        opened.close()


def test_the_cli_refuses_the_filesystem_store(tmp_path: Path) -> None:
    for action in (("history",), ("restore", "--version", "1")):
        refused = cli(*action, "/memories/n.md", "--root", str(tmp_path / "memories"))
        assert refused.returncode == 2
        assert refused.stderr == (
            "refmem: history is kept by the database stores (--store sqlite:... or postgresql://...), "
            "not by a memory directory\n"
        )
    assert not (tmp_path / "memories").exists()
    no_store = cli("history", "/memories/n.md", env={"REFMEM_STORE": ""})
    assert no_store.returncode == 2 and "give --store" in no_store.stderr


# --- bounds -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("actor", ["", "a\nb", "x" * 201, 7])
def test_an_actor_that_cannot_be_printed_on_one_line_is_refused(tmp_path: Path, actor: object) -> None:
    with pytest.raises(ValueError, match="an actor is a string of 1 to 200 printable characters"):
        SqliteStore(tmp_path / "m.db", actor=actor)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["versions_per_file", "bytes_per_tenant", "max_actor_chars"])
def test_history_limits_are_positive(field: str) -> None:
    with pytest.raises(ValueError, match=f"HistoryLimits.{field} must be a positive integer"):
        HistoryLimits(**{field: 0})


def test_a_failed_command_keeps_no_version(opener: Opener) -> None:
    store = opener()
    handler = MemoryHandler(store, limits={"max_file_bytes": 20})
    run(handler, command="create", path="/memories/n.md", file_text="short\n")
    assert handler.execute(
        {"command": "str_replace", "path": "/memories/n.md", "old_str": "short", "new_str": "x" * 30}
    ).is_error
    assert handler.execute({"command": "delete", "path": "/memories/none.md"}).is_error
    assert store.history(vp("/memories/n.md")) == [] and total_kept(store) == (0, 0)


def test_a_mutation_refused_after_it_wrote_leaves_no_trace_in_the_callers_transaction(opener: Opener) -> None:
    """An edit refused `changed` after its statements ran (its version kept, its generation taken, its write
    changing no row) inside a caller's transaction: rolled back to its savepoint, while the transaction's other
    mutations, before and after it, commit."""
    store = opener(tenant="savepoint")
    path = vp("/memories/e.md")
    store.write(path, b"old\n", None)
    generation = store.changes_since(0).generation
    with store.locked():
        store.write_new(vp("/memories/before.md"), b"b\n")
        with store.open_edit(path, 100) as edit:
            store.write(path, b"theirs\n", sha(b"old\n"))  # the version the edit read is gone
            with pytest.raises(OsFailure) as refused:
                edit.replace(b"mine\n")
            assert refused.value.code == "changed"
        store.write_new(vp("/memories/after.md"), b"a\n")
    assert [(v.command, v.size) for v in store.history(path)] == [("write", 4)]  # nothing kept by the refused edit
    with store.open_regular(path) as opened:
        assert opened.read_all() == b"theirs\n"
    assert store.entry(vp("/memories/before.md")) is not None and store.entry(vp("/memories/after.md")) is not None
    assert store.changes_since(generation).generation == generation + 3  # three mutations committed, not four


def test_version_records_are_plain_tuples() -> None:
    version = Version(3, 4, "ab" * 32, 0.0, None, "delete")
    assert line(version) == f"3  1970-01-01T00:00:00Z  4 bytes  {'ab' * 6}  delete  -"


def test_a_first_mutation_that_fails_leaves_the_callers_transaction_usable(opener: Opener) -> None:
    """The first mutation of a caller's transaction fails (on PostgreSQL with no savepoint: the transaction, which
    had written nothing, is rolled back and begun again, D-STORE-PG-WRITERS); the caller's later mutations in the
    same block still commit, and the failed one leaves nothing: no row, no version, no generation."""
    store = opener(tenant="first")
    taken, other = vp("/memories/taken.md"), vp("/memories/other.md")
    store.write(taken, b"kept\n", None)
    generation = store.changes_since(0).generation
    with store.locked():
        assert store.entry(taken) is not None
        with pytest.raises(Exists):
            store.write_new(taken, b"again\n")
        store.write_new(other, b"o\n")
    with store.open_regular(taken) as opened:
        assert opened.read_all() == b"kept\n"
    with store.open_regular(other) as opened:
        assert opened.read_all() == b"o\n"
    assert store.history(taken) == []
    assert store.changes_since(generation).generation == generation + 1  # the one that committed
