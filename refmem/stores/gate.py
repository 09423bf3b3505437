"""The SQLite store's writer gate: writers of one database file queue on an `flock` of a file beside it before
they ask SQLite for its write lock (D-STORE-SQL-GATE).

Why: a writer that finds SQLite's write lock taken is put to sleep by SQLite's busy handler for 1, 2, 5, 10, ...
up to 100 ms at a time, whatever happens meanwhile, so the lock stands free while its waiters sleep: with 16
processes writing one file, throughput fell to a fifth of one writer's. Waiters on the gate try it again every
0.2 ms at first, never more than 2 ms apart, and find SQLite's lock free when they get the gate (16 processes:
611 and 676 str_replace a second without the gate, 2,374 and 2,580 with it, the same run).

The gate is an aid, never the safety: `BEGIN IMMEDIATE` still takes SQLite's lock, so a writer that does not know
the gate (another program, an older refmem) is safe, and so is a store that cannot use the gate (a read-only
folder, or anything at its name but a regular file of one link, this user's and open to no other: a FIFO is never
opened, a link never followed, a hard link never locked, another user's file never held) and goes without it. A
writer waits on the gate no longer than its store's whole busy policy allows (`busy_seconds` times its tries), then
is answered `busy` as D-STORE-SQL-BUSY says.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from typing import Optional

try:
    import fcntl
except ImportError:  # pragma: no cover  # Windows: no flock, SQLite's lock alone
    fcntl = None  # type: ignore[assignment]

SUFFIX = "-writer-lock"
"""The gate's file is the database's path and this (beside SQLite's own `-wal` and `-shm`)."""
FIRST_PAUSE = 0.0002
LONGEST_PAUSE = 0.002
"""Seconds between tries of a gate held by another writer: doubling from the first to the longest."""
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class WriterGate:
    """One store's handle on its database's gate: `acquire(seconds)` before `BEGIN IMMEDIATE`, `release()` when
    the transaction ends. Not shared between threads (its store serialises them) nor across a fork (a child that
    finds the gate opened by its parent opens its own)."""

    def __init__(self, database: str) -> None:
        self.path = database + SUFFIX
        self._fd: Optional[int] = None
        self._pid = 0
        self._held = False
        self._usable = True

    def acquire(self, seconds: float) -> bool:
        """Hold the gate, waiting at most `seconds`: True when held or when there is no usable gate (SQLite's lock
        then does all the queueing), False when another writer held it all that time."""
        fd = self._file()
        if fd is None:
            return True
        deadline = time.monotonic() + seconds
        pause = FIRST_PAUSE
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(pause)
                pause = min(pause * 2, LONGEST_PAUSE)
                continue
            except OSError:  # a filesystem without flock: SQLite's lock alone
                self._usable = False
                return True
            self._held = True
            return True

    def release(self) -> None:
        """Let the next writer in; nothing when the gate is not held. Never raises."""
        if not self._held:
            return
        self._held = False
        if self._fd is not None and self._pid == os.getpid():
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self.release()
        fd, self._fd = self._fd, None
        if fd is not None and self._pid == os.getpid():
            with contextlib.suppress(OSError):
                os.close(fd)

    def _file(self) -> Optional[int]:
        """The gate's descriptor, opened on first use (and again in a forked child); None when unusable."""
        if not self._usable or fcntl is None:
            return None
        if self._fd is not None and self._pid == os.getpid():
            return self._fd
        self._fd, self._held = None, False  # a parent's descriptor is the parent's: left open for it
        try:
            before = os.lstat(self.path)
        except FileNotFoundError:
            before = None
        except OSError:
            return self._give_up()
        if before is not None and not _plain(before):
            return self._give_up()  # never opened: a FIFO, a device, a link, a folder, a file of several links
        try:
            fd = os.open(self.path, _FLAGS, 0o600)
        except OSError:  # a read-only folder, no permission, a race with a planted name
            return self._give_up()
        try:
            if not _plain(os.fstat(fd)):
                os.close(fd)
                return self._give_up()
        except OSError:
            os.close(fd)
            return self._give_up()
        self._fd, self._pid = fd, os.getpid()
        return fd

    def _give_up(self) -> Optional[int]:
        """No gate for this store from now on (SQLite's lock alone): None, the descriptor there is not."""
        self._usable = False
        return None


def _plain(info: os.stat_result) -> bool:
    """A gate this store may lock: a regular file of one link, owned by this process's user and open to no one else.
    Anyone who can open a file can hold its `flock`: a gate another user can open (planted in a folder others may
    write, or made readable to them) would let that user keep every writer waiting to the end of its busy policy."""
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_nlink == 1
        and info.st_uid == os.geteuid()
        and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    )
