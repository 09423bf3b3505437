"""The filesystem store's own files in `.refmem/`: where each lives, the one check they all pass, and the write lock
(the access records' primitives are `_records.py`).

Layout of `<root>/.refmem/` (never reachable through commands: names starting with `.refmem` are
refused by the path rules and left out of listings):

    lock                   the write lock (`flock`), empty
    changes                the change journal (`changes.py`)
    access/<sha256>        one access record per path (`access.py`)
    access/moves           the uses renames recorded, one line each (`_access_log.py`)
    openclaw-index.sqlite  the OpenClaw search index (`refmem.openclaw`)
    tenants/<name>/        a tenant's own memory root (D-STORE-TENANT-FS), with its own `.refmem/`

Every file here is opened the same way (`_single.open_single`): relative to a folder reached by the root's one
walk, never through a link, never blocking (a FIFO planted by another program is refused, not waited
on), and kept only when it is a regular file with a single link (a hard link to a file outside is never
written through). What the caller does with anything else is its own decision (D-BOOKKEEPING).
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Callable, Optional, Protocol, Tuple

from . import problems
from ._kernel import Dir
from ._single import open_single
from .paths import RESERVED_PREFIX
from .problems import OsFailure

fcntl: Optional[ModuleType]
try:  # flock; absent on Windows, where one process per root is assumed
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

BOOKKEEPING_DIR = RESERVED_PREFIX  # `.refmem`
LOCK_NAME = "lock"
CHANGES_NAME = "changes"
MOVES_NAME = "moves"
ACCESS_DIR = "access"
TENANTS_DIR = "tenants"
# What another program left where a bookkeeping file or folder should be (D-BOOKKEEPING).
_SQUATTED = (
    problems.ParentNotDir, problems.IsLink, problems.Escaped, problems.Missing, problems.NotRegular, problems.HardLinked
)


class Walker(Protocol):
    """What reaches a folder below the root: `kernel.RootDir` and `tracked.TrackedDirectory` both do."""

    def walk(self, parts: Tuple[str, ...], create: bool = False) -> Dir: ...


def open_folder(root: Walker, parts: Tuple[str, ...], create: bool) -> Dir:
    """`.refmem/<parts>`, by the root's one walk (made with `create`; else Missing when absent). A file
    or a link squatting a folder's name is OsFailure("bookkeeping"), which names no path."""
    try:
        return root.walk((BOOKKEEPING_DIR,) + parts, create=create)
    except (problems.ParentNotDir, problems.Escaped):
        raise OsFailure("bookkeeping") from None


# --- the write lock ------------------------------------------------------------------------------


class WriteLock:
    """An exclusive lock shared by every handler, thread and process on one root.

    Threads queue on a threading lock; processes on `flock` of `.refmem/lock`, kept open for the
    store's life and reopened after a fork (a forked child shares the parent's open file). Readers
    that must not see a writer half-way (the change journal's) take it shared. `held()` tells whether
    the calling thread holds it, so a mutation called outside it can take it for itself. `locked()` is a plain
    context manager: every mutation takes it, and a generator's would cost more than both `flock` calls.
    """

    def __init__(self, root: Walker) -> None:
        self._root = root
        self._thread_lock = threading.Lock()
        self._holder: Optional[int] = None
        self._fd: Optional[int] = None
        self._pid = 0
        self._held_fd: Optional[int] = None  # the lock file `flock`ed by the holder
        self._close = os.close
        self.released: Optional[Callable[[], None]] = None  # called under the lock, just before it is let go
        self._exclusive = _Locked(self, False)

    def held(self) -> bool:
        return self._holder == threading.get_ident()

    def locked(self, shared: bool = False) -> _Locked:
        return _Locked(self, True) if shared else self._exclusive

    def _acquire(self, shared: bool) -> None:
        self._thread_lock.acquire()
        try:
            fd = self._lock_file()
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)  # type: ignore[union-attr]
        except BaseException:
            self._thread_lock.release()
            raise
        self._held_fd = fd
        self._holder = threading.get_ident()

    def _release(self) -> None:
        try:
            if self.released is not None:
                self.released()
        finally:
            self._holder = None
            try:
                fd, self._held_fd = self._held_fd, None
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)  # type: ignore[union-attr]
            finally:
                self._thread_lock.release()

    def _lock_file(self) -> Optional[int]:
        """The lock file (see `open_single`). Anything else squatting the bookkeeping folder or the lock's
        name is OsFailure("bookkeeping"), which names no path."""
        if fcntl is None:  # pragma: no cover - Windows: one process per root is assumed
            return None
        if self._fd is not None and self._pid == PROCESS_ID[0]:
            return self._fd
        try:
            with self._root.walk((BOOKKEEPING_DIR,), create=True) as folder:
                fd = open_single(folder, LOCK_NAME, os.O_RDONLY | os.O_CREAT)[0]
        except _SQUATTED:
            raise OsFailure("bookkeeping") from None
        if self._fd is not None and self._pid == PROCESS_ID[0]:  # pragma: no cover
            self._close(self._fd)
        self._fd, self._pid = fd, PROCESS_ID[0]
        return fd

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None and self._pid == PROCESS_ID[0]:
            self._close(fd)


class _Locked:
    """`with lock.locked():` the write lock held for the block (see `WriteLock.locked`)."""

    __slots__ = ("_lock", "_shared")

    def __init__(self, lock: WriteLock, shared: bool) -> None:
        self._lock = lock
        self._shared = shared

    def __enter__(self) -> None:
        self._lock._acquire(self._shared)

    def __exit__(self, *exc: object) -> None:
        self._lock._release()


# This process's id, kept by a fork hook rather than asked at every lock: a forked child reopens the lock file.
PROCESS_ID = [os.getpid()]
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: PROCESS_ID.__setitem__(0, os.getpid()))

