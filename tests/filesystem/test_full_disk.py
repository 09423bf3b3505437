"""A full disk (issue 18, "Faults": "nothing torn, nothing half-renamed, every command answered with a result"),
on a real filesystem that is really full: a small tmpfs mounted for the test and filled to the last byte by a
filler file, never a mock. Each of the three stores keeps its memories there (the filesystem store's root, the
SQLite store's database and its write-ahead log, the PostgreSQL store's tables, indexes and TOAST in a tablespace
on it), and one scenario runs against each:

* with the disk full (the filler topped up before every command), every command is answered: a success, or the
  documented D-IO error with the `no_space` reason; never a traceback, the internal error or a host path;
* nothing is torn: after every command the memories, read directly (the folder's files, the database's rows as
  the superuser reads them), are exactly the state before it (an error) or after it (a success): no temporary
  or half-written file, no folder half moved, no change half applied; `view` lists only what is there;
* reads answer on the full disk (the store's bookkeeping, access records and the lock file, never fails one);
* with the filler gone, the commands that failed succeed, through the same handler, and the memories are what a
  model applying every command would expect.

Mounting needs root (CI runs as root); elsewhere the test skips saying so. The disk is a few MiB, so it fills in
a few hundred writes; every verdict counts outcomes, none times anything."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest
from memory_support import Memory

from refmem import MemoryHandler, Result
from refmem import _kernel as kernel
from refmem._store_messages import STORE_CANNOT_OPEN, STORE_PG_CANNOT_CONNECT
from refmem.handler import COMMANDS as COMMAND_VERBS
from refmem.messages import IO_REASONS, render

State = Dict[str, Optional[bytes]]
"""The memories: path below /memories -> a file's bytes, None for a folder."""

DISK_BYTES = 4 << 20
"""The small disk: room for the memories below (about 0.5 MiB) and a filler that takes the rest."""


# --- a small real disk ---------------------------------------------------------------------------------


def cannot_mount() -> Optional[str]:
    """Why no tmpfs can be mounted here (None when it can be tried)."""
    if not hasattr(os, "geteuid") or os.uname().sysname != "Linux":
        return "a tmpfs mount needs Linux"
    if os.geteuid() != 0:
        return ("mounting a tmpfs needs root (CI runs the tests as root); test_in_a_user_namespace runs this"
                " file's filesystem and SQLite tests inside `unshare -rm` instead, where the system allows it")
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "mount and umount are not installed"
    return None


class SmallDisk:
    """A tmpfs of `size` bytes (and at most `inodes` files) mounted on `where`; `fill()` tops a filler file up
    until the filesystem refuses a single byte more, `free()` removes it."""

    def __init__(self, where: Path, size: int = DISK_BYTES, inodes: Optional[int] = None) -> None:
        self.where = where
        self.filler = where / "filler"
        where.mkdir()
        options = f"size={size},mode=0755" + (f",nr_inodes={inodes}" if inodes else "")
        done = subprocess.run(  # noqa: S603  # nosec B603  # fixed arguments of our own
            ["mount", "-t", "tmpfs", "-o", options, "refmem-full-disk", str(where)],  # noqa: S607
            capture_output=True, text=True, check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"no tmpfs could be mounted ({(done.stdout + done.stderr).strip()})")

    def fill(self) -> None:
        """Write to the filler until a one-byte write fails with ENOSPC: no block is left for data."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            for chunk in (1 << 20, 1 << 16, 1 << 12, 1):
                block = b"\0" * chunk
                while True:
                    try:
                        if os.write(fd, block) == 0:
                            break
                    except OSError as error:
                        assert error.errno == errno.ENOSPC, error
                        break
        finally:
            os.close(fd)
        assert os.statvfs(self.where).f_bavail == 0

    def use_up_inodes(self) -> int:
        """Make empty files until the filesystem refuses one more; how many it took."""
        made = 0
        while True:
            try:
                (self.where / f"inode{made}").touch()
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
                return made
            made += 1

    def free(self) -> None:
        for name in os.listdir(self.where):
            if name == "filler" or name.startswith("inode"):
                os.unlink(self.where / name)

    def unmount(self) -> None:
        """Unmount; still busy (a failed test left a file open on it), detach it now and let it go when closed."""
        for command in (["umount", str(self.where)], ["umount", "-l", str(self.where)]):
            if subprocess.run(command, capture_output=True, check=False).returncode == 0:  # noqa: S603  # nosec B603
                return


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[..., SmallDisk]]:
    """Mounts small disks below `tmp_path` on demand; each is unmounted when the test ends, failed or not."""
    reason = cannot_mount()
    if reason is not None:
        pytest.skip(reason)
    mounted: List[SmallDisk] = []

    def mount(name: str = "disk", **options: Any) -> SmallDisk:
        disk = SmallDisk(tmp_path / name, **options)
        mounted.append(disk)
        return disk

    try:
        yield mount
    finally:
        for disk in reversed(mounted):
            disk.unmount()


def test_in_a_user_namespace() -> None:
    """Not root: the filesystem and SQLite tests of this file, run again inside a user and mount namespace of their
    own (`unshare -rm`), where the user is root of its own mounts (the PostgreSQL test needs the server's system
    user, which the namespace has not)."""
    if os.geteuid() == 0:
        pytest.skip("running as root: the tests of this file mount their disks themselves")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, text=True, check=False)  # noqa: S603, S607
    if probe.returncode != 0:
        pytest.skip(f"this system refuses unprivileged user namespaces ({probe.stderr.strip()})")
    done = subprocess.run(  # noqa: S603  # nosec B603  # this interpreter, this file
        ["unshare", "-rm", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,  # noqa: S607
         "-k", "not postgres and not user_namespace"],
        capture_output=True, text=True, check=False, timeout=600,
    )
    summary = (done.stdout + done.stderr).strip().splitlines()[-1:]
    assert done.returncode == 0 and "skipped" not in str(summary), done.stdout[-4000:] + done.stderr[-2000:]


# --- the scenario ----------------------------------------------------------------------------------------

BIG = b"".join(b"line %06d %s\n" % (n, hashlib.sha256(b"%d" % n).hexdigest().encode()) for n in range(3000))
"""About 220 KB that compresses little: SQLite's overflow pages, PostgreSQL's TOAST (compressed, still out of line)."""
SEED: Dict[str, bytes] = {
    "keep.md": b"kept as it is\n",
    "edit.md": b"first\nOLD-LINE\n" + b"x" * 8000 + b"\nlast\n",
    "ins.md": b"one\ntwo\nthree\n",
    "big.md": BIG,
    "move.md": b"a file that moves\n",
    "box/one.md": b"one in the box\n",
    "box/sub/two.md": b"two in the box\n",
    "gone.md": b"a file to delete\n",
    "trash/x.md": b"in a folder to delete\n",
}
NEW = b"a new memory\n" * 50


def _create(state: State, path: str, data: bytes) -> State:
    made = dict(state)
    parts = path.split("/")
    for depth in range(1, len(parts)):
        made["/".join(parts[:depth])] = None
    made[path] = data
    return made


def _moved(state: State, old: str, new: str) -> State:
    def where(path: str) -> str:
        return new + path[len(old):] if path == old or path.startswith(old + "/") else path

    return {where(path): data for path, data in state.items()}


def _deleted(state: State, gone: str) -> State:
    return {path: data for path, data in state.items() if path != gone and not path.startswith(gone + "/")}


def _replaced(state: State, path: str, old: bytes, new: bytes) -> State:
    data = state[path]
    assert data is not None and data.count(old) == 1
    return {**state, path: data.replace(old, new)}


Command = Tuple[str, Dict[str, Any], str, Callable[[State], State]]
"""A name, the tool input, the path its error names, and what it does to the memories when it succeeds."""
COMMANDS: List[Command] = [
    ("create", {"command": "create", "path": "/memories/new.md", "file_text": NEW.decode()}, "/memories/new.md",
     lambda s: _create(s, "new.md", NEW)),
    ("create in new folders", {"command": "create", "path": "/memories/deep/er/x.md", "file_text": NEW.decode()},
     "/memories/deep/er/x.md", lambda s: _create(s, "deep/er/x.md", NEW)),
    ("str_replace", {"command": "str_replace", "path": "/memories/edit.md", "old_str": "OLD-LINE",
                     "new_str": "NEW-LINE " * 40}, "/memories/edit.md",
     lambda s: _replaced(s, "edit.md", b"OLD-LINE", b"NEW-LINE " * 40)),
    ("str_replace on the large file", {"command": "str_replace", "path": "/memories/big.md",
                                       "old_str": "line 001500 ", "new_str": "LINE 1500 "}, "/memories/big.md",
     lambda s: _replaced(s, "big.md", b"line 001500 ", b"LINE 1500 ")),
    ("insert", {"command": "insert", "path": "/memories/ins.md", "insert_line": 1, "insert_text": "inserted\n" * 30},
     "/memories/ins.md", lambda s: _replaced(s, "ins.md", b"one\n", b"one\n" + b"inserted\n" * 30)),
    ("rename a file", {"command": "rename", "old_path": "/memories/move.md", "new_path": "/memories/moved.md"},
     "/memories/move.md", lambda s: _moved(s, "move.md", "moved.md")),
    ("rename a file into new folders", {"command": "rename", "old_path": "/memories/keep.md",
                                        "new_path": "/memories/kept/here/keep.md"},
     "/memories/keep.md", lambda s: _create(_deleted(s, "keep.md"), "kept/here/keep.md", SEED["keep.md"])),
    ("rename a folder", {"command": "rename", "old_path": "/memories/box", "new_path": "/memories/crate"},
     "/memories/box", lambda s: _moved(s, "box", "crate")),
    ("delete a file", {"command": "delete", "path": "/memories/gone.md"}, "/memories/gone.md",
     lambda s: _deleted(s, "gone.md")),
    ("delete a folder", {"command": "delete", "path": "/memories/trash"}, "/memories/trash",
     lambda s: _deleted(s, "trash")),
]
LISTED = re.compile(r"^\S+\t(/memories\S*?)/?$", re.MULTILINE)


def seeded() -> State:
    state: State = {}
    for path, data in SEED.items():
        state = _create(state, path, data)
    return state


class Scenario:
    """The commands, run against one store: `run` executes a tool input, `state` reads the memories directly,
    `fill` and `free` work the disk. `outcomes` records what each command answered on the full disk."""

    def __init__(self, run: Callable[[Dict[str, Any]], Result], state: Callable[[], State],
                 fill: Callable[[], None], free: Callable[[], None],
                 everything: Callable[[], object] = lambda: None) -> None:
        """`everything` reads the store's whole state where it has one (every row of every table): a command
        refused must leave all of it as it was (no version kept, no journal line, no generation spent)."""
        self.run, self.state, self.fill, self.free, self.everything = run, state, fill, free, everything
        self.outcomes: Dict[str, str] = {}

    def seed(self) -> State:
        for path, data in SEED.items():
            made = self.run({"command": "create", "path": f"/memories/{path}", "file_text": data.decode()})
            assert not made.is_error, made.output
        expected = seeded()
        assert self.state() == expected
        return expected

    def answered(self, result: Result, command: Dict[str, Any], named: str) -> str:
        """`done`, or `no_space` when the result is the documented error; anything else fails the test."""
        assert "Traceback" not in result.output and "/tmp" not in result.output, result.output
        if not result.is_error:
            return "done"
        verb = COMMAND_VERBS[command["command"]].action
        no_space = render("io_error", action=verb, path=named, reason=IO_REASONS["no_space"])
        assert result.output == no_space.output, (command, result.output)
        return "no_space"

    def views(self, expected: State) -> int:
        """View every file and the root's listing; each must answer with exactly what is there."""
        count = 0
        for path, data in sorted(expected.items()):
            if data is not None:
                seen = self.run({"command": "view", "path": f"/memories/{path}"})
                assert not seen.is_error, seen.output
                if len(data) < 100_000:  # a larger file's view is paged
                    assert seen.output.count("\n") == data.count(b"\n"), path  # a heading, then each line
                count += 1
        listing = self.run({"command": "view", "path": "/memories"})
        assert not listing.is_error, listing.output
        listed = set(LISTED.findall(listing.output)) - {"/memories"}
        shallow = {f"/memories/{path}" for path in expected if path.count("/") < 2}
        assert listed == shallow, sorted(listed ^ shallow)  # no temporary, half-written or vanished name
        return count + 1

    def on_a_full_disk(self, expected: State) -> State:
        failed: List[Command] = []
        for name, command, named, apply in COMMANDS:
            self.fill()
            whole = self.everything()
            result = self.run(command)
            said = self.answered(result, command, named)
            if said == "no_space":
                assert self.everything() == whole, name
            self.outcomes[name] = said
            if said == "done":
                expected = apply(expected)
            else:
                failed.append((name, command, named, apply))
            assert self.state() == expected, name  # all of it, or nothing of it
        self.fill()
        self.views(expected)
        assert self.state() == expected
        self.free()
        for name, command, named, apply in failed:  # with room again, through the same store
            result = self.run(command)
            assert not result.is_error, (name, result.output)
            expected = apply(expected)
            assert self.state() == expected, name
        return expected

    def check(self, refused: Tuple[str, ...] = tuple(name for name, _, _, _ in COMMANDS[:5])) -> Dict[str, str]:
        """Every step above; `refused` names the commands that must have met the full disk (their writes need room
        no store can find on it)."""
        expected = self.on_a_full_disk(self.seed())
        final = seeded()
        for _, _, _, apply in COMMANDS:
            final = apply(final)
        assert expected == final
        self.views(final)
        assert {name for name, said in self.outcomes.items() if said == "no_space"} >= set(refused), self.outcomes
        return self.outcomes


# --- the filesystem store ----------------------------------------------------------------------------------


FULL = {"blocks": False, "blocks and inodes": True}
"""How full the disk is: no block left for data, or no inode for a new name either (a folder, a link, an empty
file: what renames and the bookkeeping's first files need)."""


def filler(disk: SmallDisk, inodes: bool) -> Callable[[], None]:
    def fill() -> None:
        disk.fill()
        if inodes:
            disk.use_up_inodes()

    return fill


WALKS = {"openat2": (False, True, True), "name by name, link then unlink": (False, False, False),
         "portable": (True, False, False)}
"""The filesystem store's ways through the tree (portable_walk, openat2 there, renameat2 there): each writes and
renames by other calls."""


@pytest.mark.parametrize("walk", list(WALKS))
@pytest.mark.parametrize("full", list(FULL))
def test_the_filesystem_store_on_a_full_disk(
    small_disk: Callable[..., SmallDisk], full: str, walk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    portable, openat2, renameat2 = WALKS[walk]
    if not openat2:
        monkeypatch.setattr(kernel, "_openat2", None)
    if not renameat2:
        monkeypatch.setattr(kernel, "_renameat2", None)
    disk = small_disk(inodes=4096 if FULL[full] else None)
    memory = Memory(disk.where, portable_walk=portable)
    try:
        outcomes = Scenario(memory.run, memory.tree, filler(disk, FULL[full]), disk.free).check()
    finally:
        memory.close()
    print(f"filesystem store ({walk}), no {full} left:", outcomes)


BOOKKEEPING = {"no .refmem yet, no inode left": True, ".refmem there, no block left": False}


@pytest.mark.parametrize("case", list(BOOKKEEPING))
def test_reads_need_no_room_for_the_bookkeeping(small_disk: Callable[..., SmallDisk], case: str) -> None:
    """Memories an hour old (so a view records its use: an access record made, D-EXPIRY), on a disk with no room
    for the store's bookkeeping: a store that never ran there (no `.refmem`: no lock file, no access folder) with
    neither a block nor an inode left, or one whose `.refmem` is there with no block left for a record's bytes.
    Every read answers, a write is refused with the `no_space` reason leaving nothing, and with room again the same
    views make the records they could not (the recording was tried, and skipped)."""
    fresh_store = BOOKKEEPING[case]
    disk = small_disk(inodes=4096 if fresh_store else None)
    memory = Memory(disk.where)
    hour_ago = time.time() - 3600
    for path, data in SEED.items():
        os.utime(memory.put(path, data), (hour_ago, hour_ago))
    if fresh_store:
        memory.close()
        shutil.rmtree(memory.root / ".refmem", ignore_errors=True)
    else:
        memory.run(command="create", path="/memories/made.md", file_text="made\n")  # the lock file
        memory.run(command="delete", path="/memories/made.md")
        memory.close()
        assert (memory.root / ".refmem" / "lock").is_file() and not (memory.root / ".refmem" / "access").exists()
    access = memory.root / ".refmem" / "access"
    fill = filler(disk, fresh_store)
    fill()
    fresh = Memory(disk.where)
    try:
        before = fresh.tree()
        assert before == seeded()
        scenario = Scenario(fresh.run, fresh.tree, fill, disk.free)
        assert scenario.views(before) == len(SEED) + 1
        assert fresh.tree() == before
        assert not access.exists() or os.listdir(access) == []  # no record could be made, none half made
        needing_room = COMMANDS[:2] + (COMMANDS[6:7] if fresh_store else [])  # a folder needs an inode, no block
        for name, command, named, _ in needing_room:
            assert scenario.answered(fresh.run(command), command, named) == "no_space", name
            assert fresh.tree() == before, name
        disk.free()
        assert scenario.views(before) == len(SEED) + 1
        assert len(os.listdir(access)) == len(SEED)  # with room, the same views record each file's use
    finally:
        fresh.close()


# --- the SQLite store ------------------------------------------------------------------------------------


def sqlite_rows(database: Path, tenant: str) -> State:
    """path -> content of every row of `tenant`, read with sqlite3 directly (no refmem code between)."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        found = connection.execute(
            "SELECT path, data FROM refmem_nodes WHERE tenant = ? ORDER BY path", (tenant,)
        ).fetchall()
    return {path: None if data is None else bytes(data) for path, data in found}


def sqlite_everything(database: Path) -> Dict[str, List[Any]]:
    """Every row of every table, read with sqlite3 directly."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: sorted(map(repr, connection.execute(f"SELECT * FROM {table}"))) for table in tables}  # noqa: S608


def sqlite_integrity(database: Path) -> List[str]:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        return [row[0] for row in connection.execute("PRAGMA integrity_check").fetchall()]


def test_the_sqlite_store_on_a_full_disk(small_disk: Callable[..., SmallDisk]) -> None:
    """The database, its write-ahead log and its `-shm` file on the full disk. A second store opened while the
    first is (the `-shm` file there and sized) reads on the full disk; a store opened when none is (SQLite makes the
    `-shm` file again) is refused with the `no_space` reason, never called a damaged database."""
    from refmem.stores import StoreError
    from refmem.stores.sqlite import SqliteStore

    disk = small_disk()
    database = disk.where / "memory.db"
    stores: List[SqliteStore] = []
    try:
        stores.append(SqliteStore(database))
        handler = MemoryHandler(stores[0])
        scenario = Scenario(handler.execute, lambda: sqlite_rows(database, ""), disk.fill, disk.free,
                            lambda: sqlite_everything(database))
        outcomes = scenario.check()
        expected = sqlite_rows(database, "")
        disk.fill()
        stores.append(SqliteStore(database))  # a fresh store beside the first, on the full disk
        assert Scenario(MemoryHandler(stores[1]).execute, dict, disk.fill, disk.free).views(expected) > len(SEED)
        newcomer = "opened"
        try:  # a tenant's first store adds its row: opened, or refused saying why
            stores.append(SqliteStore(database, tenant="newcomer"))
        except StoreError as error:
            assert str(error) == STORE_CANNOT_OPEN.format(reason=IO_REASONS["no_space"])
            newcomer = "refused: no_space"
        assert sqlite_integrity(database) == ["ok"]
        while stores:  # the last close cannot checkpoint on the full disk: the log stays, whole
            stores.pop().close()
        # (the writer gate's empty file stays, as a lock file must: D-STORE-SQL-GATE)
        assert sorted(os.listdir(disk.where)) == [
            "filler", "memory.db", "memory.db-shm", "memory.db-wal", "memory.db-writer-lock"]
        disk.free()
        SqliteStore(database).close()  # with room, the last close checkpoints and removes the log and `-shm`
        assert sorted(os.listdir(disk.where)) == ["memory.db", "memory.db-writer-lock"]
        disk.fill()
        with pytest.raises(StoreError) as refused:
            stores.append(SqliteStore(database))
        if sys.version_info >= (3, 11):  # before, an error has no code and SQLite's text says only "disk I/O error"
            assert str(refused.value) == STORE_CANNOT_OPEN.format(reason=IO_REASONS["no_space"])
        disk.free()
        stores.append(SqliteStore(database))
        assert Scenario(MemoryHandler(stores[-1]).execute, dict, disk.fill, disk.free).views(expected) > len(SEED)
        assert sqlite_rows(database, "") == expected and sqlite_integrity(database) == ["ok"]
    finally:
        for store in stores:
            store.close()
    print("SQLite store, on the full disk:", outcomes, "; a new tenant's store beside:", newcomer,
          "; a store opened alone on it:", refused.value)


# --- the PostgreSQL store --------------------------------------------------------------------------------

TABLESPACE = "refmem_full_disk"


def postgres_rows(postgres: Any, tenant: str) -> State:
    """path -> content of every row of `tenant`, read by the superuser (no row-level security, no refmem code)."""
    with postgres.admin() as connection:
        found = connection.execute(
            f"SELECT path, data FROM {TABLESPACE}.refmem_nodes WHERE tenant = %s ORDER BY path", (tenant,)  # noqa: S608
        ).fetchall()
    return {path: None if data is None else bytes(data) for path, data in found}


def postgres_everything(postgres: Any) -> Dict[str, List[str]]:
    """Every row of every table of the store's schema, read by the superuser."""
    with postgres.admin() as connection:
        tables = [row[0] for row in connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (TABLESPACE,)
        ).fetchall()]
        return {
            table: sorted(map(repr, connection.execute(f"SELECT * FROM {TABLESPACE}.{table}").fetchall()))  # noqa: S608
            for table in tables
        }


def postgres_places(postgres: Any) -> Dict[str, str]:
    """Each relation of the store's schema (tables, their indexes, their TOAST tables and TOAST indexes) -> the
    tablespace it lives in ('' for the database's default)."""
    with postgres.admin() as connection:
        found = connection.execute(
            "SELECT c.relname, coalesce(t.spcname, '') FROM pg_class c"
            " LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE c.oid IN ("
            " SELECT oid FROM pg_class WHERE relnamespace = %(s)s::regnamespace AND relkind IN ('r', 'i')"
            " UNION SELECT reltoastrelid FROM pg_class WHERE relnamespace = %(s)s::regnamespace"
            " UNION SELECT i.indexrelid FROM pg_index i JOIN pg_class r ON r.reltoastrelid = i.indrelid"
            " WHERE r.relnamespace = %(s)s::regnamespace)",
            {"s": TABLESPACE},
        ).fetchall()
    return dict(found)


def server_said(postgres: Any) -> int:
    """How many times the server has logged that it could not extend a file for want of space."""
    log = Path(postgres.log).read_text(encoding="utf-8", errors="replace")
    return len(re.findall(r"ERROR:  could not extend file .*: No space left on device", log))


def test_the_postgres_store_on_a_full_tablespace(postgres: Any) -> None:
    """The store's tables, indexes and TOAST in a tablespace on the small disk (the cluster's write-ahead log and
    catalogs elsewhere: a server whose log has no room stops, which no store can answer for); the disk filled, then
    freed, the store never reopened."""
    from refmem.stores import StoreError
    from refmem.stores.postgres import PostgresStore

    reason = cannot_mount()
    if reason is not None:
        pytest.skip(reason)
    disk = SmallDisk(Path(postgres.base) / "full-disk")  # below the cluster's folder: the server's user gets there
    store = None
    try:
        dsn = postgres.tablespace_dsn(disk.where / "tablespace", TABLESPACE)
        store = PostgresStore(dsn)
        places = postgres_places(postgres)
        assert len(places) >= 15 and set(places.values()) == {TABLESPACE}, places
        handler = MemoryHandler(store)
        scenario = Scenario(handler.execute, lambda: postgres_rows(postgres, ""), disk.fill, disk.free,
                            lambda: postgres_everything(postgres))
        said_before = server_said(postgres)
        outcomes = scenario.check(refused=("str_replace on the large file",))
        refusals = sum(said == "no_space" for said in outcomes.values())
        assert server_said(postgres) - said_before == refusals  # each one the server's own "could not extend file"
        expected = postgres_rows(postgres, "")
        disk.fill()
        fresh = PostgresStore(dsn)  # a store opened on the full disk (as an application opens it) reads
        try:
            assert Scenario(MemoryHandler(fresh).execute, dict, disk.fill, disk.free).views(expected) > len(SEED)
        finally:
            fresh.close()
        newcomer = "opened"
        try:  # a tenant's first store adds its row: opened, or refused saying why
            PostgresStore(dsn, tenant="newcomer").close()
        except StoreError as refused:
            assert str(refused) == STORE_PG_CANNOT_CONNECT.format(reason=IO_REASONS["no_space"])
            newcomer = "refused: no_space"
    finally:
        if store is not None:
            store.close()
        with contextlib.suppress(Exception):
            postgres.drop_tablespace(TABLESPACE)
        disk.unmount()
    print("PostgreSQL store, on the full tablespace:", outcomes, "; a new tenant's store:", newcomer)
