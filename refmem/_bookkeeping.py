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

import contextlib
import os
import threading
from typing import Callable, Iterator, Optional, Protocol, Tuple

from . import problems
from ._kernel import Dir
from ._single import open_single
from .paths import RESERVED_PREFIX
from .problems import OsFailure

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
    the calling thread holds it, so a mutation called outside it can take it for itself.
    """

    def __init__(self, root: Walker) -> None:
        self._root = root
        self._thread_lock = threading.Lock()
        self._holder: Optional[int] = None
        self._fd: Optional[int] = None
        self._pid = 0
        self._close = os.close
        self.released: Optional[Callable[[], None]] = None  # called under the lock, just before it is let go

    def held(self) -> bool:
        return self._holder == threading.get_ident()

    @contextlib.contextmanager
    def locked(self, shared: bool = False) -> Iterator[None]:
        with self._thread_lock:
            fd = self._lock_file()
            if fd is None:  # pragma: no cover - Windows: one process per root is assumed
                self._holder = threading.get_ident()
                try:
                    yield
                finally:
                    self._holder = None
                return
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            self._holder = threading.get_ident()
            try:
                yield
            finally:
                try:
                    if self.released is not None:
                        self.released()
                finally:
                    self._holder = None
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock_file(self) -> Optional[int]:
        """The lock file (see `open_single`). Anything else squatting the bookkeeping folder or the lock's
        name is OsFailure("bookkeeping"), which names no path."""
        try:
            import fcntl  # noqa: F401 - only to learn whether flock exists here
        except ImportError:  # pragma: no cover
            return None
        if self._fd is not None and self._pid == os.getpid():
            return self._fd
        try:
            with self._root.walk((BOOKKEEPING_DIR,), create=True) as folder:
                fd = open_single(folder, LOCK_NAME, os.O_RDONLY | os.O_CREAT)[0]
        except _SQUATTED:
            raise OsFailure("bookkeeping") from None
        if self._fd is not None and self._pid == os.getpid():  # pragma: no cover
            self._close(self._fd)
        self._fd, self._pid = fd, os.getpid()
        return fd

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None and self._pid == os.getpid():
            self._close(fd)

