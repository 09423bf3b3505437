"""The one place the OpenClaw tools touch the disk: a thin adapter over `refmem.tracked.TrackedDirectory`.

Every read, scan, write and the index file go through the store's walk (`TrackedDirectory.walk`,
`TrackedDirectory.open_regular`, `TrackedDirectory.open_edit`, `TrackedDirectory.write_new`,
`TrackedDirectory.delete`, `TrackedDirectory.locked`) and the
kernel's `descend`, so the confinement audit of `kernel.py` covers them and pointing the tools at
another store means changing this class alone. Nothing here follows a link, opens a FIFO or a
device, or reads a file with more than one name.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
from typing import Callable, ContextManager, Dict, List, NamedTuple, Optional, Protocol, Tuple

from .. import _kernel as kernel
from .. import _tree as tree
from .. import problems
from ..limits import DEFAULT_LIMITS, Limits
from ..paths import VirtualPath
from ..problems import FsProblem, Missing, OsFailure
from ..store_protocol import ReadFile
from ..tracked import BOOKKEEPING_DIR, OpenFile, TrackedDirectory
from . import paths

INDEX_NAME = "openclaw-index.sqlite"
"""The search index, in the handler's bookkeeping folder `.refmem/` (never reachable by a tool)."""
_INDEX_PATH = VirtualPath((BOOKKEEPING_DIR, INDEX_NAME))
_INDEX_OPEN = os.O_RDWR | os.O_CREAT | kernel.O_NOFOLLOW | kernel.O_NONBLOCK | kernel.O_CLOEXEC | kernel.O_BINARY


class FileState(NamedTuple):
    """What tells one version of a memory file from another without reading it."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> FileState:
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class FolderState(NamedTuple):
    """What tells one version of a folder's list of names from another: its inode and modification
    time (every name made, removed or renamed in it changes the time)."""

    ino: int
    mtime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> FolderState:
        return cls(info.st_ino, info.st_mtime_ns)


class _Held:
    """Every descriptor of one index file this process opened, and how many users it has."""

    def __init__(self) -> None:
        self.users = 0
        self.fds: List[int] = []


_HELD: Dict[Tuple[int, int], _Held] = {}
_HELD_LOCK = threading.Lock()


class IndexHandle:
    """The index file, open and checked: a single-link regular file in `.refmem/`.

    `location` is what SQLite is given: on Linux the descriptor's `/proc/self/fd` entry, so SQLite
    opens the very file that was checked (no path is resolved again); elsewhere the host path,
    which `confirm` checks again after SQLite has opened it (a narrow window remains, see
    docs/openclaw.md).

    The descriptor stays open until `release`, and even then it is closed only once no other
    handle of this process has the same file: SQLite's locks are POSIX record locks, which belong
    to the process and the file, and closing *any* descriptor of the file drops all of them. A
    descriptor closed while another connection of this process held a write lock let another
    process write at the same time (docs/openclaw.md, the index file).
    """

    def __init__(self, fd: int, host_path: str) -> None:
        self.fd = fd
        info = os.fstat(fd)
        self.identity = kernel.identity(info)
        self._key = (info.st_dev, info.st_ino)
        self._host_path = host_path
        self.by_descriptor = sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd")
        self._released = False
        with _HELD_LOCK:
            held = _HELD.setdefault(self._key, _Held())
            held.users += 1
            held.fds.append(fd)

    def release(self) -> None:
        """Give the descriptor back (after the SQLite connection is closed): closed with the file's
        other descriptors once no handle of this process uses the file."""
        with _HELD_LOCK:
            if self._released:
                return
            self._released = True
            held = _HELD[self._key]
            held.users -= 1
            if held.users:
                return
            del _HELD[self._key]
        for fd in held.fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def header(self, size: int) -> bytes:
        """The file's first `size` bytes, read through the checked descriptor."""
        return os.pread(self.fd, size, 0)

    @property
    def location(self) -> str:
        return f"/proc/self/fd/{self.fd}" if self.by_descriptor else self._host_path

    def confirm(self) -> bool:
        """Is the name still the file that was checked?"""
        if self.by_descriptor:
            return True
        try:
            info = os.stat(self._host_path, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and kernel.identity(info) == self.identity


class Files(Protocol):
    """What the tools, the index and its freshness ask of a workspace's files: `Disk` over a directory,
    `storedisk.StoreDisk` over any other store (D-OPENCLAW-STORES). Chosen once, when the workspace is
    opened; nothing else looks at which it is."""

    def open_file(self, path: VirtualPath) -> ContextManager[ReadFile]: ...

    def read_file(self, parts: Tuple[str, ...], limit: int) -> Optional[Tuple[bytes, FileState]]: ...

    def scan(
        self, cap: int, folders: Optional[Dict[Tuple[str, ...], FolderState]] = None, under: Tuple[str, ...] = ()
    ) -> Dict[Tuple[str, ...], FileState]: ...

    def list_folder(
        self, parts: Tuple[str, ...]
    ) -> Optional[Tuple[Dict[Tuple[str, ...], FileState], Dict[Tuple[str, ...], FolderState]]]: ...

    def folder_state(self, parts: Tuple[str, ...]) -> Optional[FolderState]: ...

    def state_of(self, parts: Tuple[str, ...]) -> Optional[FileState]: ...

    def append(self, path: VirtualPath, extend: Callable[[bytes], bytes], limit: int) -> None: ...

    def index_handle(self) -> IndexHandle: ...

    def drop_index(self) -> None: ...


class Disk:
    """The workspace on disk (the memory tool's `/memories`), as the OpenClaw tools use it."""

    def __init__(
        self, root: TrackedDirectory, limits: Limits = DEFAULT_LIMITS, allowed: Optional[Callable[[str], bool]] = None
    ) -> None:
        self.root = root
        self.limits = limits
        self.allowed = allowed  # the session's allow-list, on OpenClaw's spelling of a path; None: all

    # -- reading --

    def open_file(self, path: VirtualPath) -> OpenFile:
        """The regular, single-link file at `path`, open for reading (FsProblem otherwise)."""
        return self.root.open_regular(path)

    def read_file(self, parts: Tuple[str, ...], limit: int) -> Optional[Tuple[bytes, FileState]]:
        """The bytes and state of an indexable file; None when it is not one any more (gone, a
        link, special, hard-linked, over `limit` bytes, unreadable)."""
        try:
            with self.root.open_regular(VirtualPath(parts)) as opened:
                if opened.info.st_size > limit:
                    return None
                data = opened.read_all()
                state = FileState.of(opened.info)
        except FsProblem:
            return None
        return (data, state) if len(data) <= limit else None

    def scan(
        self, cap: int, folders: Optional[Dict[Tuple[str, ...], FolderState]] = None, under: Tuple[str, ...] = ()
    ) -> Dict[Tuple[str, ...], FileState]:
        """The indexable memory files (below `under`): regular, single-link, addressable by the path
        rules, in the folders the index enters; at most `cap`, the first in path order. Every folder
        entered is recorded in `folders` with its state (the cheap check of later searches)."""
        found: Dict[Tuple[str, ...], FileState] = {}
        if under:
            start = self.folder_state(under)
            if start is None:
                return found
            if folders is not None:
                folders[under] = start
        elif folders is not None:
            folders[()] = self.root_state()
        with self.root.walk(under) as top:
            for visit in tree.descend(top, lambda parts, name: self._enters(under + parts, name)):
                for name, info in visit.entries:
                    parts = under + visit.parts + (name,)
                    if self._indexable(parts, info):
                        found[parts] = FileState.of(info)
                    elif folders is not None and stat.S_ISDIR(info.st_mode) and self._enters(parts[:-1], name):
                        folders[parts] = FolderState.of(info)
        if len(found) > cap:
            found = {parts: found[parts] for parts in sorted(found)[:cap]}
        return found

    def list_folder(
        self, parts: Tuple[str, ...]
    ) -> Optional[Tuple[Dict[Tuple[str, ...], FileState], Dict[Tuple[str, ...], FolderState]]]:
        """The indexable files directly in the folder `parts` and the folders in it the index
        enters, with their states; None when it is gone (or no longer a folder)."""
        files: Dict[Tuple[str, ...], FileState] = {}
        folders: Dict[Tuple[str, ...], FolderState] = {}
        try:
            with self.root.walk(parts) as folder:
                for name, info in tree.scan(folder):
                    here = parts + (name,)
                    if self._indexable(here, info):
                        files[here] = FileState.of(info)
                    elif stat.S_ISDIR(info.st_mode) and self._enters(parts, name):
                        folders[here] = FolderState.of(info)
        except FsProblem:
            return None
        return files, folders

    def root_state(self) -> FolderState:
        return FolderState.of(os.stat(self.root.real))

    def folder_state(self, parts: Tuple[str, ...]) -> Optional[FolderState]:
        """The state of the folder `parts` (never through a link); None when it is not a folder."""
        if not parts:
            return self.root_state()
        try:
            with self.root.walk(parts[:-1]) as folder:
                info = folder.lstat(parts[-1])
        except FsProblem:
            return None
        return FolderState.of(info) if info is not None and stat.S_ISDIR(info.st_mode) else None

    def _enters(self, parts: Tuple[str, ...], name: str) -> bool:
        return (
            len(parts) + 2 <= paths.READ_MAX_DEPTH and paths.readable_name(name) and paths.enters(parts, name)
        )

    def _indexable(self, parts: Tuple[str, ...], info: os.stat_result) -> bool:
        return (
            stat.S_ISREG(info.st_mode)
            and info.st_nlink == 1
            and paths.is_indexed(parts)
            and paths.readable_name(parts[-1])
            and paths.within_bounds(parts)
            and (self.allowed is None or self.allowed(paths.relative(parts)))
        )

    def state_of(self, parts: Tuple[str, ...]) -> Optional[FileState]:
        """The state of the file at `parts` when the scan would index it; None otherwise (gone, a
        link, special, hard-linked, in a folder the scan does not enter, not allowed)."""
        if not paths.is_indexed(parts) or not paths.within_bounds(parts):
            return None
        for depth, name in enumerate(parts):
            if not paths.readable_name(name) or (
                depth < len(parts) - 1 and not paths.enters(parts[:depth], name)
            ):
                return None
        if self.allowed is not None and not self.allowed(paths.relative(parts)):
            return None
        try:
            with self.root.walk(parts[:-1]) as folder:
                info = folder.lstat(parts[-1])
        except FsProblem:
            return None
        if info is None or not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return None
        return FileState.of(info)

    # -- writing --

    def make_folder(self, parts: Tuple[str, ...]) -> None:
        """Make the folder `parts` if missing, where another thread or process may be making it too
        (the store's walk takes a folder made meanwhile for what it is: kernel.RootDir.walk)."""
        with self.root.walk(parts, create=True):
            return

    def append(self, path: VirtualPath, extend: Callable[[bytes], bytes], limit: int) -> None:
        """Replace the file at `path` by `extend(old bytes)` (b"" when it does not exist), atomically
        (temp file and rename), under the root's lock. FsProblem when it cannot."""
        with contextlib.suppress(FsProblem):  # the lock reports a bookkeeping folder it cannot use
            self.make_folder((BOOKKEEPING_DIR,))
        with self.root.locked():
            for _ in range(3):
                try:
                    with self.root.open_edit(path, limit) as edit:
                        edit.replace(extend(edit.data))
                    return
                except Missing:
                    pass
                new = extend(b"")
                self.make_folder(path.parent.parts)  # ParentNotDir: a file is in the way
                try:
                    self.root.write_new(path, new)
                    return
                except problems.Exists:
                    continue  # made by a writer that does not take the lock: edit it instead
            raise OsFailure("changed")

    # -- the search index --

    def index_handle(self) -> IndexHandle:
        """The index file, made if missing, open until the handle is released. FsProblem when it is
        not a single-link regular file or cannot be opened (a link, FIFO, folder or hard link
        squatting the name: never followed, never waited on)."""
        self.make_folder((BOOKKEEPING_DIR,))
        with self.root.walk((BOOKKEEPING_DIR,), create=True) as folder:
            before = folder.lstat(INDEX_NAME)
            if before is not None and (not stat.S_ISREG(before.st_mode) or before.st_nlink != 1):
                raise problems.NotRegular(problems.kind_of(before.st_mode))
            fd = folder.open_file(INDEX_NAME, _INDEX_OPEN, kernel.FILE_MODE)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise problems.NotRegular(problems.kind_of(info.st_mode))
        except BaseException:
            os.close(fd)  # never a file SQLite opened: nothing of ours holds a lock on it
            raise
        return IndexHandle(fd, os.path.join(self.root.real, BOOKKEEPING_DIR, INDEX_NAME))

    def drop_index(self) -> None:
        """Remove whatever holds the index's name (a link itself, never its target)."""
        with contextlib.suppress(Missing):
            self.root.delete(_INDEX_PATH)
