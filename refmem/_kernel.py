"""The confinement kernel, the file to audit: every name below the root is reached from the open root.

* `RootDir` opens the memory directory once and chooses, once, how folders are held: `FdDir` (a
  descriptor; names resolve with `*at` calls, so a folder swapped for a link after it was entered
  redirects nothing) or, without `dir_fd` and `O_NOFOLLOW`, `portable.PathDir` (a checked host
  path, weaker: see that module and SECURITY.md), behind one interface.
* `walk` reaches a folder in one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` call where Linux
  has it, else name by name, never through a link or into a non-folder, and confirms where it ended.
  No other call is given a path of more than one name (a `stat` by such a path would pass through a
  link planted on the way, and wait on whatever lies behind it), so nothing outside is ever looked at.
* The primitives (`open_regular`, `write_temp`, `replace`, `rename_noreplace`) act on one open
  folder and a last name, like Go's `os.Root` on a parent descriptor. `tree.py` orders handle
  methods into descents and removals; it resolves no name itself.

Names here have passed `paths.parse_path` (no separators, no dots, no empty names). Errors are
`problems.FsProblem`s with a `code`; the words a user reads live in `messages.py`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
from typing import TYPE_CHECKING, Callable, Iterator, List, Optional, Tuple, Union, cast

from . import _handles as handles
from . import _syscalls as syscalls
from . import problems
from ._handles import (  # the flags and modes both handles use; re-exported, since callers name them here
    CLOSED_FD,
    CREATE_FLAGS,
    DIR_FLAGS,
    DIR_MODE,
    FILE_MODE,
    O_BINARY,
    O_CLOEXEC,
    O_DIRECTORY,
    O_NOFOLLOW,
    O_NONBLOCK,
    READ_FLAGS,
    TEMP_PREFIX,
    Identity,
    identity,
    inside,
)
from ._optional import required_module
from .problems import Missing, OsFailure, os_failure, problem_of

if TYPE_CHECKING:  # the portable walk is loaded only where it is used: a vendored copy may leave it out
    from ._portable import PathDir

__all__ = [
    "CLOSED_FD", "CREATE_FLAGS", "DIR_FLAGS", "DIR_MODE", "FD_WALK_AVAILABLE", "FILE_MODE", "O_BINARY",
    "O_CLOEXEC", "O_DIRECTORY", "O_NOFOLLOW", "O_NONBLOCK", "READ_FLAGS", "TEMP_PREFIX", "Dir", "FdDir",
    "Identity", "RootDir", "identity", "inside", "open_regular", "rename_noreplace", "replace",
    "unlink_quietly", "write_temp",
]

FD_WALK_AVAILABLE = bool(
    O_NOFOLLOW
    and O_DIRECTORY
    and {os.open, os.stat, os.mkdir, os.unlink, os.rmdir, os.rename} <= os.supports_dir_fd
    and os.scandir in os.supports_fd
)

# --- folder handles: the one place the two strategies differ -----------------------------------


class FdDir:
    """An open folder held as a descriptor; names resolve against it (`openat` and friends)."""

    __slots__ = ("fd", "owned", "jail")

    def __init__(self, fd: int, jail: str, owned: bool = True) -> None:
        self.fd = fd
        self.jail = jail  # the root's resolved host path, for `confirm`
        self.owned = owned  # the root's descriptor is lent to walks, never closed by them

    def ref(self, name: str) -> Tuple[str, Optional[int]]:
        """(path argument, dir_fd) for an `os` call on `name` in this folder."""
        return name, self.fd

    def lstat(self, name: str) -> Optional[os.stat_result]:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            raise os_failure(error) from None

    def open_dir(self, name: str) -> FdDir:
        """Enter a subfolder: never through a link (ELOOP), never anything but a folder."""
        try:
            return FdDir(os.open(name, DIR_FLAGS, dir_fd=self.fd), self.jail)
        except OSError as error:  # a link is not a folder we enter: Missing, as for a file
            raise (Missing() if error.errno == errno.ELOOP else problem_of(error)) from None

    def open_parent(self, expected: Identity) -> FdDir:
        """The folder holding this one, only if it is the one entered on the way down (`expected`)
        and still inside the root: the way back up a descent, which `..` alone would not confine."""
        try:
            parent = FdDir(os.open("..", DIR_FLAGS, dir_fd=self.fd), self.jail)
        except OSError as error:
            raise os_failure(error) from None
        try:
            if identity(os.fstat(parent.fd)) != expected:
                raise OsFailure("changed")
            parent.confirm()
        except BaseException:
            parent.close()
            raise
        return parent

    def open_file(self, name: str, flags: int, mode: int = FILE_MODE) -> int:
        return handles.open_file(name, flags, mode, self.fd)

    def make_dir(self, name: str) -> bool:
        """mkdir; False when something was made there meanwhile."""
        return handles.make_dir(name, self.fd)

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def rmdir(self, name: str) -> None:
        os.rmdir(name, dir_fd=self.fd)

    def scandir(self) -> contextlib.AbstractContextManager[Iterator[os.DirEntry[str]]]:
        return cast("contextlib.AbstractContextManager[Iterator[os.DirEntry[str]]]", os.scandir(self.fd))

    def identity(self) -> Identity:
        return identity(os.fstat(self.fd))

    def reach(self, parts: Tuple[str, ...]) -> Optional[FdDir]:
        """The folder `parts` names below this one in one call, or None: go name by name. One name is
        one entry of this folder, never a link (`open_dir`): all that openat2 would check. More go
        through openat2 where Linux has it."""
        if len(parts) == 1:
            return self.open_dir(parts[0])
        openat2 = _openat2
        return None if openat2 is None else _beneath(openat2, self, parts)

    def removed(self) -> bool:
        """This folder was deleted (no name left) since it was opened."""
        try:
            return os.fstat(self.fd).st_nlink == 0
        except OSError as error:  # EBADF once closed
            raise os_failure(error) from None

    def fsync(self) -> None:
        with contextlib.suppress(OSError):
            os.fsync(self.fd)

    def confirm(self) -> None:
        """Belt and braces: the kernel's own answer for where this folder is must lie in the jail."""
        if not self.owned:
            return  # the root itself, opened from its resolved path
        where = syscalls.fd_path(self.fd)
        if where is not None and not inside(where, self.jail):
            raise problems.Escaped()

    def confirm_file(self, fd: int, name: str) -> None:
        """Nothing to add: a file opened relative to a confirmed descriptor is where it was named."""

    def discard(self, fd: int, name: str) -> None:
        """Remove the file this folder created as `name` (still open as `fd`), after a failure."""
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=self.fd)

    def pin(self, name: str) -> Optional[int]:
        """Nothing to pin: a move between confirmed descriptors lands where it was named."""
        return None

    def settle(self, pin: Optional[int], back: str) -> None:
        """Nothing to check (see pin)."""

    def close(self) -> None:
        """Close an owned descriptor. A closed handle keeps CLOSED_FD: a late use fails (EBADF)
        instead of resolving names against the working directory."""
        if self.owned and self.fd != CLOSED_FD:
            fd, self.fd = self.fd, CLOSED_FD
            os.close(fd)

    def __enter__(self) -> FdDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The no-`dir_fd` variant lives in its own file, as Go's root_noopenat.go does; both follow handles.Handle.
Dir = Union[FdDir, "PathDir"]


# --- the root and the walk ---------------------------------------------------------------------


class RootDir:
    """The memory directory, opened once; `top` is lent to every walk and closed only by close()."""

    def __init__(self, path: Union[str, os.PathLike[str]], portable: bool = False, create: bool = True) -> None:
        if create:
            os.makedirs(path, mode=DIR_MODE, exist_ok=True)
        elif not os.path.isdir(path):
            raise Missing()
        self.real = os.path.realpath(path)
        self.portable = portable or not FD_WALK_AVAILABLE
        self._fd: Optional[int] = None
        self._close = os.close  # the close of the `os` that opened it (a test may patch `os` later)
        if self.portable:
            portable_walk = required_module("_portable", "the portable walk (portable_walk, or no dir_fd here)")
            self.top: Dir = portable_walk.PathDir(self.real, self.real)
        else:
            try:
                self._fd = os.open(self.real, os.O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            except OSError as error:
                raise os_failure(error) from None
            self.top = FdDir(self._fd, self.real, owned=False)

    def check_removed(self) -> None:
        """OsFailure("root_removed") when the root was deleted since it was opened (OsFailure once closed)."""
        if self.top.removed():
            raise OsFailure("root_removed")

    def walk(
        self, parts: Tuple[str, ...], create: bool = False, made: Optional[List[int]] = None, check: bool = True
    ) -> Dir:
        """Open the folder `parts` names: one call where it can, else one name at a time; with `create`,
        make missing folders.

        The caller closes the result (`with`); for the root it is the lent `top`, which closing
        leaves open. Raises Missing for a path through a non-folder or a link (ParentNotDir when
        creating). The index of every folder made is appended to `made`, so a failed command can
        undo them. `check=False` leaves the root-removed check (a stat) to the caller: a view makes
        it only when nothing is found.
        """
        if check:
            self.check_removed()
        if parts and not create:
            reached = self.top.reach(parts)
            if reached is not None:
                return reached
        current = self.top
        try:
            for index, name in enumerate(parts):
                try:
                    child = current.open_dir(name)
                except Missing:
                    if not create:
                        raise
                    # A folder another writer made between the open and this look is a folder like any
                    # other (concurrent creates of one parent both succeed); anything else there stops us.
                    found = current.lstat(name)
                    if found is None:
                        if current.make_dir(name) and made is not None:
                            made.append(index)
                    elif not stat.S_ISDIR(found.st_mode):
                        raise problems.ParentNotDir(index + 1) from None
                    child = current.open_dir(name)
                current.close()  # only the folder being entered stays open
                current = child
            current.confirm()
        except BaseException:
            current.close()
            raise
        return current

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if isinstance(self.top, FdDir):
            self.top.fd = CLOSED_FD  # a walk after close() fails, never wanders
        if fd is not None:
            self._close(fd)


def _beneath(openat2: Callable[[int, bytes], int], top: FdDir, parts: Tuple[str, ...]) -> FdDir:
    """The whole walk in one kernel call: every name a folder, no link anywhere, never outside
    `top` (the kernel refuses a resolution that a concurrent rename would take out: EXDEV or
    EAGAIN). What the name-by-name walk checks, and its after-the-fact confinement check (which
    this makes unneeded), the kernel enforces while resolving."""
    path = os.fsencode("/".join(parts))
    for _ in range(4):
        fd = openat2(top.fd, path)
        if fd >= 0:
            return FdDir(fd, top.jail)
        code = ctypes.get_errno()
        if code != errno.EAGAIN:
            break
    if code in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
        raise Missing()  # nothing there, or a file or a link on the way
    if code == errno.EXDEV:
        raise problems.Escaped()
    if code == errno.EAGAIN:
        raise OsFailure("tree_changed")
    raise os_failure(OSError(code, os.strerror(code)))


# --- primitives on (folder, name) --------------------------------------------------------------


def open_regular(folder: Dir, name: str, refuse_hard_links: bool) -> Tuple[int, os.stat_result]:
    """Open the regular file `name` for reading: (descriptor, fstat after opening).

    The lstat refuses links and special files before anything is opened (a FIFO is never opened);
    what counts is the fstat of what was opened: a file atomically replaced since is fine, anything
    but a (single-link, unless allowed) regular file is not.
    """
    before = folder.lstat(name)
    if before is None:
        raise Missing()
    if not stat.S_ISREG(before.st_mode):  # a link is not a regular file either: one test for the common case
        if stat.S_ISLNK(before.st_mode):
            raise problems.IsLink()
        raise problems.NotRegular(problems.kind_of(before.st_mode))
    if refuse_hard_links and before.st_nlink > 1:
        raise problems.HardLinked()
    fd = folder.open_file(name, READ_FLAGS)
    try:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode):
            raise OsFailure("changed")
        if refuse_hard_links and after.st_nlink > 1:
            raise problems.HardLinked()
        folder.confirm_file(fd, name)
    except BaseException:
        os.close(fd)
        raise
    return fd, after


def write_temp(folder: Dir, data: bytes, mode: int, sync: bool = True) -> str:
    """Write `data` to a fresh hidden temp file in `folder` (fsynced with `sync`); its name.

    The file is confirmed to be where it was named before a byte is written; on any failure it
    is removed.
    """
    for _ in range(8):
        name = TEMP_PREFIX + secrets.token_hex(8)
        try:
            fd = folder.open_file(name, CREATE_FLAGS, FILE_MODE)
        except problems.Exists:
            continue
        break
    else:  # pragma: no cover - 8 collisions of 64 random bits
        raise OsFailure("os")
    try:
        folder.confirm_file(fd, name)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            if written <= 0:
                raise OSError(errno.EIO, "short write")
            view = view[written:]
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        if sync:
            os.fsync(fd)
    except BaseException as error:
        folder.discard(fd, name)
        os.close(fd)
        if isinstance(error, OSError):
            raise os_failure(error) from None
        raise
    os.close(fd)
    return name


def replace(folder: Dir, temp: str, name: str, expected: Optional[Identity] = None) -> None:
    """Rename the temp file over `name` in one step; on failure the temp file goes. With `expected`,
    `name` must still be that file (device, inode) just before: what an edit read is what it replaces."""
    src, src_fd = folder.ref(temp)
    dst, dst_fd = folder.ref(name)
    try:
        folder.confirm()
        if expected is not None:
            current = folder.lstat(name)
            if current is None or not stat.S_ISREG(current.st_mode) or identity(current) != expected:
                raise OsFailure("changed")
        os.replace(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except OSError as error:
        unlink_quietly(folder, temp)
        raise os_failure(error) from None
    except BaseException:
        unlink_quietly(folder, temp)
        raise


_AT_FDCWD = syscalls.AT_FDCWD
_RENAME_NOREPLACE = syscalls.RENAME_NOREPLACE
_renameat2 = syscalls.load_renameat2()
_openat2 = syscalls.load_openat2(DIR_FLAGS & ~O_NOFOLLOW)  # None where missing: the walk goes name by name


def rename_noreplace(src: Dir, src_name: str, dst: Dir, dst_name: str, is_dir: bool) -> None:
    """Move without ever replacing: check and move are one step where the OS allows it
    (`renameat2(RENAME_NOREPLACE)`), a hard link then unlink for files elsewhere, and for folders
    a check then a rename (the caller holds the root's lock)."""
    pin = src.pin(src_name)
    try:
        _move(src, src_name, dst, dst_name, is_dir)
        dst.settle(pin, src.ref(src_name)[0])
    finally:
        if pin is not None:
            os.close(pin)


def _move(src: Dir, src_name: str, dst: Dir, dst_name: str, is_dir: bool) -> None:
    src_path, src_fd = src.ref(src_name)
    dst_path, dst_fd = dst.ref(dst_name)
    src.confirm()
    if dst is not src:  # one folder (a rename within it) is confirmed once
        dst.confirm()
    if _renameat2 is not None:
        result = _renameat2(
            _AT_FDCWD if src_fd is None else src_fd,
            os.fsencode(src_path),
            _AT_FDCWD if dst_fd is None else dst_fd,
            os.fsencode(dst_path),
            _RENAME_NOREPLACE,
        )
        if result == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise problem_of(OSError(code, os.strerror(code)))
    if not is_dir:
        try:
            os.link(src_path, dst_path, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
        except FileExistsError:
            raise problems.Exists() from None
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK):
                raise os_failure(error) from None
        else:
            try:
                os.unlink(src_path, dir_fd=src_fd)
            except OSError as error:  # undo: the file must not end up under both names
                with contextlib.suppress(OSError):
                    os.unlink(dst_path, dir_fd=dst_fd)
                raise os_failure(error) from None
            return
    if dst.lstat(dst_name) is not None:
        raise problems.Exists()
    try:
        os.rename(src_path, dst_path, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except OSError as error:
        raise os_failure(error) from None


def unlink_quietly(folder: Dir, name: str) -> None:
    with contextlib.suppress(OSError, problems.FsProblem):
        folder.unlink(name)
