"""The one check every file of the store's own passes (D-BOOKKEEPING): opened relative to a folder the root's walk
reached, never through a link, never blocking, and kept only when it is a regular file with a single link."""

from __future__ import annotations

import os
import stat
from typing import Tuple

from . import problems
from ._handles import FILE_MODE, O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from ._kernel import Dir

SINGLE_FLAGS = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_BINARY


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
