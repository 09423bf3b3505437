"""What the kernel's two folder handles share: the open flags, the modes, identities and the handle protocol.

`kernel.FdDir` (a descriptor) and `portable.PathDir` (a checked host path) are two answers to one
question, asked through the methods of `Handle` below. Both modules import this one and neither
imports the other's module for its flags, so the kernel can pick the portable handle without an
import circle. Nothing here touches the filesystem but `open_file` and `make_dir`, the two steps both
handles take alike: a handle names the place (a name and its descriptor, or a checked host path and None).
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, Optional, Protocol, Tuple

from .problems import problem_of

O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
O_BINARY: int = getattr(os, "O_BINARY", 0)
# A file is opened never through a link, never blocking (a FIFO swapped in), never as a tty.
READ_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_BINARY | getattr(os, "O_NOCTTY", 0)
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
FILE_MODE = 0o600
DIR_MODE = 0o700
CLOSED_FD = -1  # what a closed FdDir holds: every call relative to it fails with EBADF
TEMP_PREFIX = ".refmem-tmp-"
Identity = Tuple[int, int]  # (st_dev, st_ino)


def identity(info: os.stat_result) -> Identity:
    return info.st_dev, info.st_ino


def open_file(where: str, flags: int, mode: int, dir_fd: Optional[int]) -> int:
    """os.open, with its failure as the problem the walk reports."""
    try:
        return os.open(where, flags, mode, dir_fd=dir_fd)
    except OSError as error:
        raise problem_of(error) from None


def make_dir(where: str, dir_fd: Optional[int]) -> bool:
    """mkdir; False when something was made there meanwhile."""
    try:
        os.mkdir(where, DIR_MODE, dir_fd=dir_fd)
    except FileExistsError:
        return False
    except OSError as error:
        raise problem_of(error) from None
    return True


def inside(where: str, jail: str) -> bool:
    """A resolved host path lies in the jail (the root's resolved path) or is it."""
    return where == jail or where.startswith(jail.rstrip(os.sep) + os.sep)


class Handle(Protocol):
    """An open folder below the root, whichever way it is held. Every method acts on one name in it."""

    @property
    def jail(self) -> str: ...

    def ref(self, name: str) -> Tuple[str, Optional[int]]: ...

    def lstat(self, name: str) -> Optional[os.stat_result]: ...

    def open_dir(self, name: str) -> Handle: ...

    def open_parent(self, expected: Identity) -> Handle: ...

    def open_file(self, name: str, flags: int, mode: int = FILE_MODE) -> int: ...

    def make_dir(self, name: str) -> bool: ...

    def unlink(self, name: str) -> None: ...

    def rmdir(self, name: str) -> None: ...

    def scandir(self) -> contextlib.AbstractContextManager[Iterator[os.DirEntry[str]]]: ...

    def identity(self) -> Identity: ...

    def reach(self, parts: Tuple[str, ...]) -> Optional[Handle]: ...

    def removed(self) -> bool: ...

    def fsync(self) -> None: ...

    def confirm(self) -> None: ...

    def confirm_file(self, fd: int, name: str) -> None: ...

    def discard(self, fd: int, name: str) -> None: ...

    def pin(self, name: str) -> Optional[int]: ...

    def settle(self, pin: Optional[int], back: str) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Handle: ...

    def __exit__(self, *exc: object) -> None: ...
