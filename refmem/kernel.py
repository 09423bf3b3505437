"""The confinement kernel: every name below the root is reached by one walk from the open root.

This is the file to audit for confinement. Everything else reaches the disk through it.

* `RootDir` opens the memory directory once and chooses, once, how folders are held: `FdDir` (a
  descriptor; names resolve with `*at` calls, so a folder swapped for a link after it was entered
  cannot redirect anything) or, where `dir_fd` and `O_NOFOLLOW` are missing, `portable.PathDir`
  (a checked host path, weaker: see that module and SECURITY.md). Both offer one interface.
* `walk` enters one name at a time from the root, never through a link or into a non-folder, and
  confirms the folder it ends in lies inside the root (belt and braces).
* The primitives (`write_temp`, `replace`, `rename_noreplace`, `remove`, `descend`) work on one
  open folder and a last name, as Go's `os.Root` operations do on a parent descriptor.

Names given here have already passed `paths.parse_path`: no separators, no dots, no empty names.
Errors are `FsProblem`s carrying a `code`; the words a user reads live in `messages.py`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
from typing import TYPE_CHECKING, Callable, Dict, Generator, Iterator, List, Optional, Tuple, Union, cast

from . import syscalls

O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
O_BINARY: int = getattr(os, "O_BINARY", 0)
FD_WALK_AVAILABLE = bool(
    O_NOFOLLOW
    and O_DIRECTORY
    and {os.open, os.stat, os.mkdir, os.unlink, os.rmdir, os.rename} <= os.supports_dir_fd
    and os.scandir in os.supports_fd
)
# A file is opened never through a link, never blocking (a FIFO swapped in), never as a tty.
READ_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_BINARY | getattr(os, "O_NOCTTY", 0)
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
FILE_MODE = 0o600
DIR_MODE = 0o700
CLOSED_FD = -1  # what a closed FdDir holds: every call relative to it fails with EBADF
TEMP_PREFIX = ".refmem-tmp-"
DIR, FILE, LINK, SPECIAL = "dir", "file", "link", "special"
_KIND_BY_FORMAT = {stat.S_IFDIR: DIR, stat.S_IFREG: FILE, stat.S_IFLNK: LINK}
Identity = Tuple[int, int]  # (st_dev, st_ino)


def kind_of(mode: int) -> str:
    return _KIND_BY_FORMAT.get(stat.S_IFMT(mode), SPECIAL)


def identity(info: os.stat_result) -> Identity:
    return info.st_dev, info.st_ino


# --- what can go wrong: values with a code, never shown as they are ----------------------------


class FsProblem(Exception):
    """An outcome the caller turns into a result; `code` names it for the message table."""

    code = "fs"


class Missing(FsProblem):
    code = "missing"  # nothing there, or a path through something that is not a folder


class IsLink(FsProblem):
    code = "link"


class HardLinked(FsProblem):
    code = "hard_linked"  # a regular file with other names: its content may live outside the root


class Exists(FsProblem):
    code = "exists"


class Escaped(FsProblem):
    code = "escaped"  # the confinement check found a location outside the root


class NotRegular(FsProblem):
    """A FIFO, socket, device, or a folder where a file is needed; `kind` says which."""

    code = "not_regular"

    def __init__(self, kind: str = SPECIAL) -> None:
        super().__init__(kind)
        self.kind = kind


class ParentNotDir(FsProblem):
    """Creating below a non-folder: `depth` names lead to it."""

    code = "parent_not_dir"

    def __init__(self, depth: int) -> None:
        super().__init__(depth)
        self.depth = depth


class OsFailure(FsProblem):
    """The OS refused, or the tree changed under us; `code` is a key of messages.IO_REASONS."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


_CODE_BY_ERRNO: Dict[int, str] = {
    errno.ENOSPC: "no_space",
    errno.EDQUOT: "no_space",
    errno.EIO: "io",
    errno.EACCES: "denied",
    errno.EPERM: "denied",
    errno.EROFS: "read_only_fs",
}


def os_failure(error: OSError) -> OsFailure:
    return OsFailure(_CODE_BY_ERRNO.get(error.errno or 0, "os"))


def _mapped(error: OSError) -> FsProblem:
    """The problem an OSError from a call on one name stands for."""
    if isinstance(error, (FileNotFoundError, NotADirectoryError)):
        return Missing()
    if isinstance(error, FileExistsError):
        return Exists()
    if error.errno == errno.ELOOP:
        return IsLink()
    return os_failure(error)


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
            raise (Missing() if error.errno == errno.ELOOP else _mapped(error)) from None

    def open_parent(self, expected: Identity) -> FdDir:
        """The folder holding this one, if it is still the one entered on the way down."""
        parent = FdDir(os.open("..", DIR_FLAGS, dir_fd=self.fd), self.jail)
        if identity(os.fstat(parent.fd)) != expected:
            parent.close()
            raise OsFailure("changed")
        return parent

    def open_file(self, name: str, flags: int, mode: int = FILE_MODE) -> int:
        try:
            return os.open(name, flags, mode, dir_fd=self.fd)
        except OSError as error:
            raise _mapped(error) from None

    def make_dir(self, name: str) -> bool:
        """mkdir; False when something was made there meanwhile."""
        try:
            os.mkdir(name, DIR_MODE, dir_fd=self.fd)
        except FileExistsError:
            return False
        except OSError as error:
            raise _mapped(error) from None
        return True

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def rmdir(self, name: str) -> None:
        os.rmdir(name, dir_fd=self.fd)

    def scandir(self) -> contextlib.AbstractContextManager[Iterator[os.DirEntry[str]]]:
        return cast("contextlib.AbstractContextManager[Iterator[os.DirEntry[str]]]", os.scandir(self.fd))

    def identity(self) -> Identity:
        return identity(os.fstat(self.fd))

    def fsync(self) -> None:
        with contextlib.suppress(OSError):
            os.fsync(self.fd)

    def confirm(self) -> None:
        """Belt and braces: the kernel's own answer for where this folder is must lie in the jail."""
        if not self.owned:
            return  # the root itself, opened from its resolved path
        where = syscalls.fd_path(self.fd)
        if where is not None and not inside(where, self.jail):
            raise Escaped()

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


if TYPE_CHECKING:  # the no-`dir_fd` variant lives in its own file, as Go's root_noopenat.go does
    from .portable import PathDir

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
            from .portable import PathDir

            self.top: Dir = PathDir(self.real, self.real)
        else:
            try:
                self._fd = os.open(self.real, os.O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            except OSError as error:
                raise os_failure(error) from None
            self.top = FdDir(self._fd, self.real, owned=False)

    def check_removed(self) -> None:
        """OsFailure("root_removed") when the root was deleted since it was opened (or closed)."""
        if self.portable:
            if not os.path.isdir(self.real):
                raise OsFailure("root_removed")
            return
        if self._fd is None:
            raise OsFailure("os")
        try:
            removed = os.fstat(self._fd).st_nlink == 0
        except OSError as error:
            raise os_failure(error) from None
        if removed:
            raise OsFailure("root_removed")

    def walk(
        self, parts: Tuple[str, ...], create: bool = False, made: Optional[List[int]] = None, check: bool = True
    ) -> Dir:
        """Open the folder `parts` names, one name at a time; with `create`, make missing folders.

        The caller closes the result (`with`); for the root it is the lent `top`, which closing
        leaves open. Raises Missing for a path through a non-folder or a link (ParentNotDir when
        creating). The index of every folder made is appended to `made`, so a failed command can
        undo them. `check=False` leaves the root-removed check (a stat) to the caller: a view makes
        it only when nothing is found.
        """
        if check:
            self.check_removed()
        openat2 = _openat2
        if parts and not create and openat2 is not None and isinstance(self.top, FdDir):
            return _beneath(openat2, self.top, parts)
        current = self.top
        try:
            for index, name in enumerate(parts):
                try:
                    child = current.open_dir(name)
                except Missing:
                    if not create:
                        raise
                    if current.lstat(name) is not None:
                        raise ParentNotDir(index + 1) from None
                    if current.make_dir(name) and made is not None:
                        made.append(index)
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
        raise Escaped()
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
    kind = kind_of(before.st_mode)
    if kind == LINK:
        raise IsLink()
    if kind != FILE:
        raise NotRegular(kind)
    if refuse_hard_links and before.st_nlink > 1:
        raise HardLinked()
    fd = folder.open_file(name, READ_FLAGS)
    try:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode):
            raise OsFailure("changed")
        if refuse_hard_links and after.st_nlink > 1:
            raise HardLinked()
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
        except Exists:
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
_openat2 = syscalls.load_openat2(DIR_FLAGS & ~O_NOFOLLOW)


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
            raise _mapped(OSError(code, os.strerror(code)))
    if not is_dir:
        try:
            os.link(src_path, dst_path, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
        except FileExistsError:
            raise Exists() from None
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
        raise Exists()
    try:
        os.rename(src_path, dst_path, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except OSError as error:
        raise os_failure(error) from None


def scan(folder: Dir) -> List[Tuple[str, os.stat_result]]:
    """Every name in an open folder with its lstat; names gone before their lstat are left out."""
    found = []
    try:
        with folder.scandir() as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
    except OSError as error:
        raise os_failure(error) from None
    return found


class Visit:
    """A folder met by `descend`: open, `parts` below where the descent started, its entries."""

    __slots__ = ("dir", "parts", "entries", "_below", "_identity")

    def __init__(self, folder: Dir, parts: Tuple[str, ...], entries: List[Tuple[str, os.stat_result]]) -> None:
        self.dir = folder
        self.parts = parts
        self.entries = entries
        self._below = [name for name, info in reversed(entries) if stat.S_ISDIR(info.st_mode)]
        self._identity: Identity = (0, 0)


def descend(start: Dir, enter: Callable[[Tuple[str, ...], str], bool]) -> Generator[Visit, None, None]:
    """Every folder below `start`, then `start`, each after the folders inside it, each open.

    Iterative and at any depth: one descriptor is held at a time (plus `start`), and the way up is
    through `..`, which must be the very folder (device, inode) entered on the way down and still
    inside the root; if not (the tree was moved meanwhile), the descent stops (OsFailure or Escaped). Folders that
    `enter(parts, name)` declines, links, and folders that cannot be opened are not entered. The
    consumer may remove names in the folder it is given; it must not close it.
    """
    top = Visit(start, (), scan(start))
    stack = [top]
    try:
        while stack:
            here = stack[-1]
            if here._below:
                name = here._below.pop()
                if not enter(here.parts, name):
                    continue
                try:
                    child_dir = here.dir.open_dir(name)
                except FsProblem:
                    continue
                try:
                    child = Visit(child_dir, here.parts + (name,), scan(child_dir))
                    child._identity = here.dir.identity()
                except (FsProblem, OSError):
                    child_dir.close()
                    continue
                if here is not top:
                    here.dir.close()
                stack.append(child)
                continue
            yield here
            stack.pop()
            if stack and stack[-1] is not top:
                try:
                    stack[-1].dir = here.dir.open_parent(here._identity)
                except OSError as error:
                    raise os_failure(error) from None
                stack[-1].dir.confirm()  # the same folder, and still inside the root
            if here is not top:
                here.dir.close()
    finally:
        for visit in stack:
            if visit is not top:
                visit.dir.close()


def remove(
    folder: Dir, name: str, info: os.stat_result, keep: Optional[Callable[[os.stat_result], bool]] = None
) -> None:
    """Remove `name` (lstat'ed as `info`): a folder with all it holds, at any depth; a link itself.

    `keep(info)` marks files that must not be removed (D-MODE): meeting one stops the removal with
    OsFailure("protected"); what was removed before stays removed (folder deletes are not atomic).
    """
    try:
        if stat.S_ISDIR(info.st_mode):
            with folder.open_dir(name) as child:
                for visit in descend(child, lambda parts, name: True):
                    for entry, entry_info in visit.entries:
                        if stat.S_ISDIR(entry_info.st_mode):
                            visit.dir.rmdir(entry)
                        elif keep is not None and keep(entry_info):
                            raise OsFailure("protected")
                        else:
                            visit.dir.unlink(entry)
            folder.rmdir(name)
        else:
            folder.unlink(name)
    except OSError as error:
        raise _mapped(error) from None


def unlink_quietly(folder: Dir, name: str) -> None:
    with contextlib.suppress(OSError, FsProblem):
        folder.unlink(name)


def inside(where: str, jail: str) -> bool:
    """A resolved host path lies in the jail (the root's resolved path) or is it."""
    return where == jail or where.startswith(jail.rstrip(os.sep) + os.sep)
