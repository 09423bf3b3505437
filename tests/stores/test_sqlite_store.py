"""What the SQLite store promises beyond the storage contract (tests/stores/test_storage_contract.py runs that over it):
many processes writing at once lose nothing, tenants never meet, a killed writer leaves the database whole, a
network filesystem and a newer schema are refused with a clear error, and a busy database is a result, not a wait
without end. None of these verdicts depends on the machine's speed: they count tokens, rows and kills."""

from __future__ import annotations

import multiprocessing
import os
import random
import re
import signal
import sqlite3
import time
from pathlib import Path
from typing import Dict, List

import pytest

from refmem import MemoryHandler
from refmem._store_messages import STORE_NETWORK_FS
from refmem.messages import IO_REASONS, render
from refmem.stores import StoreError, mounts
from refmem.stores.schema import SCHEMA_VERSION
from refmem.stores.sqlite import SqliteStore, reason_of

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def ok(handler: MemoryHandler, command: Dict[str, object]) -> str:
    result = handler.execute(command)
    assert not result.is_error, result.output
    return result.output


# --- the network filesystem check -----------------------------------------------------------------

MOUNTINFO = "\n".join(
    [
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
        "30 22 0:40 / /srv/nfs rw,relatime shared:9 - nfs4 server:/export rw,vers=4.2",
        "31 30 0:41 / /srv/nfs/local rw shared:10 - tmpfs tmpfs rw",
        "32 22 0:42 / /mnt/with\\040space rw - cifs //host/share rw",
        "33 22 0:43 / /home/u/remote rw - fuse.sshfs u@host:/ rw",
        "34 22 0:44 / /home/u/crypt rw - fuse.gocryptfs /dev/fuse rw",
        "35 22 0:45 / /srv/nfs2 rw - ext4 /dev/sdb1 rw",
        "36 22 0:46 / /srv/nfs2 rw - nfs host:/b rw",  # a later mount over the same point hides the earlier one
        "garbage line without the separator",
    ]
)


@pytest.mark.parametrize(
    "path, kind, network",
    [
        ("/var/lib/app/memory.db", "ext4", False),
        ("/srv/nfs/memory.db", "nfs4", True),
        ("/srv/nfs", "nfs4", True),
        ("/srv/nfsx/memory.db", "ext4", False),  # a name that only starts like the mount point
        ("/srv/nfs/local/memory.db", "tmpfs", False),  # a local mount inside a network one
        ("/mnt/with space/m.db", "cifs", True),
        ("/home/u/remote/m.db", "fuse.sshfs", True),
        ("/home/u/crypt/m.db", "fuse.gocryptfs", False),
        ("/srv/nfs2/m.db", "nfs", True),
    ],
)
def test_the_filesystem_type_decides(path: str, kind: str, network: bool) -> None:
    assert mounts.filesystem_type(path, MOUNTINFO) == kind
    assert mounts.is_network(kind) is network


@pytest.mark.parametrize("kind", ["nfs", "nfs4", "NFS4", "cifs", "smb3", "smbfs", "fuse.sshfs", "sshfs", "9p", "afs"])
def test_network_types_are_refused(kind: str) -> None:
    assert mounts.is_network(kind)


@pytest.mark.parametrize("kind", [None, "ext4", "xfs", "btrfs", "tmpfs", "zfs", "overlay", "fuse.gocryptfs", "fuse"])
def test_local_types_are_accepted(kind: str) -> None:
    assert not mounts.is_network(kind)


def test_a_database_on_a_network_filesystem_is_refused_naming_no_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mounts, "network_type_of", lambda path: "nfs4")
    where = tmp_path / "secret-host-folder" / "memory.db"
    where.parent.mkdir()
    with pytest.raises(StoreError) as refused:
        SqliteStore(where)
    assert str(refused.value) == STORE_NETWORK_FS.format(kind="nfs4")
    assert str(tmp_path) not in str(refused.value) and "secret-host-folder" not in str(refused.value)
    assert not where.exists()  # refused before anything was made
    SqliteStore(where, allow_network_filesystem=True).close()  # the deployer's explicit choice


def test_the_real_mount_table_is_read(tmp_path: Path) -> None:
    if not os.path.exists(mounts.MOUNTINFO):
        pytest.skip("no /proc/self/mountinfo on this system")
    with open(mounts.MOUNTINFO, encoding="utf-8", errors="surrogateescape") as table:
        assert mounts.filesystem_type(str(tmp_path.resolve()), table.read()) is not None


# --- the schema's version and what is not a database ----------------------------------------------


def test_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    where = tmp_path / "memory.db"
    SqliteStore(where).close()
    with sqlite3.connect(where) as db:
        db.execute("UPDATE refmem_schema SET version = ?", (SCHEMA_VERSION + 1,))
    before = where.read_bytes()
    with pytest.raises(StoreError) as refused:
        SqliteStore(where)
    assert f"version {SCHEMA_VERSION + 1}, newer than this refmem reads (version {SCHEMA_VERSION})" in str(
        refused.value
    )
    assert str(tmp_path) not in str(refused.value)
    assert where.read_bytes() == before


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    where = tmp_path / "notes.txt"
    where.write_bytes(b"these are somebody's notes, not a database\n" * 200)
    with pytest.raises(StoreError) as refused:
        SqliteStore(where)
    assert "not a database" in str(refused.value) and str(tmp_path) not in str(refused.value)
    assert where.read_bytes().startswith(b"these are somebody's notes")


def test_the_schema_version_is_recorded(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "m.db").close()
    with sqlite3.connect(tmp_path / "m.db") as db:
        assert db.execute("SELECT version FROM refmem_schema").fetchall() == [(SCHEMA_VERSION,)]
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# --- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, reason",
    [
        ("database is locked", "busy"),
        ("disk I/O error", "io"),
        ("database or disk is full", "no_space"),
        ("attempt to write a readonly database", "read_only_fs"),
        ("database disk image is malformed", "io"),
        ("something new", "os"),
    ],
)
def test_engine_errors_become_io_reasons(text: str, reason: str) -> None:
    assert reason_of(sqlite3.OperationalError(text)) == reason
    assert reason in IO_REASONS


@pytest.mark.parametrize(
    "code, reason",
    [(13, "no_space"), (10 | (19 << 8), "no_space"), (10 | (3 << 8), "io"), (10, "io"), (5 | (1 << 8), "busy")],
)
def test_engine_error_codes_become_io_reasons(code: int, reason: str) -> None:
    """By code where the error has one (Python 3.11+): SQLITE_IOERR_SHMSIZE, the `-shm` file that cannot grow on a
    full disk, is `no_space` though its primary code is SQLITE_IOERR (tests/filesystem/test_full_disk.py meets it for real)."""
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    assert reason_of(error) == reason


def test_a_busy_database_is_a_result_after_bounded_retries(tmp_path: Path) -> None:
    where = tmp_path / "m.db"
    holder = SqliteStore(where)
    waiting = SqliteStore(where, busy_seconds=0.05, busy_retries=2)
    handler = MemoryHandler(waiting)
    try:
        with holder.locked():  # another process's long transaction
            result = handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "x"})
        assert result == render("io_error", action="create", path="/memories/a.md", reason=IO_REASONS["busy"])
        ok(handler, {"command": "create", "path": "/memories/a.md", "file_text": "x"})  # free again: it works
    finally:
        waiting.close()
        holder.close()


# --- tenants -----------------------------------------------------------------------------------------

HOSTILE_PATHS = [
    "/memories/../memories/x.md", "/memories/%2e%2e/x.md", "/memories/.refmem/tenants/bob/secret.md",
    "/memories/bob/secret.md", "/memories/../bob/secret.md", "/memories/secret.md", "/memories/x\u0000.md",
    "/memories/' OR tenant='bob", "/memories/a%' OR '1'='1", "/memories/_/secret.md", "/memories/*",
    "/memories/secret.md/", "/memories//secret.md", "/memories/SECRET.md",
]


def test_tenants_never_see_each_other_whatever_the_paths(tmp_path: Path) -> None:
    where = tmp_path / "m.db"
    shared = SqliteStore(where)
    alice = MemoryHandler(shared, tenant="alice")
    bob = MemoryHandler(shared, tenant="bob")
    canary = "CANARY-bob-7f3a"
    try:
        ok(bob, {"command": "create", "path": "/memories/secret.md", "file_text": canary})
        ok(bob, {"command": "create", "path": "/memories/bob/secret.md", "file_text": canary})
        outputs: List[str] = []
        for path in HOSTILE_PATHS:
            for command in (
                {"command": "view", "path": path},
                {"command": "create", "path": path, "file_text": "alice's"},
                {"command": "str_replace", "path": path, "old_str": "CANARY", "new_str": "gone"},
                {"command": "insert", "path": path, "insert_line": 0, "insert_text": "alice's\n"},
                {"command": "rename", "old_path": path, "new_path": "/memories/taken.md"},
                {"command": "view", "path": "/memories/taken.md"},
                {"command": "delete", "path": path},
                {"command": "view", "path": "/memories"},
            ):
                outputs.append(alice.execute(command).output)
        assert not [output for output in outputs if canary in output]
        assert ok(bob, {"command": "view", "path": "/memories/secret.md"}).endswith("1\t" + canary)
        assert ok(bob, {"command": "view", "path": "/memories/bob/secret.md"}).endswith("1\t" + canary)
        assert "alice" not in ok(bob, {"command": "view", "path": "/memories"})
        with sqlite3.connect(where) as db:
            rows = db.execute("SELECT tenant, count(*) FROM refmem_nodes GROUP BY tenant ORDER BY tenant").fetchall()
            bobs = db.execute("SELECT path, data FROM refmem_nodes WHERE tenant = 'bob' AND kind = 'file'").fetchall()
        assert {tenant for tenant, _ in rows} <= {"alice", "bob"}
        assert sorted(bobs) == [("bob/secret.md", canary.encode()), ("secret.md", canary.encode())]
    finally:
        alice.close()
        bob.close()
        shared.close()


# --- many processes at once -----------------------------------------------------------------------

WRITERS = 16
ROUNDS = 12
SHARED = ("/memories/shared/a.md", "/memories/shared/b.md")


def _until_done(handler: MemoryHandler, command: Dict[str, object]) -> None:
    """Run `command` until it succeeds: another writer may have the file renamed away for a moment."""
    for _ in range(5000):
        result = handler.execute(command)
        if not result.is_error:
            return
        time.sleep(0.001)
    raise AssertionError(f"never succeeded: {command}: {result.output}")


def _writer(where: str, number: int) -> None:
    store = SqliteStore(where, busy_retries=50)  # its own connection, as another host's process would have
    handler = MemoryHandler(store)
    rng = random.Random(number)
    try:
        for round_number in range(ROUNDS):
            token = f"tok-{number:02d}-{round_number:02d}"
            shared = SHARED[rng.randrange(len(SHARED))]
            step = (number + round_number) % 4
            if step == 0:  # a read-modify-write on a shared file
                _until_done(handler, {"command": "str_replace", "path": shared, "old_str": "HEAD\n",
                                      "new_str": f"HEAD\n{token}\n"})
            elif step == 1:
                _until_done(handler, {"command": "insert", "path": shared, "insert_line": 1,
                                      "insert_text": f"{token}\n"})
            elif step == 2:  # a new file, then moved into a shared folder
                mine = f"/memories/w{number}/{token}.md"
                _until_done(handler, {"command": "create", "path": mine, "file_text": f"{token}\n"})
                _until_done(handler, {"command": "rename", "old_path": mine, "new_path": f"/memories/moved/{token}.md"})
            else:  # a shared file renamed away and back while the others write it
                away = f"{shared}.{number}"
                _until_done(handler, {"command": "rename", "old_path": shared, "new_path": away})
                _until_done(handler, {"command": "insert", "path": away, "insert_line": 1, "insert_text": f"{token}\n"})
                _until_done(handler, {"command": "rename", "old_path": away, "new_path": shared})
    finally:
        handler.close()
        store.close()


@needs_fork
def test_sixteen_processes_lose_no_update(tmp_path: Path) -> None:
    where = tmp_path / "m.db"
    store = SqliteStore(where)
    handler = MemoryHandler(store)
    try:
        for shared in SHARED:
            ok(handler, {"command": "create", "path": shared, "file_text": "HEAD\n"})
        context = multiprocessing.get_context("fork")
        workers = [context.Process(target=_writer, args=(str(where), n)) for n in range(WRITERS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(300)
        assert [worker.exitcode for worker in workers] == [0] * WRITERS
        text = ""
        for path in SHARED:
            text += ok(handler, {"command": "view", "path": path}) + "\n"
        listing = ok(handler, {"command": "view", "path": "/memories/moved"})
        for line in listing.splitlines()[2:]:
            text += ok(handler, {"command": "view", "path": line.split("\t", 1)[1]}) + "\n"
        tokens = [f"tok-{n:02d}-{r:02d}" for n in range(WRITERS) for r in range(ROUNDS)]
        content = "\n".join(re.findall(r"^ *\d+\t(.*)$", text, re.MULTILINE))  # file lines, not the headings
        found = re.findall(r"tok-\d\d-\d\d", content)
        counts = {token: found.count(token) for token in tokens}
        assert {t: c for t, c in counts.items() if c != 1} == {}
        assert len(found) == len(tokens)
        assert {token: count for token, count in counts.items() if count != 1} == {}
        assert len(counts) == WRITERS * ROUNDS
    finally:
        handler.close()
        store.close()


# --- a writer killed mid-transaction ----------------------------------------------------------------

KILLS = 300
FOLDER_FILES = 30


def _churn(where: str, ready: int) -> None:
    """Forever: move a 30-file folder back and forth, add a line to a counter file and make a file; says it is
    under way (a byte on `ready`) once the first turn is done; never returns."""
    store = SqliteStore(where)
    handler = MemoryHandler(store)
    turn = 0
    while True:
        turn += 1
        handler.execute({"command": "rename", "old_path": "/memories/left", "new_path": "/memories/right"})
        handler.execute({"command": "rename", "old_path": "/memories/right", "new_path": "/memories/left"})
        handler.execute({"command": "insert", "path": "/memories/count.md", "insert_line": 0, "insert_text": "+\n"})
        handler.execute({"command": "create", "path": f"/memories/made/{os.getpid()}-{turn}.md", "file_text": "x"})
        if turn == 1:
            os.write(ready, b"1")


@pytest.mark.slow
@needs_fork
def test_killed_writers_leave_the_database_whole(tmp_path: Path) -> None:
    where = tmp_path / "m.db"
    setup = MemoryHandler(SqliteStore(where))
    for number in range(FOLDER_FILES):
        ok(setup, {"command": "create", "path": f"/memories/left/sub/f{number}.md", "file_text": f"{number}\n"})
    ok(setup, {"command": "create", "path": "/memories/count.md", "file_text": ""})
    setup.store.close()
    rng = random.Random(18)
    killed_mid_work = 0
    lines_before = 0
    for _ in range(KILLS):
        ready, say_ready = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(ready)
                _churn(str(where), say_ready)
            finally:
                os._exit(1)
        os.close(say_ready)
        try:
            assert os.read(ready, 1) == b"1"  # the writer is in its loop: the kill lands among its transactions
        finally:
            os.close(ready)
        time.sleep(rng.uniform(0, 0.01))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        killed_mid_work += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        with sqlite3.connect(where) as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            tops = db.execute(
                "SELECT path FROM refmem_nodes WHERE path IN ('left', 'right') AND kind = 'dir'"
            ).fetchall()
            assert len(tops) == 1  # never both, never neither: the move is one transaction
            top = tops[0][0]
            below = (top + "/", top + "0")
            files = db.execute(
                "SELECT count(*) FROM refmem_nodes WHERE path > ? AND path < ? AND kind = 'file'", below
            ).fetchone()[0]
            assert files == FOLDER_FILES
            orphans = db.execute(
                "SELECT count(*) FROM refmem_nodes AS child WHERE child.parent != '' AND NOT EXISTS"
                " (SELECT 1 FROM refmem_nodes AS up WHERE up.tenant = child.tenant AND up.path = child.parent"
                " AND up.kind = 'dir')"
            ).fetchone()[0]
            assert orphans == 0
            count = bytes(db.execute("SELECT data FROM refmem_nodes WHERE path = 'count.md'").fetchone()[0])
            assert set(count.split(b"\n")) <= {b"+", b""}  # whole lines only
            assert count.count(b"+") > lines_before  # the killed writer had done at least its first turn
            lines_before = count.count(b"+")
    assert killed_mid_work == KILLS
    after = MemoryHandler(SqliteStore(where))
    try:
        assert "/memories/count.md" in ok(after, {"command": "view", "path": "/memories"})
        ok(after, {"command": "rename", "old_path": "/memories/" + top, "new_path": "/memories/final"})
    finally:
        after.store.close()


# --- a folder's move and delete: one statement over the subtree ------------------------------------


def _statements(store: SqliteStore, handler: MemoryHandler, command: Dict[str, object]) -> int:
    said: List[str] = []
    store._db.set_trace_callback(said.append)
    try:
        ok(handler, command)
    finally:
        store._db.set_trace_callback(None)
    return len(said)


@pytest.mark.parametrize("command", ["rename", "delete"])
def test_a_folder_move_or_delete_runs_as_many_statements_whatever_its_size(tmp_path: Path, command: str) -> None:
    counts = []
    for files in (40, 80):
        store = SqliteStore(tmp_path / f"{command}-{files}.db")
        handler = MemoryHandler(store)
        try:
            for number in range(files):
                path = f"/memories/big/s{number % 4}/f{number}.md"
                ok(handler, {"command": "create", "path": path, "file_text": "x"})
            if command == "rename":
                counts.append(_statements(store, handler, {"command": "rename", "old_path": "/memories/big",
                                                           "new_path": "/memories/moved/big"}))
                assert f"/memories/moved/big/s3/f{files - 1}.md" in ok(
                    handler, {"command": "view", "path": "/memories/moved/big/s3"}
                )
            else:
                counts.append(_statements(store, handler, {"command": "delete", "path": "/memories/big"}))
                assert "big" not in ok(handler, {"command": "view", "path": "/memories"})
        finally:
            store.close()
    assert counts[0] == counts[1] and counts[0] < 30


# --- the SQL core is the same text for every engine ------------------------------------------------


def test_every_statement_is_rendered_for_each_dialect_and_names_the_tenant() -> None:
    from refmem.stores.schema import POSTGRES, SQLITE, Queries

    sqlite, postgres = Queries(SQLITE), Queries(POSTGRES)
    names = [name for name, value in vars(sqlite).items() if isinstance(value, str)]
    assert len(names) > 20
    for name in names:
        one, other = getattr(sqlite, name), getattr(postgres, name)
        assert one.count("?") == other.count("%s") and "%s" not in one and "?" not in other, name
        if any(table in one for table in ("refmem_nodes", "refmem_changes", "refmem_tenants", "refmem_versions")):
            assert "tenant" in one, name  # no statement on memories without its tenant
    assert 'COLLATE "C"' in " ".join(postgres.ddl) and "BYTEA" in " ".join(postgres.ddl)
    assert postgres.read_for_edit.endswith(" FOR UPDATE") and not sqlite.read_for_edit.endswith("UPDATE")
    # PostgreSQL's one statement where SQLite runs several
    for name in ("note_returning", "count_kept_returning", "keep_one_counted", "edit_in_one", "drop_oldest_of_path"):
        returning = getattr(postgres, name)
        tenant = "tenant = %(tenant)s" if name == "edit_in_one" else "tenant = %s"  # the edit's values by name
        assert getattr(sqlite, name) is None and " RETURNING " in returning and tenant in returning, name
