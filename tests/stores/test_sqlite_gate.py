"""The SQLite store's writer gate (refmem/stores/gate.py, D-STORE-SQL-GATE): writers of one database queue on it
before SQLite's write lock and go on when it is let go; one held past the store's busy policy is answered `busy`
having changed nothing; and a gate's name holding anything but a plain file of one link, this user's and open to no
other (a FIFO, a link, a hard link, a folder, a file others may open, another user's file) is never opened, followed
or locked: the store goes without the gate, SQLite's lock alone."""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from refmem import MemoryHandler, Result
from refmem.messages import IO_REASONS, render
from refmem.stores.gate import SUFFIX
from refmem.stores.sqlite import SqliteStore


def create(store: SqliteStore, name: str) -> Result:
    return MemoryHandler(store).execute({"command": "create", "path": f"/memories/{name}.md", "file_text": "x\n"})


def listed(store: SqliteStore) -> str:
    return MemoryHandler(store).execute({"command": "view", "path": "/memories"}).output


def test_a_writer_waits_at_the_gate_until_the_holder_commits(tmp_path: Path) -> None:
    database = tmp_path / "m.db"
    holder, waiter = SqliteStore(database), SqliteStore(database)
    done: List[Result] = []
    try:
        with holder.locked():
            assert create(holder, "first").is_error is False
            thread = threading.Thread(target=lambda: done.append(create(waiter, "second")))
            thread.start()
            thread.join(0.5)
            assert thread.is_alive() and done == []  # at the gate, not refused, while the holder's transaction runs
        thread.join(60)
        assert [result.is_error for result in done] == [False]
        assert "first.md" in listed(waiter) and "second.md" in listed(waiter)
    finally:
        waiter.close()
        holder.close()


def test_a_gate_held_past_the_busy_policy_is_answered_busy_and_changes_nothing(tmp_path: Path) -> None:
    database = tmp_path / "m.db"
    SqliteStore(database).close()
    store = SqliteStore(database, busy_seconds=0.05, busy_retries=1)
    other = os.open(str(database) + SUFFIX, os.O_RDWR)  # another process's writer, holding the gate
    try:
        fcntl.flock(other, fcntl.LOCK_EX)
        refused = create(store, "a")
        assert refused == render("io_error", action="create", path="/memories/a.md", reason=IO_REASONS["busy"])
        fcntl.flock(other, fcntl.LOCK_UN)
        assert "a.md" not in listed(store)
        assert create(store, "a").is_error is False  # let go: the writer gets in
    finally:
        os.close(other)
        store.close()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link(path: Path) -> None:
    target = path.parent / "outside.txt"
    target.write_text("not refmem's\n")
    os.symlink(target, path)


def _hard_link(path: Path) -> None:
    target = path.parent / "shared.txt"
    target.write_text("")
    os.link(target, path)


def _folder(path: Path) -> None:
    path.mkdir()


def _open_to_others(path: Path) -> None:
    path.write_text("")
    path.chmod(0o644)  # anyone may open it, so anyone may hold its flock


def _another_users(path: Path) -> None:
    """Planted by another user in a folder others may write (as root, the test makes it nobody's)."""
    path.write_text("")
    path.chmod(0o600)
    os.chown(path, 65534, 65534)


SQUATTERS: Dict[str, Callable[[Path], None]] = {
    "fifo": _fifo, "link": _link, "hard-link": _hard_link, "folder": _folder, "open-to-others": _open_to_others,
    "another-users": _another_users,
}


@pytest.mark.parametrize("squatter", sorted(SQUATTERS))
def test_a_gate_name_holding_anything_but_a_plain_file_is_left_alone(tmp_path: Path, squatter: str) -> None:
    """Nothing but this user's regular file of one link, open to no other user, is ever used as the gate: the store
    goes on with SQLite's lock alone, so a planted name can neither block writers nor be opened or followed."""
    if squatter == "another-users" and os.geteuid() != 0:
        pytest.skip("making a file another user's needs root; the open-to-others case covers the mode check")
    database = tmp_path / "m.db"
    gate = Path(str(database) + SUFFIX)
    SQUATTERS[squatter](gate)
    before = os.lstat(gate)
    first, second = SqliteStore(database), SqliteStore(database)
    try:
        for number in range(3):  # writers on two stores, each with SQLite's lock alone
            assert create(first, f"a{number}").is_error is False
            assert create(second, f"b{number}").is_error is False
        with first.locked():
            if squatter == "fifo":  # no reader has it open: refmem never opened it
                with pytest.raises(OSError) as no_reader:
                    os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
                assert no_reader.value.errno == errno.ENXIO
        after = os.lstat(gate)
        assert (after.st_mode, after.st_ino, after.st_nlink) == (before.st_mode, before.st_ino, before.st_nlink)
        if squatter == "link":
            assert (tmp_path / "outside.txt").read_text() == "not refmem's\n"
        assert first._gate._usable is False and second._gate._usable is False
        assert all(f"{name}.md" in listed(first) for name in ("a0", "a2", "b0", "b2"))
    finally:
        second.close()
        first.close()
