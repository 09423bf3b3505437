"""memory_get and memory_search over the database stores, per tenant (D-OPENCLAW-STORES): the index in memory, fresh
from the store's change journal, in this process and from another connection or process; two tenants never see each
other; whatever fails is an error result. Each test runs over SQLite and over PostgreSQL (the session's throwaway
cluster: skipped saying why where none starts, failed under REFMEM_REQUIRE_POSTGRES=1). Work is counted, never
timed."""

from __future__ import annotations

import datetime
import json
import pathlib
import subprocess
import sys
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional

import pytest

from refmem import MemoryHandler
from refmem.messages import IO_REASONS
from refmem.openclaw import OpenClawMemory
from refmem.openclaw.disk import Disk
from refmem.openclaw.tools import reply
from refmem.problems import OsFailure
from refmem.store_protocol import Store, TenantError
from refmem.stores import core
from refmem.stores.sqlite import SqliteStore
from refmem.tracked import TrackedDirectory

from .openclaw_support import NOW, paths_of

KINDS = ["sqlite", "postgres"]


class Database(NamedTuple):
    """One database for a test: `open()` is a new store (a connection of its own) over it, closed after the test;
    `kind` and `location` let another process open it too."""

    kind: str
    location: str
    open: Callable[[], Store]


def _opener(kind: str, location: str) -> Callable[[], Store]:
    if kind == "sqlite":
        return lambda: SqliteStore(location)
    from refmem.stores.postgres import PostgresStore

    return lambda: PostgresStore(location)


@pytest.fixture(params=KINDS)
def database(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Database]:
    if request.param == "sqlite":
        location = str(tmp_path / "memory.db")
    else:
        location = request.getfixturevalue("postgres").location_dsn(f"test_openclaw_stores:{tmp_path}")
    opened: List[Store] = []
    make = _opener(request.param, location)

    def open_store() -> Store:
        store = make()
        opened.append(store)
        return store

    yield Database(request.param, location, open_store)
    for store in opened:
        store.close()


def create(store: Store, tenant: Optional[str], path: str, text: str) -> None:
    result = MemoryHandler(store, tenant=tenant).execute(
        {"command": "create", "path": f"/memories/{path}", "file_text": text}
    )
    assert not result.is_error, result.output


def command(store: Store, tenant: Optional[str], **tool_input: Any) -> None:
    result = MemoryHandler(store, tenant=tenant).execute(tool_input)
    assert not result.is_error, result.output


def workspace(store: Store, tenant: str = "alice", **kwargs: Any) -> OpenClawMemory:
    return OpenClawMemory(store, tenant=tenant, clock=lambda: NOW, **kwargs)


def found(memory: OpenClawMemory, query: str) -> List[str]:
    result = memory.memory_search(query, min_score=0)
    assert result.get("status") != "error", result
    return paths_of(result)


# --- the tools over a database ------------------------------------------------------------------------


def test_search_and_get_over_a_database(database: Database) -> None:
    store = database.open()
    create(store, "alice", "MEMORY.md", "# Pets\n\nThe zebra is called Stripes.\n")
    create(store, "alice", "memory/2026-11-20.md", "Fed the zebra at noon.\n")
    create(store, "alice", "notes/zebra.md", "not a memory file: never indexed\n")
    with workspace(store) as memory:
        assert sorted(found(memory, "zebra")) == ["MEMORY.md", "memory/2026-11-20.md"]
        got = memory.memory_get("memory/2026-11-20.md")
        assert got["text"] == "Fed the zebra at noon." and got["path"] == "memory/2026-11-20.md"
        assert memory.memory_get("/memories/MEMORY.md")["text"].startswith("# Pets")
        assert memory.memory_get("memory/none.md") == {"status": "not_found", "text": "", "path": "memory/none.md"}
        assert memory.memory_get("memory")["code"] == "MEMORY_PATH_NOT_ALLOWED"
        assert memory.counts()[0] == 2
        assert memory._index_kind == "memory"  # no `.refmem/` in a database: the index is in memory, with no notice
        assert "warning" not in memory.memory_search("zebra")


def test_a_folder_where_a_memory_file_would_be_is_not_regular(database: Database) -> None:
    store = database.open()
    create(store, "alice", "memory/odd.md/inside.md", "zebra\n")
    with workspace(store) as memory:
        assert memory.memory_get("memory/odd.md")["code"] == "MEMORY_NOT_REGULAR"
        assert found(memory, "zebra") == ["memory/odd.md/inside.md"]


def test_two_tenants_never_see_each_other(database: Database) -> None:
    store = database.open()
    for tenant, canary in (("alice", "okapiquartz"), ("bob", "lemurbasalt")):  # no word in common
        create(store, tenant, "MEMORY.md", f"{canary} lives here\n")
        create(store, tenant, "memory/2026-11-20.md", f"{canary} in the log\n")
    alice, bob = workspace(store, "alice"), workspace(store, "bob")
    try:
        assert sorted(found(alice, "okapiquartz")) == ["MEMORY.md", "memory/2026-11-20.md"]
        assert sorted(found(bob, "lemurbasalt")) == ["MEMORY.md", "memory/2026-11-20.md"]
        assert found(bob, "okapiquartz") == [] and found(alice, "lemurbasalt") == []
        everything = json.dumps(bob.memory_search("lives here in the log okapiquartz lemurbasalt", min_score=0))
        assert "lemurbasalt" in everything and "okapiquartz" not in everything
        assert bob.memory_get("MEMORY.md")["text"] == "lemurbasalt lives here"
        assert alice.memory_get("memory/2026-11-20.md")["text"] == "okapiquartz in the log"
    finally:
        alice.close()
        bob.close()


def test_a_tenant_is_checked_and_what_was_opened_for_it_is_closed(database: Database) -> None:
    store = database.open()
    with pytest.raises(TenantError):
        OpenClawMemory(store, tenant="Alice/..")
    memory = workspace(store, "alice")
    opened = memory.root
    assert opened is not store and getattr(opened, "tenant", None) == "alice"
    with pytest.raises(TenantError):  # a tenant's store has no tenants below it
        OpenClawMemory(opened, tenant="bob")
    memory.close()
    assert memory.memory_get("MEMORY.md")["code"] == "MEMORY_READ_FAILED"  # its store is closed: an error result
    create(store, "alice", "MEMORY.md", "the caller's store stays open\n")
    with OpenClawMemory(store) as shared:  # no tenant: the caller's store, used as it is and left open
        assert shared.root is store
    create(store, None, "memory/after.md", "the caller's store is still open\n")


# --- freshness: the journal -------------------------------------------------------------------------


def test_the_memory_tool_s_writes_are_found_by_the_next_search(database: Database) -> None:
    reader, writer = database.open(), database.open()  # two connections, as two processes on two hosts
    create(writer, "alice", "memory/2026-11-20.md", "first entry\n")
    with workspace(reader) as memory:
        assert found(memory, "first") == ["memory/2026-11-20.md"]
        create(writer, "alice", "memory/topics/zebra.md", "striped horse\n")
        assert found(memory, "striped") == ["memory/topics/zebra.md"]
        # The same size, other bytes: a state of size alone would miss it.
        zebra = "/memories/memory/topics/zebra.md"
        command(writer, "alice", command="str_replace", path=zebra, old_str="striped", new_str="spotted")
        assert found(memory, "spotted") == ["memory/topics/zebra.md"] and found(memory, "striped") == []
        topics, animals = "/memories/memory/topics", "/memories/memory/animals"
        command(writer, "alice", command="rename", old_path=topics, new_path=animals)
        assert found(memory, "spotted") == ["memory/animals/zebra.md"]
        command(writer, "alice", command="delete", path="/memories/memory/animals")
        assert found(memory, "spotted") == []
        command(writer, "alice", command="delete", path="/memories/memory/2026-11-20.md")
        assert found(memory, "first") == []
        assert memory.memory_get("memory/2026-11-20.md")["status"] == "not_found"
        assert memory._fresh().full_scans == 1  # the first search only: the journal named the rest


def test_another_process_s_writes_are_found(database: Database, tmp_path: pathlib.Path) -> None:
    script = (
        "import sys\n"
        "from refmem import MemoryHandler\n"
        "if sys.argv[1] == 'sqlite':\n"
        "    from refmem.stores.sqlite import SqliteStore as Opened\n"
        "else:\n"
        "    from refmem.stores.postgres import PostgresStore as Opened\n"
        "store = Opened(sys.argv[2])\n"
        "result = MemoryHandler(store, tenant='alice').execute({'command': sys.argv[3], 'path': sys.argv[4],"
        " 'file_text': 'written by another process: okapi'})\n"
        "store.close()\n"
        "sys.exit(1 if result.is_error else 0)\n"
    )

    def run(tool: str, path: str) -> None:
        done = subprocess.run(  # noqa: S603 - our interpreter, our script
            [sys.executable, "-c", script, database.kind, database.location, tool, path],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=str(pathlib.Path(__file__).resolve().parents[2]),
        )
        assert done.returncode == 0, done.stderr

    store = database.open()
    create(store, "alice", "MEMORY.md", "nothing yet\n")
    with workspace(store) as memory:
        assert found(memory, "okapi") == []
        run("create", "/memories/memory/2026-11-21.md")
        assert found(memory, "okapi") == ["memory/2026-11-21.md"]
        run("delete", "/memories/memory/2026-11-21.md")
        assert found(memory, "okapi") == []


def test_past_changes_max_the_index_rescans(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "CHANGES_MAX", 3)
    store = database.open()
    create(store, "alice", "MEMORY.md", "nothing yet\n")
    with workspace(store) as memory:
        assert found(memory, "gnu") == []
        for n in range(5):  # more paths than the journal names: it says "rescan"
            create(store, "alice", f"memory/gnu-{n}.md", f"gnu number {n}\n")
        assert sorted(found(memory, "gnu")) == [f"memory/gnu-{n}.md" for n in range(5)]
        assert memory._fresh().full_scans == 2


def test_the_daily_log_is_written_in_the_store(database: Database) -> None:
    store = database.open()
    with workspace(store) as memory:
        assert memory.append_daily("met the ibis", day=datetime.date(2026, 11, 22))["status"] == "ok"
        assert memory.append_daily("and again", day=datetime.date(2026, 11, 22))["status"] == "ok"
        assert found(memory, "ibis") == ["memory/2026-11-22.md"]
        create(store, "alice", "memory/2026-11-23.md/x.md", "a folder in the way\n")
        assert memory.append_daily("x", day=datetime.date(2026, 11, 23))["code"] == "MEMORY_NOT_REGULAR"
    view = MemoryHandler(store, tenant="alice").execute({"command": "view", "path": "/memories/memory/2026-11-22.md"})
    assert "met the ibis" in view.output and "and again" in view.output
    bob = MemoryHandler(store, tenant="bob").execute({"command": "view", "path": "/memories/memory/2026-11-22.md"})
    assert bob.is_error


# --- work is bounded by what changed -------------------------------------------------------------------


class CountingStore(SqliteStore):
    reads: List[str] = []
    listings: List[str] = []

    def open_regular(self, path: Any, refuse_hard_links: bool = True) -> Any:
        CountingStore.reads.append(path.canonical)
        return super().open_regular(path, refuse_hard_links)

    def children(self, path: Any, *args: Any) -> Any:
        CountingStore.listings.append(path.canonical)
        return super().children(path, *args)


@pytest.mark.parametrize("files", [20, 40])
def test_a_search_after_one_write_reads_that_file_only(tmp_path: pathlib.Path, files: int) -> None:
    store = CountingStore(tmp_path / "memory.db", tenant="alice")
    try:
        for n in range(files):
            create(store, None, f"memory/log-{n:03}.md", f"entry {n}\n")
        memory = OpenClawMemory(store, clock=lambda: NOW)
        assert len(found(memory, "entry")) == 6
        create(store, None, "memory/log-007.md.md", "antelope\n")
        CountingStore.reads, CountingStore.listings = [], []
        assert found(memory, "antelope") == ["memory/log-007.md.md"]
        assert CountingStore.reads == ["/memories/memory/log-007.md.md"] * 2  # its state, then its text
        assert CountingStore.listings == ["/memories/memory/log-007.md.md"]  # is it a folder? (one query)
        CountingStore.reads, CountingStore.listings = [], []
        found(memory, "antelope")
        assert CountingStore.reads == [] and CountingStore.listings == []  # nothing changed: nothing read
    finally:
        store.close()


# --- whatever fails is an error result ------------------------------------------------------------------


class BrokenStore:
    """A store whose every call fails with an engine's error naming a host path (never to be shown)."""

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"could not open {self.secret}/memory.db")

    entry = open_regular = children = extent = write_new = open_edit = delete = rename = _fail
    locked = record_use = last_access = changes_since = for_tenant = close = _fail


def test_a_failing_store_gives_error_results_naming_nothing(tmp_path: pathlib.Path) -> None:
    secret = str(tmp_path)
    memory = OpenClawMemory(BrokenStore(secret))  # type: ignore[arg-type]
    answers: List[Dict[str, Any]] = [
        reply(memory, "memory_get", {"path": "MEMORY.md"}),
        reply(memory, "memory_search", {"query": "zebra"}),
    ]
    assert [answer["result"]["code"] for answer in answers] == ["MEMORY_READ_FAILED", "MEMORY_INDEX_FAILED"]
    assert all(answer["is_error"] and "raised" not in answer for answer in answers)
    log = memory.append_daily("a note")
    assert log["code"] == "MEMORY_WRITE_FAILED"
    assert secret not in json.dumps(answers) + json.dumps(log) and "Traceback" not in json.dumps(answers)


def test_a_closed_store_gives_error_results(database: Database) -> None:
    store = database.open()
    create(store, "alice", "MEMORY.md", "zebra\n")
    memory = OpenClawMemory(store, tenant=None)
    store.close()
    assert reply(memory, "memory_get", {"path": "MEMORY.md"})["result"]["code"] == "MEMORY_READ_FAILED"
    assert reply(memory, "memory_search", {"query": "zebra"})["result"]["code"] == "MEMORY_INDEX_FAILED"


def test_a_subtree_is_reconciled_from_the_index_rows_below_it_only(tmp_path: pathlib.Path) -> None:
    store = SqliteStore(tmp_path / "memory.db", tenant="alice")
    try:
        for path in ("memory/a.md", "memory/a/x.md", "memory/ab/x.md", "memory/a0.md"):
            create(store, None, path, "yak\n")
        memory = OpenClawMemory(store, clock=lambda: NOW)
        assert len(found(memory, "yak")) == 4
        index = memory._open_index()
        # Scope takes everything: `below` alone keeps the other files (".", "b" and "0" sort around "/").
        dropped = index.reconcile(memory.disk, memory.limits, {}, lambda path: True, below="memory/a")
        assert dropped.removed == 1
        assert sorted(found(memory, "yak")) == ["memory/a.md", "memory/a0.md", "memory/ab/x.md"]
    finally:
        store.close()


def test_the_allow_list_and_read_only_over_a_database(database: Database) -> None:
    store = database.open()
    create(store, "alice", "MEMORY.md", "yak at the top\n")
    create(store, "alice", "memory/2026-11-20.md", "yak in the log\n")
    with workspace(store, allow=["memory/*"], read_only=True) as memory:
        assert found(memory, "yak") == ["memory/2026-11-20.md"]
        assert memory.memory_get("MEMORY.md")["code"] == "MEMORY_PATH_NOT_ALLOWED"
        assert memory.append_daily("a note", day=datetime.date(2026, 11, 21))["code"] == "MEMORY_READ_ONLY"


class FlakyStore(SqliteStore):
    """A database that is busy when told: its reads and its journal fail as an engine's would."""

    busy_reads = False
    busy_journal = False

    def open_regular(self, path: Any, refuse_hard_links: bool = True) -> Any:
        if FlakyStore.busy_reads:
            raise OsFailure("busy")
        return super().open_regular(path, refuse_hard_links)

    def changes_since(self, generation: int) -> Any:
        if FlakyStore.busy_journal:
            raise OsFailure("busy")
        return super().changes_since(generation)


def test_a_search_that_failed_loses_no_change(tmp_path: pathlib.Path) -> None:
    store = FlakyStore(tmp_path / "memory.db", tenant="alice")
    FlakyStore.busy_reads = FlakyStore.busy_journal = False
    try:
        create(store, None, "MEMORY.md", "yak\n")
        memory = OpenClawMemory(store, clock=lambda: NOW)
        assert found(memory, "yak") == ["MEMORY.md"]
        create(store, None, "memory/2026-11-20.md", "gnu\n")
        FlakyStore.busy_reads = True  # the file the journal names cannot be read: the search says so
        failed = memory.memory_search("gnu")
        assert failed["code"] == "MEMORY_INDEX_FAILED" and failed["error"].endswith(IO_REASONS["busy"])
        FlakyStore.busy_reads = False
        assert found(memory, "gnu") == ["memory/2026-11-20.md"]  # the journal is asked again from where it was
        create(store, None, "memory/2026-11-21.md", "ibex\n")
        FlakyStore.busy_journal = True  # a journal that fails means the full scan, never a stale index
        assert found(memory, "ibex") == ["memory/2026-11-21.md"]
        assert memory._fresh().full_scans == 2
    finally:
        FlakyStore.busy_reads = FlakyStore.busy_journal = False
        store.close()


def test_tenants_over_the_filesystem_store_too(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "memories"
    for tenant, canary in (("alice", "okapiquartz"), ("bob", "lemurbasalt")):
        handler = MemoryHandler(root, tenant=tenant)
        assert not handler.execute({"command": "create", "path": "/memories/MEMORY.md", "file_text": canary}).is_error
        handler.close()
    with OpenClawMemory(root, tenant="alice") as alice, OpenClawMemory(TrackedDirectory(root), tenant="bob") as bob:
        assert found(alice, "okapiquartz") == ["MEMORY.md"] and found(alice, "lemurbasalt") == []
        assert found(bob, "lemurbasalt") == ["MEMORY.md"] and found(bob, "okapiquartz") == []
        assert isinstance(alice.disk, Disk) and alice._index_kind == "file"  # the directory's own walk and index file
