"""The access records' primitives in their folder `.refmem/access/` (`_access.py`): each a kernel primitive on a
single-link regular file (`_single.open_single`), never through a link, a FIFO or a hard link (D-BOOKKEEPING).
Only the tracked store needs them: a vendored copy without access records leaves this file out (D-VENDOR-SET)."""

from __future__ import annotations

import contextlib
import os
from typing import List, Optional, Tuple

from . import _kernel as kernel
from . import _tree as tree
from . import problems
from ._handles import FILE_MODE, READ_FLAGS
from ._kernel import Dir
from ._single import open_single
from .problems import FsProblem, OsFailure

RECORD_LIMIT = 8192  # a record holds one virtual path: anything larger is not one
_UTIME_BY_FD = os.utime in os.supports_fd


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
