"""The filesystem store's own files in `.refmem/`: where each lives, the one check they all pass, the write lock,
and the access records' primitives.

Layout of `<root>/.refmem/` (never reachable through commands: names starting with `.refmem` are
refused by the path rules and left out of listings):

    lock                   the write lock (`flock`), empty
    changes                the change journal (`changes.py`)
    access/<sha256>        one access record per path (`access.py`)
    access/moves           the uses renames recorded, one line each (`_access_log.py`)
    openclaw-index.sqlite  the OpenClaw search index (`refmem.openclaw`)
    tenants/<name>/        a tenant's own memory root (D-STORE-TENANT-FS), with its own `.refmem/`

Every file here is opened the same way (`open_single`): relative to a folder reached by the root's one
walk, never through a link, never blocking (a FIFO planted by another program is refused, not waited
on), and kept only when it is a regular file with a single link (a hard link to a file outside is never
written through). What the caller does with anything else is its own decision (D-BOOKKEEPING).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from typing import Iterator, List, Optional, Protocol, Tuple

from . import _kernel as kernel
from . import _tree as tree
from . import problems
from ._handles import FILE_MODE, O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK, READ_FLAGS
from ._kernel import Dir
from .paths import RESERVED_PREFIX
from .problems import FsProblem, OsFailure

BOOKKEEPING_DIR = RESERVED_PREFIX  # `.refmem`
LOCK_NAME = "lock"
CHANGES_NAME = "changes"
MOVES_NAME = "moves"
ACCESS_DIR = "access"
TENANTS_DIR = "tenants"
RECORD_LIMIT = 8192  # a record holds one virtual path: anything larger is not one
SINGLE_FLAGS = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_BINARY
_UTIME_BY_FD = os.utime in os.supports_fd
# What another program left where a bookkeeping file or folder should be (D-BOOKKEEPING).
_SQUATTED = (
    problems.ParentNotDir, problems.IsLink, problems.Escaped, problems.Missing, problems.NotRegular, problems.HardLinked
)


class Walker(Protocol):
    """What reaches a folder below the root: `kernel.RootDir` and `tracked.TrackedDirectory` both do."""

    def walk(self, parts: Tuple[str, ...], create: bool = False) -> Dir: ...


# --- the one check ------------------------------------------------------------------------------


def is_single(info: os.stat_result) -> bool:
    """A regular file with one link: the only thing the store keeps its own data in."""
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def open_single(folder: Dir, name: str, flags: int, mode: int = FILE_MODE) -> Tuple[int, os.stat_result]:
    """The descriptor of `name` in `folder`, opened with `flags`, if it is a single-link regular file (and
    its fstat after opening).

    What stands at the name is looked at before it is opened (a FIFO or a device is never opened), and
    what was opened is looked at again (a file swapped in meanwhile counts, not the one seen before);
    the open never follows a link and never blocks. NotRegular(kind) or HardLinked when something else
    is there; the open's own problems (IsLink, Missing, OsFailure) as `open_file` raises them.
    """
    before = folder.lstat(name)
    if before is not None:
        _require_single(before)
    elif not flags & os.O_CREAT:
        raise problems.Missing()
    fd = folder.open_file(name, flags | SINGLE_FLAGS, mode)
    try:
        info = os.fstat(fd)
        _require_single(info)
    except BaseException as error:
        os.close(fd)
        if isinstance(error, OSError):
            raise problems.os_failure(error) from None
        raise
    return fd, info


def _require_single(info: os.stat_result) -> None:
    if is_single(info):
        return
    if stat.S_ISLNK(info.st_mode):
        raise problems.IsLink()
    if stat.S_ISREG(info.st_mode):
        raise problems.HardLinked()
    raise problems.NotRegular(problems.kind_of(info.st_mode))


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


# --- access records on disk: the kernel's primitives in the record folder -------------------------


def set_record_time(folder: Dir, name: str, stamp_ns: int) -> bool:
    """Date the record `name` through a descriptor of it, only if it is a single-link regular file
    (a FIFO is never waited on, a link never followed, a hard link never written through).
    False when it is not one: the caller replaces the name instead."""
    if not _UTIME_BY_FD:  # pragma: no cover - Windows: dated by name, checked just before
        path, dir_fd = folder.ref(name)
        os.utime(path, ns=(stamp_ns, stamp_ns), dir_fd=dir_fd)
        return True
    try:
        fd = open_single(folder, name, READ_FLAGS)[0]
    except (problems.IsLink, problems.Missing, problems.NotRegular, problems.HardLinked):
        return False
    try:
        os.utime(fd, ns=(stamp_ns, stamp_ns))
    finally:
        os.close(fd)
    return True


def put_record(folder: Dir, name: str, data: bytes, stamp_ns: int) -> None:
    """Create (or replace) the record `name` holding `data`, dated `stamp_ns`, all or nothing: a temp
    file is written, dated and renamed into place. Not fsynced (access times are not as durable as
    content: D-EXPIRY)."""
    temp = kernel.write_temp(folder, data, FILE_MODE, sync=False)
    try:
        if not set_record_time(folder, temp, stamp_ns):
            raise OsFailure("changed")
    except BaseException:
        kernel.unlink_quietly(folder, temp)
        raise
    kernel.replace(folder, temp, name)


def read_record(folder: Dir, name: str) -> Optional[Tuple[bytes, float]]:
    """(bytes, mtime) of the record `name`; None unless it is a single-link regular file of at most
    RECORD_LIMIT bytes. Bounded: a forged huge file is never read whole."""
    try:
        fd, info = open_single(folder, name, READ_FLAGS)
    except FsProblem:
        return None
    try:
        if info.st_size > RECORD_LIMIT:
            return None
        return os.read(fd, RECORD_LIMIT), info.st_mtime
    except OSError:
        return None
    finally:
        os.close(fd)


def remove_record(folder: Dir, name: str) -> None:
    """Remove the record `name`, or whatever squats it (a folder goes whole, a link is not followed)."""
    info = folder.lstat(name)
    if info is not None:
        with contextlib.suppress(problems.Missing):
            tree.remove(folder, name, info)


def names(folder: Dir) -> List[str]:
    """The names in an open folder, unsorted."""
    try:
        with folder.scandir() as entries:
            return [entry.name for entry in entries]
    except OSError as error:
        raise problems.os_failure(error) from None
