"""The memory directory's operations: each a few lines over the kernel's walk (parent folder, last name).

`Root` is what the handler, the bookkeeping and the OpenClaw tools hold. It adds no confinement
of its own: every disk access below goes through `kernel.RootDir.walk` and the kernel's
primitives, so an audit of `kernel.py` covers it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from typing import Callable, Iterator, List, NamedTuple, Optional, Tuple, Union

from . import kernel, problems, tree
from .kernel import Dir
from .paths import RESERVED_PREFIX, VirtualPath
from .problems import DIR, FILE, FsProblem, Missing, OsFailure

BOOKKEEPING_DIR = RESERVED_PREFIX  # `.refmem`: the handler's own folder, unreachable through commands
LOCK_NAME = "lock"
READ_CHUNK = 1 << 20  # a large file is read (and viewed) this much at a time
_SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX


class Entry(NamedTuple):
    kind: str
    size: int
    nlink: int
    mode: int


class Listed(NamedTuple):
    parts: Tuple[str, ...]  # relative to the listed folder
    kind: str  # DIR or FILE: links and special files are never listed
    size: int


def protected(info: os.stat_result) -> bool:
    """D-MODE: a regular file its owner may not write is not edited or deleted."""
    return stat.S_ISREG(info.st_mode) and not info.st_mode & stat.S_IWUSR


class OpenFile:
    """A regular file open for reading; `info` is its fstat after opening."""

    __slots__ = ("fd", "info")

    def __init__(self, fd: int, info: os.stat_result) -> None:
        self.fd = fd
        self.info = info

    def read_all(self) -> bytes:
        """Read to the end: usually one call, since the size comes from fstat."""
        size = self.info.st_size
        try:
            first = os.read(self.fd, size + 1)
            return first if len(first) <= size else first + b"".join(self.chunks())
        except OSError as error:
            raise problems.os_failure(error) from None

    def chunks(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = os.read(self.fd, READ_CHUNK)
            except OSError as error:
                raise problems.os_failure(error) from None
            if not chunk:
                return
            yield chunk

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> OpenFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Edit:
    """A file read for a read-modify-write: `data` as read; `replace(new)` puts new content in its
    place atomically, in the very folder it was read from (one walk, so the two cannot differ)."""

    __slots__ = ("data", "_folder", "_name", "_mode", "_read")

    def __init__(self, folder: Dir, name: str, data: bytes, info: os.stat_result) -> None:
        self.data = data
        self._folder = folder
        self._name = name
        self._mode = stat.S_IMODE(info.st_mode) & ~_SPECIAL_BITS
        self._read = kernel.identity(info)

    def replace(self, new_data: bytes) -> None:
        """Put `new_data` in place of the file read, only if the name still holds that very file
        (replaced by something outside the lock since the read, it is not clobbered)."""
        temp = kernel.write_temp(self._folder, new_data, self._mode)
        kernel.replace(self._folder, temp, self._name, expected=self._read)
        self._folder.fsync()


class TooBig(FsProblem):
    """The file is larger than an edit may read."""

    code = "too_big"

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class Root:
    """A memory directory on disk: every method is a walk to a parent folder, then one primitive."""

    def __init__(self, path: Union[str, os.PathLike[str]], portable: bool = False, create: bool = True) -> None:
        """Open the memory directory at `path`, made if missing; with `create=False` a missing one
        raises Missing (prune must not conjure up a root from a typo)."""
        self.dir = kernel.RootDir(path, portable, create)
        self.real = self.dir.real
        self.portable = self.dir.portable
        self._thread_lock = threading.Lock()
        self._lock_fd: Optional[int] = None
        self._lock_pid = 0
        self._close = os.close

    def close(self) -> None:
        """Release the root's descriptors (the handler keeps them for its lifetime)."""
        lock_fd, self._lock_fd = self._lock_fd, None
        if lock_fd is not None and self._lock_pid == os.getpid():
            self._close(lock_fd)
        self.dir.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def walk(self, parts: Tuple[str, ...], create: bool = False, made: Optional[List[int]] = None) -> Dir:
        return self.dir.walk(parts, create, made)

    def _parent(self, path: VirtualPath, check: bool = True) -> Dir:
        return self.dir.walk(path.parts[:-1], check=check)

    @contextlib.contextmanager
    def _made_parent(self, path: VirtualPath) -> Iterator[Dir]:
        """The folder holding `path`, made if missing; folders made are removed if the command fails."""
        made: List[int] = []
        try:
            with self.dir.walk(path.parent.parts, True, made) as folder:
                yield folder
        except BaseException:
            if made:
                self._unmake(path.parent.parts, made[0])
            raise

    def _unmake(self, parts: Tuple[str, ...], first_made: int) -> None:
        """Remove the folders parts[first_made:] a failed command made, deepest first, if still empty."""
        for depth in range(len(parts), first_made, -1):
            try:
                with self.dir.walk(parts[: depth - 1]) as folder:
                    folder.rmdir(parts[depth - 1])
            except (OSError, FsProblem):
                return  # not empty any more, or gone: leave the rest alone

    # -- queries --

    def entry(self, path: VirtualPath) -> Optional[Entry]:
        """What is at `path`, without following a link; None when nothing is."""
        if path.is_root:
            return Entry(DIR, 0, 1, stat.S_IFDIR | kernel.DIR_MODE)
        try:
            with self._parent(path) as folder:
                info = folder.lstat(path.name)
        except Missing:
            return None
        if info is None or (path.trailing_slash and not stat.S_ISDIR(info.st_mode)):
            return None  # a trailing "/" names a folder: anything else is not there (ENOTDIR)
        return Entry(problems.kind_of(info.st_mode), info.st_size, info.st_nlink, info.st_mode)

    def open_regular(self, path: VirtualPath, refuse_hard_links: bool = True) -> OpenFile:
        """The regular file at `path`, open for reading (the caller closes it).

        Raises NotRegular with the kind found (a folder included), IsLink, HardLinked or Missing.
        The root-removed check is made only when nothing is found: a removed folder has no entries.
        """
        try:
            folder = self._parent(path, check=False)
            try:  # try/finally, not `with`: views are the commonest command, and this is their path
                return _open_file(folder, path, refuse_hard_links)
            finally:
                folder.close()
        except Missing:
            self.dir.check_removed()
            raise

    def list_tree(
        self, path: VirtualPath, depth: int, cap: int, addressable: Callable[[str], bool]
    ) -> Tuple[List[Listed], bool]:
        """Folders and regular files below `path`, depth first, sorted, at most `cap` of them.

        Hidden names, node_modules, links, special files and names that are not `addressable` are
        left out and never entered. Each folder is read only until the cap could be met.
        """
        found: List[Listed] = []
        truncated = False

        def visit(folder: Dir, prefix: Tuple[str, ...], level: int) -> None:
            nonlocal truncated
            room = cap - len(found)
            batch: List[Tuple[str, str, int]] = []
            try:
                with folder.scandir() as entries:
                    for item in entries:
                        if item.name.startswith(".") or item.name == "node_modules" or not addressable(item.name):
                            continue
                        try:  # the type comes with the directory read; only files are stat'ed
                            if item.is_dir(follow_symlinks=False):
                                kind, size = DIR, 0
                            elif item.is_file(follow_symlinks=False):
                                info = item.stat(follow_symlinks=False)
                                if not stat.S_ISREG(info.st_mode):
                                    continue
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
                raise problems.os_failure(error) from None
            batch.sort(key=lambda item: item[0])
            for name, kind, size in batch:
                if len(found) >= cap:
                    truncated = True
                    return
                found.append(Listed(prefix + (name,), kind, size))
                if kind == DIR and level < depth:
                    try:
                        child = folder.open_dir(name)
                    except (Missing, OsFailure):
                        continue
                    with child:
                        visit(child, prefix + (name,), level + 1)

        with self.dir.walk(path.parts) as top:
            visit(top, (), 1)
        return found, truncated

    def extent(self, path: VirtualPath, max_depth: int) -> Tuple[int, int]:
        """(levels, longest relative path in bytes) of the tree at `path`, counting at most
        `max_depth + 1` levels: enough to tell whether moving it would exceed the limits."""
        deepest, longest = 0, 0
        with self._parent(path) as parent, parent.open_dir(path.name) as top:

            def enter(parts: Tuple[str, ...], name: str) -> bool:
                return len(parts) < max_depth

            for visit in tree.descend(top, enter):
                for name, _info in visit.entries:
                    size = sum(len(part.encode("utf-8", "surrogateescape")) + 1 for part in visit.parts + (name,))
                    deepest = max(deepest, len(visit.parts) + 1)
                    longest = max(longest, size)
        return deepest, longest

    # -- changes --

    def write_new(self, path: VirtualPath, data: bytes) -> None:
        """Create a file that must not exist yet; parents are made. All or nothing."""
        with self._made_parent(path) as folder:
            temp = kernel.write_temp(folder, data, kernel.FILE_MODE)
            try:
                kernel.rename_noreplace(folder, temp, folder, path.name, is_dir=False)
            except BaseException:
                kernel.unlink_quietly(folder, temp)
                raise
            folder.fsync()

    @contextlib.contextmanager
    def open_edit(self, path: VirtualPath, limit: int) -> Iterator[Edit]:
        """A regular file read whole for an edit (call under `locked()`: edits are read-modify-write).

        Files over `limit` bytes raise TooBig before they are read whole; a file its owner may not
        write raises OsFailure("protected") (D-MODE). The mode is kept, less setuid, setgid and
        sticky bits, which are never carried onto content the model wrote.
        """
        with self._parent(path) as folder:
            with _open_file(folder, path, True) as opened:
                if protected(opened.info):
                    raise OsFailure("protected")
                size = opened.info.st_size
                if size > limit:
                    raise TooBig(size)
                data = opened.read_all()
                if len(data) > limit:
                    raise TooBig(len(data))
            yield Edit(folder, path.name, data, opened.info)

    def delete(self, path: VirtualPath) -> None:
        """Remove a name; a folder goes with everything in it, at any depth. Links are removed, never
        followed; files their owner may not write are not removed (D-MODE)."""
        with self._parent(path) as folder:
            info = folder.lstat(path.name)
            if info is None:
                raise Missing()
            if protected(info):
                raise OsFailure("protected")
            try:
                tree.remove(folder, path.name, info, keep=protected)
            except OsFailure as problem:
                if problem.code == "protected":
                    raise OsFailure("protected_inside") from None
                raise
            folder.fsync()

    def rename(self, old: VirtualPath, new: VirtualPath) -> None:
        with self._parent(old) as source:
            info = source.lstat(old.name)
            if info is None:
                raise Missing()
            with self._made_parent(new) as destination:
                kernel.rename_noreplace(source, old.name, destination, new.name, stat.S_ISDIR(info.st_mode))
                destination.fsync()
            source.fsync()

    # -- the lock for read-modify-write --

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """An exclusive lock shared by every handler, thread and process on this root.

        Threads queue on a threading lock; processes on `flock` of `.refmem/lock`, kept open for
        the handler's life and reopened after a fork (a forked child shares the parent's open file).
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
        """The lock file: a single-link regular file, opened without following a link and without
        blocking (a FIFO planted there is refused, not waited on). Anything else squatting the
        bookkeeping folder or the lock's name is OsFailure("bookkeeping"), which names no path."""
        try:
            import fcntl  # noqa: F401 - only to learn whether flock exists here
        except ImportError:  # pragma: no cover
            return None
        if self._lock_fd is not None and self._lock_pid == os.getpid():
            return self._lock_fd
        flags = os.O_RDONLY | os.O_CREAT | kernel.O_NOFOLLOW | kernel.O_NONBLOCK | kernel.O_CLOEXEC
        try:
            with self.dir.walk((BOOKKEEPING_DIR,), create=True) as folder:
                fd = folder.open_file(LOCK_NAME, flags, kernel.FILE_MODE)
        except (problems.ParentNotDir, problems.IsLink, problems.Escaped, Missing):
            raise OsFailure("bookkeeping") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            raise OsFailure("bookkeeping")
        if self._lock_fd is not None and self._lock_pid == os.getpid():  # pragma: no cover
            self._close(self._lock_fd)
        self._lock_fd, self._lock_pid = fd, os.getpid()
        return fd


def _open_file(folder: Dir, path: VirtualPath, refuse_hard_links: bool) -> OpenFile:
    """The file `path` names in its open parent folder. A trailing "/" names a folder: anything
    else there is not found (POSIX ENOTDIR), a folder is NotRegular(DIR)."""
    if path.trailing_slash:
        info = folder.lstat(path.name)
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise Missing()
    return OpenFile(*kernel.open_regular(folder, path.name, refuse_hard_links))
