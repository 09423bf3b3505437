"""A database store prunes itself (D-STORE-SQL-PRUNE), over SQLite and PostgreSQL: the files whose last use (made,
changed, renamed into place, viewed: D-STORE-SQL-USES) is older than the cutoff go, as a delete takes them (their
content kept as a version of the command `prune`), then the folders they leave empty; a dry run changes nothing;
one tenant's prune never touches another's; and `refmem prune --store` does it from the command line."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
from sql_store_support import Opener, refmem_cli, run, vp

from refmem import MemoryHandler
from refmem._listing import list_tree
from refmem.problems import DIR
from refmem.stores import core, history
from refmem.stores.sqlite import SqliteStore

DAY = 86400.0
START = 1_700_000_000.0


class Clock:
    """The SQL core's and history's `time` module, at a time the test sets."""

    def __init__(self) -> None:
        self.now = START

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(core, "time", made)
    monkeypatch.setattr(history, "time", made)
    return made


def tree(store: Any) -> List[str]:
    listed, _ = list_tree(store, vp("/memories"), 64, 10_000, lambda name: True)
    return sorted("/".join(entry.parts) + ("/" if entry.kind == DIR else "") for entry in listed)


def lay_out(handler: MemoryHandler, clock: Clock) -> None:
    """Files made at START; then, 100 days later, some of them used in each way a use is recorded."""
    for path in ("a.md", "d/x.md", "d/y.md", "e/f/z.md", "edited.md", "viewed.md", "old-name.md", "g/k.md"):
        run(handler, command="create", path=f"/memories/{path}", file_text=f"{path}\n")
    run(handler, command="delete", path="/memories/g/k.md")  # g: a folder empty before the prune
    clock.now = START + 100 * DAY
    run(handler, command="str_replace", path="/memories/edited.md", old_str="edited", new_str="EDITED")
    run(handler, command="insert", path="/memories/d/y.md", insert_line=0, insert_text="used\n")
    run(handler, command="view", path="/memories/viewed.md")
    run(handler, command="rename", old_path="/memories/old-name.md", new_path="/memories/renamed.md")


GONE_FILES = ["/memories/a.md", "/memories/d/x.md", "/memories/e/f/z.md"]
GONE_FOLDERS = ["/memories/e", "/memories/e/f"]


def test_a_prune_removes_the_files_unused_since_the_cutoff_and_the_folders_they_emptied(
    opener: Opener, clock: Clock
) -> None:
    store = opener(tenant="t")
    handler = MemoryHandler(store)
    lay_out(handler, clock)
    before = tree(store)
    cutoff = clock.now - 30 * DAY

    removed, kept = store.prune(cutoff, dry_run=True)
    assert (removed, kept) == (sorted(GONE_FILES) + GONE_FOLDERS, 4)
    assert tree(store) == before and store.history(vp("/memories/a.md")) == []  # a dry run changes nothing

    removed, kept = store.prune(cutoff)
    assert (removed, kept) == (sorted(GONE_FILES) + GONE_FOLDERS, 4)
    assert tree(store) == ["d/", "d/y.md", "edited.md", "g/", "renamed.md", "viewed.md"]
    kept_versions = store.history(vp("/memories/a.md"))
    assert [(version.command, version.size) for version in kept_versions] == [("prune", len("a.md\n"))]
    assert store.restore(vp("/memories/a.md"), kept_versions[0].number)  # nothing a prune does is unrecoverable
    assert run(handler, command="view", path="/memories/a.md").endswith("1\ta.md")
    assert store.prune(cutoff) == ([], 5)  # restored just now: a change, so a use


def test_a_prune_is_one_tenants_alone(opener: Opener, clock: Clock) -> None:
    alice, bob = opener(tenant="alice"), opener(tenant="bob")
    for store in (alice, bob):
        run(MemoryHandler(store), command="create", path="/memories/old.md", file_text="old\n")
    clock.now = START + 100 * DAY
    assert alice.prune(clock.now - 30 * DAY) == (["/memories/old.md"], 0)
    assert tree(alice) == [] and tree(bob) == ["old.md"]


def _cli(*arguments: str, environment: Dict[str, str]) -> subprocess.CompletedProcess:
    return refmem_cli("prune", *arguments, environment=environment)


def test_refmem_prune_store_prunes_a_database_from_the_command_line(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    store = SqliteStore(database, tenant="alice")
    handler = MemoryHandler(store)
    for path in ("old.md", "deep/old.md", "new.md"):
        run(handler, command="create", path=f"/memories/{path}", file_text="x\n")
    store.close()
    with sqlite3.connect(database) as raw:  # two of them last used 40 days ago
        raw.execute("UPDATE refmem_nodes SET used = used - 40 * 86400 WHERE path IN ('old.md', 'deep/old.md')")
    location = f"sqlite:///{database}"
    environment = {key: value for key, value in os.environ.items() if key != "REFMEM_STORE"}

    dry = _cli("--store", location, "--tenant", "alice", "--older-than", "30d", "--dry-run", environment=environment)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == [
        "would remove /memories/deep/old.md", "would remove /memories/old.md", "would remove /memories/deep",
        "3 would remove, 1 kept",
    ]
    done = _cli("--older-than", "30d", "--tenant", "alice", environment=dict(environment, REFMEM_STORE=location))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "3 removed, 1 kept" and str(database) not in done.stdout + done.stderr
    store = SqliteStore(database, tenant="alice")
    try:
        assert tree(store) == ["new.md"]
    finally:
        store.close()

    both = _cli("--root", str(tmp_path), "--store", location, "--older-than", "30d", environment=environment)
    assert both.returncode == 2 and "not both" in both.stderr
    neither = _cli("--older-than", "30d", environment=environment)
    assert neither.returncode == 2 and "--store" in neither.stderr
