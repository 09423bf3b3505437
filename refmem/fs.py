"""The only module that touches the filesystem: one audited walk from the root, and what uses it.

Every command reaches the disk through `Root`, and every `Root` operation starts with `_walk`, which
opens one name at a time from a directory that is already open, refusing symbolic links and
anything that is not a directory on the way (Go's `os.Root` does the same). On POSIX a directory is
held as a file descriptor, so a folder swapped for a link after it was checked cannot redirect us;
where `dir_fd` and `O_NOFOLLOW` are missing (Windows) the same walk runs over checked host paths,
which is weaker (a time-of-check/time-of-use window remains; SECURITY.md says so).

Names given to this module have already passed `paths.parse_path`: no separators, no dots.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
import sys
import threading
from pathlib import Path
from typing import Callable, Dict, Generator, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union, cast

from .paths import RESERVED_PREFIX, VirtualPath

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
# Reading a regular file: never through a link, never blocking (a FIFO swapped in), no controlling tty.
READ_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_BINARY | getattr(os, "O_NOCTTY", 0)
FILE_MODE = 0o600
DIR_MODE = 0o700
READ_CHUNK = 1 << 20
CLOSED_FD = -1  # what a closed Dir holds: every call relative to it fails with EBADF
BOOKKEEPING_DIR = RESERVED_PREFIX
ROOT_REMOVED = "the memory directory itself was removed"
TEMP_PREFIX = RESERVED_PREFIX + "-tmp-"
ACCESS_DIR = "access"  # .refmem/access: last-access records (see expiry)
RECORD_LIMIT = 8192  # a record holds one virtual path: anything larger is not one
# Setting a record's time never follows a link where the OS allows it (not on Windows, whose
# records are checked to be regular files just before).
_UTIME_NOFOLLOW = os.utime in os.supports_follow_symlinks


# --- what can go wrong, as values the handler maps to messages ---------------------------------


class FsProblem(Exception):
    """Base for outcomes the handler turns into a result; never shown as is."""


class Missing(FsProblem):
    """Nothing at the path, or a path through something that is not a folder."""


class IsLink(FsProblem):
    """The last name is a symbolic link."""


class NotRegular(FsProblem):
    """The last name is a FIFO, socket, device, or a folder where a file is needed."""

    def __init__(self, kind: str = "special") -> None:
        super().__init__(kind)
        self.kind = kind


class HardLinked(FsProblem):
    """A regular file with other names: its content may live outside the root."""


class Exists(FsProblem):
    """The destination is taken."""


class ParentNotDir(FsProblem):
    def __init__(self, parent: VirtualPath) -> None:
        super().__init__(parent.canonical)
        self.parent = parent


class TooBig(FsProblem):
    """The file is larger than an edit may read."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class Escaped(FsProblem):
    """The belt-and-braces check found a location outside the root."""


class OsFailure(FsProblem):
    """The operating system refused; `reason` is one of the D-IO phrases."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_REASONS: Dict[int, str] = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "no space left on device",
    errno.EIO: "input/output error",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "read-only file system",
}


def os_failure(error: OSError) -> OsFailure:
    return OsFailure(_REASONS.get(error.errno or 0, "operating system error"))


# --- kinds and entries -------------------------------------------------------------------------

DIR, FILE, LINK, SPECIAL = "dir", "file", "link", "special"


_KIND_BY_FORMAT = {stat.S_IFDIR: DIR, stat.S_IFREG: FILE, stat.S_IFLNK: LINK}


def kind_of(mode: int) -> str:
    return _KIND_BY_FORMAT.get(stat.S_IFMT(mode), SPECIAL)


class Entry(NamedTuple):
    kind: str
    size: int
    nlink: int
    mode: int


class Listed(NamedTuple):
    parts: Tuple[str, ...]  # relative to the listed folder
    kind: str  # DIR or FILE: links and special files are never listed
    size: int


# --- directory handles: the one place the two walk strategies differ ---------------------------


class Dir:
    """An open folder. With fds: `fd` is open and names resolve against it. Portable: a checked path."""

    __slots__ = ("fd", "path", "owned")

    def __init__(self, fd: Optional[int], path: str, owned: bool = True) -> None:
        self.fd = fd
        self.path = path
        self.owned = owned  # the root's descriptor is borrowed for a walk, never closed by it

    def ref(self, name: str) -> Tuple[str, Optional[int]]:
        """(path argument, dir_fd) for an `os` call on `name` inside this folder."""
        if self.fd is not None:
            return name, self.fd
        return os.path.join(self.path, name), None

    def close(self) -> None:
        """Close an owned descriptor. A closed handle keeps CLOSED_FD, never None: None would make
        `ref` resolve names against the working directory, where a late use must fail (EBADF) instead."""
        if self.fd is not None and self.fd != CLOSED_FD and self.owned:
            fd, self.fd = self.fd, CLOSED_FD
            os.close(fd)

    # A class, not a generator, is the context manager: every command enters one, and a
    # generator-based one costs several times more than the system calls it wraps.
    def __enter__(self) -> Dir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OpenFile:
    """A regular file opened for reading by `Root.open_regular`; `info` is its fstat after opening."""

    __slots__ = ("fd", "info")

    def __init__(self, fd: int, info: os.stat_result) -> None:
        self.fd = fd
        self.info = info

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> OpenFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Folder(NamedTuple):
    """A folder met by `Root.walk_tree`: open, at `parts` below the root, its entries lstat'ed."""

    dir: Dir
    parts: Tuple[str, ...]
    entries: List[Tuple[str, os.stat_result]]


def _lstat(folder: Dir, name: str) -> Optional[os.stat_result]:
    path, dir_fd = folder.ref(name)
    try:
        return os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError as error:
        raise os_failure(error) from None


# --- renames that never overwrite --------------------------------------------------------------

_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def _load_renameat2() -> Optional[Callable[..., int]]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return cast(Callable[..., int], function)


_renameat2 = _load_renameat2()


def _rename_noreplace(src: Dir, src_name: str, dst: Dir, dst_name: str, is_dir: bool) -> None:
    """Move without ever replacing: the check and the move are one step where the OS allows it."""
    src_path, src_fd = src.ref(src_name)
    dst_path, dst_fd = dst.ref(dst_name)
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
        if code == errno.EEXIST:
            raise Exists()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise os_failure(OSError(code, os.strerror(code)))
    if not is_dir:
        # A hard link fails on an existing name: the same never-replace guarantee, in two steps.
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
    # Folders (and filesystems without links): checked under the handler's lock.
    if _lstat(dst, dst_name) is not None:
        raise Exists()
    try:
        os.rename(src_path, dst_path, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except OSError as error:
        raise os_failure(error) from None


# --- the root ----------------------------------------------------------------------------------


class Root:
    """A memory directory on disk. All access below it goes through `_walk`."""

    def __init__(self, path: str | os.PathLike[str], portable: bool = False, create: bool = True) -> None:
        """Open the memory directory at `path`, made if missing; with `create=False` a missing one
        raises Missing (prune and one-shot record calls must not conjure up a root from a typo)."""
        if create:
            os.makedirs(path, mode=DIR_MODE, exist_ok=True)
        elif not os.path.isdir(path):
            raise Missing()
        self.real = os.path.realpath(path)
        self.portable = portable or not FD_WALK_AVAILABLE
        self._root_fd: Optional[int] = None
        self._root_dir = Dir(None, self.real, owned=False)
        self._close = os.close  # the close of the `os` that opened it (see close())
        self._thread_lock = threading.Lock()
        self._lock_fd: Optional[int] = None
        self._lock_pid = 0
        if not self.portable:
            try:
                self._root_fd = os.open(self.real, os.O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            except OSError as error:
                raise os_failure(error) from None
            self._root_dir = Dir(self._root_fd, self.real, owned=False)  # lent to every walk, never closed by one

    def close(self) -> None:
        """Release the root's descriptor. The handler opens it once and keeps it for its lifetime."""
        lock_fd, self._lock_fd = self._lock_fd, None
        if lock_fd is not None and self._lock_pid == os.getpid():
            self._close(lock_fd)
        fd, self._root_fd = self._root_fd, None
        if self._root_dir.fd is not None:
            self._root_dir.fd = CLOSED_FD  # a walk lent the root after close() fails, never wanders
        if fd is not None:
            # Called from __del__ too, possibly after a test's patched `os` is gone: closing with
            # the function that matched the open never hits an unrelated descriptor.
            self._close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- the walk --

    def _open_root(self, check_removed: bool = True) -> Dir:
        if self.portable:
            return self._root_dir
        if self._root_fd is None:
            raise OsFailure("operating system error")  # used after close()
        if check_removed:
            self._check_root()
        return self._root_dir

    def _check_root(self) -> None:
        """Raise OsFailure(ROOT_REMOVED) when the root folder has been deleted since it was opened."""
        if self._root_fd is None:
            return
        try:
            removed = os.fstat(self._root_fd).st_nlink == 0
        except OSError as error:
            raise os_failure(error) from None
        if removed:
            raise OsFailure(ROOT_REMOVED)

    def _open_child(self, parent: Dir, name: str) -> Dir:
        """Enter one folder: never through a link, never into anything that is not a folder."""
        if parent.fd is not None:
            flags = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
            try:
                return Dir(os.open(name, flags, dir_fd=parent.fd), "")
            except (FileNotFoundError, NotADirectoryError):
                raise Missing() from None
            except OSError as error:
                if error.errno == errno.ELOOP:
                    raise Missing() from None  # a link is not a folder we enter
                raise os_failure(error) from None
        info = _lstat(parent, name)
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise Missing()
        child = os.path.join(parent.path, name)
        self._confine(child)
        return Dir(None, child)

    def _confine(self, host_path: str) -> None:
        """Belt and braces: the resolved location must lie inside the resolved root."""
        try:
            Path(host_path).resolve().relative_to(self.real)
        except (ValueError, OSError, RuntimeError):
            raise Escaped() from None

    def _confine_dir(self, folder: Dir) -> None:
        if folder.fd is None:
            self._confine(folder.path)
            return
        if not folder.owned:
            return  # the root itself, opened from its resolved path
        where = _fd_path(folder.fd)
        if where is None:
            return
        # The kernel's answer is already resolved: compare without touching the disk again.
        if where != self.real and not where.startswith(self.real.rstrip(os.sep) + os.sep):
            raise Escaped()

    def _walk(
        self, parts: Tuple[str, ...], create: bool = False, made: Optional[List[int]] = None, check_removed: bool = True
    ) -> Dir:
        """Open the folder `parts` names, one name at a time; with `create`, make missing folders.

        The caller owns the returned folder (`with self._walk(...) as folder:`); for the root it is
        the handler's own descriptor, which closing leaves open. Raises Missing for a path through
        a non-folder or a link (or ParentNotDir when creating). The index of every folder it makes
        is appended to `made`, so a failed command can undo them. `check_removed=False` leaves the
        root-removed check to the caller (see open_regular).
        """
        current = self._open_root(check_removed)
        try:
            for index, name in enumerate(parts):
                try:
                    child = self._open_child(current, name)
                except Missing:
                    if not create:
                        raise
                    if _lstat(current, name) is not None:
                        raise ParentNotDir(VirtualPath(parts[: index + 1])) from None
                    path, dir_fd = current.ref(name)
                    try:
                        os.mkdir(path, DIR_MODE, dir_fd=dir_fd)
                        if made is not None:
                            made.append(index)
                    except FileExistsError:
                        pass  # made by someone else meanwhile: enter it like any other
                    except OSError as error:
                        raise os_failure(error) from None
                    child = self._open_child(current, name)
                current.close()  # only the folder being entered stays open (the root's fd is borrowed)
                current = child
            self._confine_dir(current)
        except BaseException:
            current.close()
            raise
        return current

    @contextlib.contextmanager
    def _made_parent(self, path: VirtualPath) -> Iterator[Dir]:
        """The folder holding `path`, made if missing; the folders made are removed if the command fails."""
        made: List[int] = []
        try:
            with self._walk(path.parent.parts, True, made) as folder:
                yield folder
        except BaseException:
            if made:
                self._unmake(path.parent.parts, made[0])
            raise

    def _parent(self, path: VirtualPath, check_removed: bool = True) -> Dir:
        """The folder holding `path` (the caller closes it, usually with `with`)."""
        return self._walk(path.parts[:-1], check_removed=check_removed)

    def _unmake(self, parts: Tuple[str, ...], first_made: int) -> None:
        """Remove the folders parts[first_made:] made by a failed command, deepest first, if still empty."""
        for depth in range(len(parts), first_made, -1):
            try:
                with self._walk(parts[: depth - 1]) as folder:
                    name, dir_fd = folder.ref(parts[depth - 1])
                    os.rmdir(name, dir_fd=dir_fd)
            except (OSError, FsProblem):
                return  # not empty any more, or gone: leave the rest alone

    # -- queries --

    def entry(self, path: VirtualPath) -> Optional[Entry]:
        """What is at `path`, without following a link; None when nothing is (D-PATH-CANON)."""
        if path.is_root:
            return Entry(DIR, 0, 1, stat.S_IFDIR | DIR_MODE)
        try:
            with self._parent(path) as folder:
                info = _lstat(folder, path.name)
        except Missing:
            return None
        if info is None or (path.trailing_slash and not stat.S_ISDIR(info.st_mode)):
            return None  # a trailing "/" names a folder: anything else is not there (ENOTDIR)
        return Entry(kind_of(info.st_mode), info.st_size, info.st_nlink, info.st_mode)

    def open_regular(self, path: VirtualPath, refuse_hard_links: bool = True) -> OpenFile:
        """The regular file at `path`, open for reading and checked after opening (the caller closes it).

        Raises NotRegular with the kind found (a folder included), IsLink, HardLinked or Missing.
        The root-removed check costs a stat, and views are the commonest command: it is made only
        when nothing is found, since a removed folder has no entries and finding a file proves the
        root is still there.
        """
        try:
            folder = self._parent(path, check_removed=False)
            try:
                return self._open_in(folder, path, refuse_hard_links)
            finally:
                folder.close()
        except Missing:
            self._check_root()
            raise

    def _open_in(self, folder: Dir, path: VirtualPath, refuse_hard_links: bool) -> OpenFile:
        """Open the file named `path.name` inside `folder`, which the walk opened: see open_regular."""
        leaf = path.parts[-1]
        before = _lstat(folder, leaf)
        if before is None:
            raise Missing()
        kind = kind_of(before.st_mode)
        if path.trailing_slash and kind != DIR:
            raise Missing()  # a trailing "/" names a folder: anything else is not there (ENOTDIR)
        if kind == LINK:
            raise IsLink()
        if kind != FILE:
            raise NotRegular(kind)
        if refuse_hard_links and before.st_nlink > 1:
            raise HardLinked()
        name, dir_fd = folder.ref(leaf)
        try:
            fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            raise Missing() from None
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise IsLink() from None
            raise os_failure(error) from None
        try:
            # What counts is what was opened: a file atomically replaced since the lstat is fine
            # (its new content is a valid answer); anything but a single-link regular file is not.
            after = os.fstat(fd)
            if not stat.S_ISREG(after.st_mode):
                raise OsFailure("the file changed while it was being read")
            if refuse_hard_links and after.st_nlink > 1:
                raise HardLinked()
        except BaseException:
            os.close(fd)
            raise
        return OpenFile(fd, after)

    def read_chunks(self, fd: int) -> Iterator[bytes]:
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError as error:
                raise os_failure(error) from None
            if not chunk:
                return
            yield chunk

    def read_all(self, fd: int, size_hint: int) -> bytes:
        """Read to the end: usually one call, since `size_hint` comes from fstat."""
        try:
            first = os.read(fd, size_hint + 1)
        except OSError as error:
            raise os_failure(error) from None
        if len(first) <= size_hint:
            return first
        return first + b"".join(self.read_chunks(fd))

    def list_tree(
        self, path: VirtualPath, depth: int, cap: int, addressable: Callable[[str], bool]
    ) -> Tuple[List[Listed], bool]:
        """Folders and regular files below `path`, depth first, sorted, at most `cap` of them.

        Hidden names, node_modules, links, special files and names that are not `addressable` (the
        path rules would refuse them, so they could only confuse or forge lines) are left out and
        never entered. Each folder is read only until the cap could be met, so a huge folder is not
        read whole.
        """
        found: List[Listed] = []
        truncated = False

        def visit(folder: Dir, prefix: Tuple[str, ...], level: int) -> None:
            nonlocal truncated
            room = cap - len(found)
            batch: List[Tuple[str, str, int]] = []
            try:
                with os.scandir(_scan_target(folder)) as entries:
                    for item in entries:
                        if item.name.startswith(".") or item.name == "node_modules" or not addressable(item.name):
                            continue
                        # The entry's type comes with the directory read (no stat for folders,
                        # whose size is not shown); only files are stat'ed, for their size.
                        try:
                            if item.is_dir(follow_symlinks=False):
                                kind, size = DIR, 0
                            elif item.is_file(follow_symlinks=False):
                                info = item.stat(follow_symlinks=False)
                                if not stat.S_ISREG(info.st_mode):
                                    continue  # swapped for something else since the read
                                kind, size = FILE, info.st_size
                            else:
                                continue  # links and special files are never listed
                        except OSError:
                            continue  # vanished meanwhile
                        if len(batch) == room:
                            truncated = True
                            break
                        batch.append((item.name, kind, size))
            except OSError as error:
                raise os_failure(error) from None
            batch.sort(key=lambda item: item[0])
            for name, kind, size in batch:
                if len(found) >= cap:  # a subfolder visited earlier used up the room
                    truncated = True
                    return
                found.append(Listed(prefix + (name,), kind, size))
                if kind == DIR and level < depth:
                    # Entered even when the cap is met: with no room left, the visit only looks for
                    # one listable entry, so "truncated" is said only when something was left out.
                    try:
                        child = self._open_child(folder, name)
                    except (Missing, OsFailure):
                        continue
                    try:
                        visit(child, prefix + (name,), level + 1)
                    finally:
                        child.close()

        with self._walk(path.parts) as top:
            visit(top, (), 1)
        return found, truncated

    # -- changes --

    def write_new(self, path: VirtualPath, data: bytes) -> None:
        """Create a file that must not exist yet; parents are made. All or nothing."""
        with self._made_parent(path) as folder:
            temp = self._write_temp(folder, data, FILE_MODE)
            try:
                _rename_noreplace(folder, temp, folder, path.name, is_dir=False)
            except BaseException:
                _unlink_quietly(folder, temp)
                raise
            _fsync_dir(folder)

    def rewrite(self, path: VirtualPath, limit: int, change: Callable[[bytes], bytes]) -> None:
        """Read a regular file, pass its bytes to `change`, and atomically replace it with the result.

        One walk: the folder opened to read the file is the one the new content is renamed into,
        so the read and the write cannot land in two different places. Files over `limit` bytes
        raise TooBig before they are read whole; `change` may raise to leave the file untouched.
        The mode is kept. Call it under `locked()`: edits are read-modify-write.
        """
        with self._parent(path) as folder:
            with self._open_in(folder, path, True) as opened:
                size = opened.info.st_size
                if size > limit:
                    raise TooBig(size)
                data = self.read_all(opened.fd, size)
                if len(data) > limit:
                    raise TooBig(len(data))
                mode = stat.S_IMODE(opened.info.st_mode)
            new_data = change(data)
            current = _lstat(folder, path.name)
            if current is None:
                raise Missing()
            if not stat.S_ISREG(current.st_mode):
                raise NotRegular()  # swapped by something outside the lock since the read: not clobbered
            temp = self._write_temp(folder, new_data, mode)
            _replace_with(folder, temp, path.name)
            _fsync_dir(folder)

    def _write_temp(self, folder: Dir, data: bytes, mode: int, sync: bool = True) -> str:
        """Write `data` to a fresh hidden temp file in `folder`, fsync it (with `sync`), return its name."""
        for _ in range(8):
            name = TEMP_PREFIX + secrets.token_hex(8)
            path, dir_fd = folder.ref(name)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
            try:
                fd = os.open(path, flags, FILE_MODE, dir_fd=dir_fd)
            except FileExistsError:
                continue
            except OSError as error:
                raise os_failure(error) from None
            break
        else:  # pragma: no cover - 8 collisions of 64 random bits
            raise OsFailure("operating system error")
        try:
            try:
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
            finally:
                os.close(fd)
        except OSError as error:
            _unlink_quietly(folder, name)
            raise os_failure(error) from None
        except BaseException:
            _unlink_quietly(folder, name)
            raise
        return name

    def delete(self, path: VirtualPath) -> None:
        """Remove a name; a folder goes with everything in it. Links are removed, never followed."""
        with self._parent(path) as folder:
            info = _lstat(folder, path.name)
            if info is None:
                raise Missing()
            self._remove(folder, path.name, info)
            _fsync_dir(folder)

    def _remove(self, folder: Dir, name: str, info: os.stat_result) -> None:
        """Remove `name` (lstat'ed as `info`) from `folder`: a folder with all it holds, a link itself."""
        path, dir_fd = folder.ref(name)
        try:
            if stat.S_ISDIR(info.st_mode):
                with self._open_child(folder, name) as child:
                    _empty_folder(self, child)
                os.rmdir(path, dir_fd=dir_fd)
            else:
                os.unlink(path, dir_fd=dir_fd)
        except FileNotFoundError:
            raise Missing() from None
        except OSError as error:
            raise os_failure(error) from None

    def rename(self, old: VirtualPath, new: VirtualPath) -> None:
        with self._parent(old) as source:
            info = _lstat(source, old.name)
            if info is None:
                raise Missing()
            with self._made_parent(new) as destination:
                _rename_noreplace(source, old.name, destination, new.name, stat.S_ISDIR(info.st_mode))
                _fsync_dir(destination)
            _fsync_dir(source)

    # -- last-access records (expiry.AccessTracker): small files in .refmem/access --

    def open_access(self, create: bool) -> Dir:
        """The record folder `.refmem/access`, opened by the one walk (made with `create`, else
        Missing when absent). The tracker keeps it open: a view records in one call, not three."""
        return self._walk((BOOKKEEPING_DIR, ACCESS_DIR), create=create)

    def record_info(self, folder: Dir, name: str) -> Optional[os.stat_result]:
        """lstat of the record `name`, None when there is none: its mtime is the recorded time."""
        return _lstat(folder, name)

    def set_record_time(self, folder: Dir, name: str, stamp_ns: int) -> None:
        """Set a record's times to `stamp_ns`: recording an access is this one call, no data written."""
        path, dir_fd = folder.ref(name)
        try:
            os.utime(path, ns=(stamp_ns, stamp_ns), dir_fd=dir_fd, follow_symlinks=not _UTIME_NOFOLLOW)
        except OSError as error:
            raise os_failure(error) from None

    def put_record(self, folder: Dir, name: str, data: bytes, stamp_ns: int) -> None:
        """Create (or replace) the record `name` holding `data`, dated `stamp_ns`, all or nothing.

        A temp file is written, dated and renamed into place, so a crash leaves no record or a whole
        one (at worst a temp file, which prune clears). Not fsynced: see expiry's docstring.
        """
        temp = self._write_temp(folder, data, FILE_MODE, sync=False)
        try:
            self.set_record_time(folder, temp, stamp_ns)
        except BaseException:
            _unlink_quietly(folder, temp)
            raise
        _replace_with(folder, temp, name)

    def read_record(self, folder: Dir, name: str) -> Optional[Tuple[bytes, float]]:
        """(bytes, mtime) of the record `name`; None unless it is a regular file of at most
        RECORD_LIMIT bytes that could be opened. Bounded: a forged huge file is never read whole."""
        try:
            opened = self._open_in(folder, VirtualPath((name,)), refuse_hard_links=False)
        except FsProblem:
            return None
        with opened:
            if opened.info.st_size > RECORD_LIMIT:
                return None
            try:
                data = os.read(opened.fd, RECORD_LIMIT)
            except OSError as error:
                raise os_failure(error) from None
        return data, opened.info.st_mtime

    def remove_record(self, folder: Dir, name: str) -> None:
        """Remove the record `name`, or whatever squats its name (a folder goes whole, a link is not
        followed); already gone is fine."""
        info = _lstat(folder, name)
        if info is not None:
            with contextlib.suppress(Missing):
                self._remove(folder, name, info)

    def names(self, folder: Dir) -> List[str]:
        """The names in an open folder, unsorted (the record folder: its names are the records)."""
        try:
            with os.scandir(_scan_target(folder)) as entries:
                return [entry.name for entry in entries]
        except OSError as error:
            raise os_failure(error) from None

    # -- prune (expiry.prune): call under locked() unless nothing is removed --

    def walk_tree(self, max_depth: int) -> Generator[Folder, None, None]:
        """The root and every folder below it, each one after the folders inside it, each open.

        Open, so that the walker can remove names in it (unlink_if_unchanged, remove_empty_folder);
        after its subfolders, so that it knows which of them it emptied. Links are never followed;
        the handler's own `.refmem*` names, folders below `max_depth` and folders that cannot be
        opened or read are listed but not entered. An entry gone before its lstat is left out.
        """
        with self._walk(()) as top:
            yield from self._walk_below(Folder(top, (), _scan(top)), max_depth)

    def _walk_below(self, here: Folder, max_depth: int) -> Generator[Folder, None, None]:
        for name, info in here.entries if len(here.parts) < max_depth else []:
            if stat.S_ISDIR(info.st_mode) and not name.startswith(RESERVED_PREFIX):
                child = self._enter(here, name)
                if child is not None:
                    with child.dir:
                        yield from self._walk_below(child, max_depth)
        yield here

    def _enter(self, parent: Folder, name: str) -> Optional[Folder]:
        """Open and list a subfolder; None when it cannot be read (or is a link by now): not entered."""
        try:
            child = self._open_child(parent.dir, name)
        except FsProblem:
            return None
        try:
            return Folder(child, parent.parts + (name,), _scan(child))
        except FsProblem:
            child.close()
            return None

    def unlink_if_unchanged(self, folder: Dir, name: str, judged: os.stat_result) -> bool:
        """Unlink `name` only if it is still the regular file that was `judged` (same inode, device
        and mtime): a file replaced or rewritten since is kept. True when it was removed."""
        try:
            info = _lstat(folder, name)
        except OsFailure:
            return False
        if info is None or not stat.S_ISREG(info.st_mode) or _identity(info) != _identity(judged):
            return False
        return _removed(os.unlink, folder, name)

    def remove_empty_folder(self, folder: Dir, name: str) -> bool:
        """rmdir `name`: True when it went, False when it could not (something arrived meanwhile)."""
        return _removed(os.rmdir, folder, name)

    def sync(self, folder: Dir) -> None:
        """Make the removals in an open folder durable (best effort, as after every change)."""
        _fsync_dir(folder)

    def clear_stale_temps(self, folder: Dir, names: Iterable[str], now: float, age: float, dry_run: bool) -> int:
        """Remove (or, dry run, only count) the temp files among `names` unchanged for over `age`
        seconds: the debris of a crashed write, not a write in progress. Returns how many."""
        count = 0
        for name in names:
            if not name.startswith(TEMP_PREFIX):
                continue
            with contextlib.suppress(OsFailure):
                info = _lstat(folder, name)
                if info is not None and stat.S_ISREG(info.st_mode) and now - info.st_mtime > age:
                    count += 1
                    if not dry_run:
                        _unlink_quietly(folder, name)
        return count

    # -- the lock for read-modify-write --

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """An exclusive lock shared by every handler, thread and process on this root.

        Threads of this process queue on a threading lock; processes on `flock` of
        `.refmem/lock`. The lock file stays open for the handler's life (opening it costs more
        than the flock), and is reopened after a fork: a forked child shares the parent's open
        file, and flock would not keep the two apart. It is opened read-only (flock needs no more),
        so holding it never keeps the filesystem from being remounted read-only.
        """
        with self._thread_lock:
            fd = self._lock_file()
            if fd is None:  # pragma: no cover - Windows: one process per root is assumed
                yield
                return
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock_file(self) -> Optional[int]:
        try:
            import fcntl  # noqa: F401 - only to learn whether flock exists here
        except ImportError:  # pragma: no cover
            return None
        if self._lock_fd is not None and self._lock_pid == os.getpid():
            return self._lock_fd
        with self._walk((BOOKKEEPING_DIR,), create=True) as folder:
            path, dir_fd = folder.ref("lock")
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CREAT | O_NOFOLLOW | O_CLOEXEC, FILE_MODE, dir_fd=dir_fd)
            except OSError as error:
                raise os_failure(error) from None
        if self._lock_fd is not None and self._lock_pid == os.getpid():  # pragma: no cover
            self._close(self._lock_fd)
        self._lock_fd, self._lock_pid = fd, os.getpid()
        return fd


def _scan_target(folder: Dir) -> Union[int, str]:
    """What `os.scandir` takes for an open folder: its descriptor, or its checked path (portable)."""
    return folder.fd if folder.fd is not None else folder.path


def _scan(folder: Dir) -> List[Tuple[str, os.stat_result]]:
    """Every name in an open folder with its lstat; names gone before their lstat are left out."""
    found = []
    try:
        with os.scandir(_scan_target(folder)) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
    except OSError as error:
        raise os_failure(error) from None
    return found


def _identity(info: os.stat_result) -> Tuple[int, int, int]:
    """What tells one version of a file from another: inode, device, mtime in nanoseconds."""
    return info.st_ino, info.st_dev, info.st_mtime_ns


def _empty_folder(root: Root, folder: Dir) -> None:
    """Remove everything inside an open folder, depth first, by name, never following a link."""
    with os.scandir(_scan_target(folder)) as entries:
        names = [(item.name, item.is_dir(follow_symlinks=False)) for item in entries]
    for name, is_dir in names:
        path, dir_fd = folder.ref(name)
        if is_dir:
            child = root._open_child(folder, name)
            try:
                _empty_folder(root, child)
            finally:
                child.close()
            os.rmdir(path, dir_fd=dir_fd)
        else:
            os.unlink(path, dir_fd=dir_fd)


def _replace_with(folder: Dir, temp: str, name: str) -> None:
    """Rename the temp file `temp` over `name` in one step; if that fails, the temp file goes."""
    src, src_fd = folder.ref(temp)
    dst, dst_fd = folder.ref(name)
    try:
        os.replace(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except OSError as error:
        _unlink_quietly(folder, temp)
        raise os_failure(error) from None


def _removed(remove: Callable[..., None], folder: Dir, name: str) -> bool:
    """`remove` (os.unlink or os.rmdir) `name` in `folder`: True when it went, False when refused."""
    path, dir_fd = folder.ref(name)
    try:
        remove(path, dir_fd=dir_fd)
    except OSError:
        return False
    return True


def _unlink_quietly(folder: Dir, name: str) -> None:
    path, dir_fd = folder.ref(name)
    with contextlib.suppress(OSError):
        os.unlink(path, dir_fd=dir_fd)


def _fsync_dir(folder: Dir) -> None:
    """Make a rename or unlink durable. Best effort where folders cannot be opened (Windows)."""
    if folder.fd is not None:
        with contextlib.suppress(OSError):
            os.fsync(folder.fd)
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder.path, os.O_RDONLY | O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fd_path(fd: int) -> Optional[str]:
    """The host path an open folder has now (Linux /proc, macOS F_GETPATH); None if unknown."""
    if sys.platform.startswith("linux"):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
    try:
        import fcntl

        getpath = getattr(fcntl, "F_GETPATH", None)
        if getpath is None:
            return None
        raw = fcntl.fcntl(fd, getpath, b"\0" * 1024)
        return os.fsdecode(raw.split(b"\0", 1)[0])
    except (ImportError, OSError):
        return None
