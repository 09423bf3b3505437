"""The walk's folder handle where `dir_fd` and `O_NOFOLLOW` are missing (Windows): a checked host path.

The counterpart of `kernel.FdDir`, with the same interface (`handles.Handle`), chosen once by
`kernel.RootDir` (as Go keeps `root_noopenat.go` apart from `root_openat.go`). It imports the shared
flags from `handles.py`, never from the kernel, so the kernel imports it without a circle. Tests force it on Linux with
`portable_walk=True` so that it runs under the same attack and race tests as the descriptor walk.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Iterator, Optional, Tuple

from . import _handles as handles
from . import _syscalls as syscalls
from ._handles import FILE_MODE, O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, Identity, identity, inside
from .problems import Escaped, Missing, OsFailure, os_failure


class PathDir:
    """A folder held as a checked host path, for platforms without `dir_fd` (Windows).

    A path is resolved again by every call, so a folder on the way swapped for a link between a
    check and a use could redirect it. What narrows that window: every folder on the way is
    entered only after an lstat says it is a folder, its identity (device, inode) is kept, and
    before a file is returned or a byte written (`confirm_file`) and around every change
    (`confirm`), each folder on the way must still be the folder it was, and the opened object
    must be where its name says (`/proc/self/fd` or `F_GETPATH` where the platform tells).
    """

    __slots__ = ("path", "jail", "chain")

    def __init__(self, path: str, jail: str, chain: Tuple[Tuple[str, Identity], ...] = ()) -> None:
        self.path = path
        self.jail = jail
        self.chain = chain  # (host path, identity) of every folder entered below the root

    def ref(self, name: str) -> Tuple[str, Optional[int]]:
        return os.path.join(self.path, name), None

    def lstat(self, name: str) -> Optional[os.stat_result]:
        try:
            return os.stat(os.path.join(self.path, name), follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            raise os_failure(error) from None

    def open_dir(self, name: str) -> PathDir:
        info = self.lstat(name)
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise Missing()
        child = os.path.join(self.path, name)
        try:
            where = os.path.realpath(child)
        except OSError:  # a link swapped in while it was being resolved
            raise Escaped() from None
        if not inside(where, self.jail):
            raise Escaped()
        entered = PathDir(child, self.jail, self.chain + ((child, identity(info)),))
        entered.confirm()  # still the folder the lstat saw, and every folder above it too
        return entered

    def open_parent(self, expected: Identity) -> PathDir:
        if not self.chain:
            raise OsFailure("changed")
        parent = PathDir(os.path.dirname(self.path), self.jail, self.chain[:-1])
        if parent.identity() != expected:
            raise OsFailure("changed")
        parent.confirm()  # and every folder above it is still the one entered
        return parent

    def open_file(self, name: str, flags: int, mode: int = FILE_MODE) -> int:
        return handles.open_file(os.path.join(self.path, name), flags, mode, None)

    def make_dir(self, name: str) -> bool:
        return handles.make_dir(os.path.join(self.path, name), None)

    def unlink(self, name: str) -> None:
        self.confirm()
        os.unlink(os.path.join(self.path, name))

    def rmdir(self, name: str) -> None:
        self.confirm()
        os.rmdir(os.path.join(self.path, name))

    def scandir(self) -> contextlib.AbstractContextManager[Iterator[os.DirEntry[str]]]:
        self.confirm()
        return os.scandir(self.path)

    def identity(self) -> Identity:
        try:
            return identity(os.stat(self.path, follow_symlinks=False))
        except OSError as error:
            raise os_failure(error) from None

    def reach(self, parts: Tuple[str, ...]) -> None:
        """No one call reaches a folder here: the walk goes name by name, each step checked."""
        return None

    def removed(self) -> bool:
        return not os.path.isdir(self.path)

    def fsync(self) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(self.path, os.O_RDONLY | O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def confirm(self) -> None:
        """Every folder on the way is still the folder that was entered (not a link, same inode)."""
        for path, expected in self.chain:
            try:
                info = os.stat(path, follow_symlinks=False)
            except OSError:
                raise Escaped() from None
            if not stat.S_ISDIR(info.st_mode) or identity(info) != expected:
                raise Escaped()

    def confirm_file(self, fd: int, name: str) -> None:
        """The file just opened as `name` is the one the checks see, inside the jail."""
        self.confirm()
        opened = identity(os.fstat(fd))
        now = self.lstat(name)
        if now is None or identity(now) != opened:
            raise Escaped()
        where = syscalls.fd_path(fd)
        if where is not None and not inside(where, self.jail):
            raise Escaped()

    def discard(self, fd: int, name: str) -> None:
        """Remove the file created as `name`, wherever a swapped folder put it: by the name the
        kernel gives the open file where it can, else by `name`, and only if it is that very file."""
        with contextlib.suppress(OSError):
            opened = identity(os.fstat(fd))
            where = syscalls.fd_path(fd) or os.path.join(self.path, name)
            if identity(os.stat(where, follow_symlinks=False)) == opened:
                os.unlink(where)

    def pin(self, name: str) -> Optional[int]:
        """A handle on the object about to be moved (O_PATH: it opens a link or a FIFO without
        following or blocking), so that `settle` can ask the kernel where it landed."""
        flags = getattr(os, "O_PATH", 0)
        if not flags or os.sep != "/":  # Linux only (Windows refuses to move an open file)
            return None
        try:
            return os.open(os.path.join(self.path, name), flags | O_NOFOLLOW | O_CLOEXEC)
        except OSError:
            return None

    def settle(self, pin: Optional[int], back: str) -> None:
        """After a move into this folder: if a folder swapped on the way took the object outside the
        root, put it back where it came from (never over anything) and refuse."""
        where = None if pin is None else syscalls.fd_path(pin)
        if where is None or inside(where, self.jail):
            return
        with contextlib.suppress(OSError):
            if not os.path.lexists(back):
                os.rename(where, back)
        raise Escaped()

    def close(self) -> None:
        """Nothing is held open."""

    def __enter__(self) -> PathDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
