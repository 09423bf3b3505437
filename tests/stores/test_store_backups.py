"""Backups that are proven (D-STORE-BACKUP): SQLite's online backup of a SQLite store (`sqlite3.Connection.backup`,
taken while the store is open and has just written) and `pg_dump` of a PostgreSQL store's schema, restored with
`pg_restore` (custom format) and with `psql` (plain SQL), each give a store whose every tenant has byte-identical
listings, views and history (versions: number, size, SHA-256, time, actor, command) to the original, and that
then passes a subset of the conformance suite (standard profile) in tenants of its own beside the restored ones,
which the run leaves as they were."""

from __future__ import annotations

import hashlib
import os
import pathlib
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, MutableMapping, Tuple

import pytest
from storage_support import fill_with_history

from refmem import MemoryHandler
from refmem._listing import list_tree
from refmem.paths import VirtualPath
from refmem_harness.reference_target import over_store

TENANTS = [None, "alice", "bob"]
RESTORED_SQLITE = "REFMEM_TEST_RESTORED_SQLITE"
"""The restored SQLite database the `make_in_restored_sqlite` target keeps its cases' tenants in."""


def _fill(handler: MemoryHandler, seed: int) -> List[str]:
    """Files, folders, edits, renames and deletes, so that every table holds rows: the paths that have history."""
    return fill_with_history(
        handler, 12, lambda n: f"/memories/n{seed}/f{n}.md", lambda n: f"line {n}\nünïcödé {seed}\nEND\n",
        lambda n: f"/memories/moved{seed}/g{n}.md",
    )


def _snapshot(open_store: Callable[[Any], Any], touched: Dict[Any, List[str]]) -> Dict[Any, Any]:
    """Every tenant's listing (the whole tree, sizes included), the view of /memories, each file's view and each
    touched path's history: all byte for byte."""
    seen: Dict[Any, Any] = {}
    for tenant in TENANTS:
        store = open_store(tenant)
        handler = MemoryHandler(store)
        try:
            listed, truncated = list_tree(store, VirtualPath(()), 10, 10_000, lambda name: True)
            files = ["/memories/" + "/".join(entry.parts) for entry in listed if entry.kind == "FILE"]
            views = {path: handler.execute({"command": "view", "path": path}) for path in ["/memories"] + files}
            history = {path: store.history(VirtualPath(tuple(path.split("/")[2:]))) for path in touched[tenant]}
            seen[tenant] = (sorted(listed), truncated, views, history)
        finally:
            handler.close()
            store.close()
    assert all(len(seen[tenant][0]) == 10 for tenant in TENANTS)  # 8 files in 2 folders: filled, not empty
    assert all(sum(len(kept) for kept in seen[tenant][3].values()) == 28 for tenant in TENANTS)  # versions kept
    return seen


def _conformance(target: str, where: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The standard profile over the restored store: the first four cases of 16 families (64 cases; the whole suite
    through the PostgreSQL target is CI's, .ci/run)."""
    from conformance.cli import main

    families = ("create", "delete", "rename", "insert", "str_replace", "view-dir", "view-file", "view-range",
                "options", "unicode", "crlf", "limits", "hidden", "sizes", "paths", "input")
    runs = [part for family in families for part in ("--run", f"{family}-00[1-4]")]
    status = main(["--target", target, "--profile", "standard", "--workdir", str(where)] + runs)
    out = capsys.readouterr().out
    assert status == 0 and "verdict: PASS" in out, out[-3000:]
    assert int(out.split(" pass, ", 1)[0].rsplit("\n", 1)[-1].strip()) >= 60, out[-2000:]


def _workdir(tmp_path: Path) -> Path:
    return Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path


# --- SQLite: the online backup ------------------------------------------------------------------------------------


def _restored_tenants(root: pathlib.Path, options: MutableMapping[str, Any]) -> Tuple[Any, bool]:
    from refmem.stores.sqlite import SqliteStore

    seed = f"{pathlib.Path(root).resolve()}\0{options.pop('tenant', None) or ''}".encode()
    return SqliteStore(os.environ[RESTORED_SQLITE], tenant="case-" + hashlib.sha256(seed).hexdigest()[:24]), False


make_in_restored_sqlite = over_store(_restored_tenants)
"""The reference over the restored SQLite database, each case in a tenant of its own (a python: target)."""


def test_sqlite_online_backup_restores_a_store_that_passes_the_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from refmem.stores.sqlite import SqliteStore

    original = tmp_path / "memory.db"
    touched = {}
    for number, tenant in enumerate(TENANTS):
        store = SqliteStore(original, tenant=tenant)
        handler = MemoryHandler(store)
        touched[tenant] = _fill(handler, number)
        handler.close()
        if tenant != "bob":
            store.close()
    # the backup, taken while a store is open on the database with its last writes in the write-ahead log
    backup = tmp_path / "backup.db"
    source, target = sqlite3.connect(original), sqlite3.connect(backup)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()
    store.close()

    before = _snapshot(lambda tenant: SqliteStore(original, tenant=tenant), touched)
    restored = tmp_path / "restored" / "memory.db"
    restored.parent.mkdir()
    restored.write_bytes(backup.read_bytes())  # a restore is a copy of the backup file, the store closed
    after = _snapshot(lambda tenant: SqliteStore(restored, tenant=tenant), touched)
    assert after == before

    monkeypatch.setenv(RESTORED_SQLITE, str(restored))
    _conformance(f"python:{__name__}:make_in_restored_sqlite", _workdir(tmp_path), capsys)
    assert _snapshot(lambda tenant: SqliteStore(restored, tenant=tenant), touched) == before


# --- PostgreSQL: pg_dump, pg_restore and psql ------------------------------------------------------------------


def _tool(name: str, *arguments: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    from postgres_support import BIN

    return subprocess.run(  # noqa: S603  # nosec B603  # the cluster's own binaries, arguments of our own
        [str(BIN / name), *arguments], capture_output=True, timeout=120, check=True
    )


def _security(started: Any, database: str, schema: str) -> Tuple[List[Any], List[Any]]:
    """The schema's tables with their row-level security (enabled, forced) and its policies, as the server has
    them."""
    with started.admin(database) as connection:
        tables = connection.execute(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' ORDER BY relname", (schema,)
        ).fetchall()
        policies = connection.execute(
            "SELECT tablename, policyname, roles::text, cmd, qual, with_check FROM pg_policies "
            "WHERE schemaname = %s ORDER BY tablename, policyname", (schema,)
        ).fetchall()
    return [tuple(row) for row in tables], [tuple(row) for row in policies]


@pytest.mark.parametrize("form", ["custom", "plain"])
def test_pg_dump_restores_a_store_that_passes_the_suite(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from postgres_support import APP_ROLE, DATABASE, cluster

    from refmem.stores.postgres import PostgresStore

    started = cluster()
    dsn = started.location_dsn(tmp_path)
    schema = dsn.split("search_path=", 1)[1].split()[0].rstrip("'")
    touched = {}
    for number, tenant in enumerate(TENANTS):
        store = PostgresStore(dsn, tenant=tenant)
        try:
            touched[tenant] = _fill(MemoryHandler(store), number)
        finally:
            store.close()
    before = _snapshot(lambda tenant: PostgresStore(dsn, tenant=tenant), touched)

    dump = tmp_path / "store.dump"
    server = ["-h", str(started.socket), "-U", "postgres"]
    _tool("pg_dump", *server, "-d", DATABASE, "-n", schema, "-F", "c" if form == "custom" else "p", "-f", str(dump))
    copy = f"restored_{form}_{schema}"
    with started.admin() as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {copy}")
        connection.execute(f"CREATE DATABASE {copy} OWNER {APP_ROLE} ENCODING 'UTF8' TEMPLATE template0")
    if form == "custom":
        _tool("pg_restore", *server, "-d", copy, "--exit-on-error", "--single-transaction", str(dump))
    else:
        _tool("psql", *server, "-d", copy, "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction",
              "-f", str(dump))
    restored = started.dsn(database=copy, options=f"-c search_path={schema}")
    try:
        after = _snapshot(lambda tenant: PostgresStore(restored, tenant=tenant), touched)
        assert after == before
        security = [_security(started, database, schema) for database in (DATABASE, copy)]
        assert security[1] == security[0]  # row-level security back as it was: forced, with the same policies
        assert sum(forced for _name, _secured, forced in security[1][0]) == 4 and len(security[1][1]) >= 4

        monkeypatch.setenv("REFMEM_CONFORMANCE_POSTGRES", restored)
        _conformance("refmem+postgres", _workdir(tmp_path), capsys)
        assert _snapshot(lambda tenant: PostgresStore(restored, tenant=tenant), touched) == before
    finally:
        with started.admin() as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {copy} WITH (FORCE)")
