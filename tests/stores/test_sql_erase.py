"""A tenant erased whole (D-STORE-SQL-ERASE), over SQLite and PostgreSQL: its memories, kept versions and change
journal go in one transaction, another tenant's stay byte for byte, the tenant is usable and empty after, a cache
that knew a generation before the erase is told to rescan; and `refmem db erase` does it from the command line,
only when told the tenant and --yes, never printing the location."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest
from sql_store_support import Opener, refmem_cli, run, vp

from refmem import MemoryHandler
from refmem._listing import list_tree
from refmem._store_extras import ErasableStore
from refmem.stores.sqlite import SqliteStore


def lay_out(handler: MemoryHandler, name: str) -> None:
    """Files in folders, an edit (a version kept), a delete (another) and a rename: every table has rows."""
    run(handler, command="create", path="/memories/a.md", file_text=f"{name} a\n")
    run(handler, command="create", path="/memories/d/e/f.md", file_text=f"{name} f\n")
    run(handler, command="str_replace", path="/memories/a.md", old_str=f"{name} a", new_str=f"{name} A")
    run(handler, command="create", path="/memories/gone.md", file_text="x\n")
    run(handler, command="delete", path="/memories/gone.md")
    run(handler, command="rename", old_path="/memories/d/e/f.md", new_path="/memories/d/f.md")


def seen(handler: MemoryHandler) -> List[str]:
    """Everything the model can see: the listing and each file's page."""
    return [run(handler, command="view", path=path) for path in ("/memories", "/memories/a.md", "/memories/d/f.md")]


def test_an_erase_removes_one_tenant_whole_and_leaves_the_other_as_it_was(opener: Opener) -> None:
    alice, bob = opener(tenant="alice"), opener(tenant="bob")
    assert isinstance(alice, ErasableStore)
    for store, name in ((alice, "alice"), (bob, "bob")):
        lay_out(MemoryHandler(store), name)
    bob_before = seen(MemoryHandler(bob))
    bob_history = [bob.history(vp("/memories/a.md")), bob.history(vp("/memories/gone.md"))]
    assert all(bob_history)
    generation = alice.changes_since(0).generation
    assert alice.changes_since(generation).paths == ()

    assert alice.erase() == (4, 2)  # a.md, d, d/f.md, e (left empty by the rename); a.md's and gone.md's versions

    handler = MemoryHandler(alice)
    listed, _ = list_tree(alice, vp("/memories"), 64, 10_000, lambda name: True)
    assert listed == []
    assert alice.history(vp("/memories/a.md")) == [] and alice.history(vp("/memories/gone.md")) == []
    assert alice.changes_since(generation).paths is None  # a cache of before: rescan
    # Bob's memories, versions and journal as they were.
    assert seen(MemoryHandler(bob)) == bob_before
    assert [bob.history(vp("/memories/a.md")), bob.history(vp("/memories/gone.md"))] == bob_history
    # Alice starts again, empty, with nothing of before coming back.
    run(handler, command="create", path="/memories/a.md", file_text="new\n")
    assert run(handler, command="view", path="/memories/a.md").endswith("1\tnew")
    assert len(alice.history(vp("/memories/a.md"))) == 0
    assert alice.erase() == (1, 0)
    assert alice.erase() == (0, 0)


def test_an_erase_is_one_transaction(opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after the first table's rows went leaves every row there."""
    alice = opener(tenant="alice")
    lay_out(MemoryHandler(alice), "alice")
    before = seen(MemoryHandler(alice))
    statements = list(alice.queries.erase_rows)
    broken = type(alice.queries)(alice.queries.dialect)
    broken.erase_rows = (statements[0], "DELETE FROM no_such_table WHERE tenant = " + alice.queries.dialect.placeholder)
    monkeypatch.setattr(alice, "queries", broken)
    with pytest.raises(Exception):  # noqa: B017, PT011  # the engine's error as the store raises it
        alice.erase()
    monkeypatch.undo()
    assert seen(MemoryHandler(alice)) == before
    assert alice.history(vp("/memories/a.md"))


def _cli(*arguments: str, environment: Dict[str, str]) -> subprocess.CompletedProcess:
    return refmem_cli("db", *arguments, environment=environment)


def test_refmem_db_erase_needs_the_tenant_and_yes(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    for name in ("alice", "bob"):
        store = SqliteStore(database, tenant=name)
        lay_out(MemoryHandler(store), name)
        store.close()
    location = f"sqlite:///{database}"
    environment = {key: value for key, value in os.environ.items() if key != "REFMEM_STORE"}

    def rows(tenant: str) -> int:
        with sqlite3.connect(database) as raw:
            return sum(raw.execute(f"SELECT count(*) FROM {table} WHERE tenant = ?", (tenant,)).fetchone()[0]  # noqa: S608
                       for table in ("refmem_nodes", "refmem_versions", "refmem_changes"))

    alice_rows, bob_rows = rows("alice"), rows("bob")
    assert alice_rows > 0 and bob_rows > 0
    refusals = [
        (("erase", "--store", location), "needs --tenant"),
        (("erase", "--store", location, "--tenant", "alice"), "--yes"),
        (("erase", "--store", location, "--tenant", "Alice!", "--yes"), "cannot use the tenant"),
        (("erase", "--store", f"sqlite:///{tmp_path}/none.db", "--tenant", "alice", "--yes"), "no SQLite database"),
        (("migrate", "--store", location, "--tenant", "alice"), "for db erase"),
    ]
    for arguments, said in refusals:
        refused = _cli(*arguments, environment=environment)
        assert refused.returncode == 2 and said in refused.stderr, (arguments, refused.stderr)
        assert str(tmp_path) not in refused.stdout + refused.stderr
    assert not (tmp_path / "none.db").exists()
    assert (rows("alice"), rows("bob")) == (alice_rows, bob_rows)

    done = _cli("erase", "--tenant", "alice", "--yes", environment=dict(environment, REFMEM_STORE=location))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "erased the tenant alice: 4 files and folders, 2 kept versions\n"
    assert str(tmp_path) not in done.stdout + done.stderr
    assert (rows("alice"), rows("bob")) == (0, bob_rows)
    again = _cli("erase", "--store", location, "--tenant", "alice", "--yes", environment=environment)
    assert (again.returncode, again.stdout) == (0, "the tenant alice held nothing: nothing erased\n")
