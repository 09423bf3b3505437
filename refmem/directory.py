"""The filesystem store: the memory directory's operations, each a few lines over the kernel's walk.

`Directory` implements `store_protocol.Store` over a real directory: every method is a walk to a parent folder,
then one kernel primitive. It adds no confinement of its own: every disk access below goes through
`kernel.RootDir.walk` and the kernel's primitives, so an audit of `kernel.py` covers it. Its own file
(the write lock) lives in `.refmem/` (`bookkeeping.py`).

It keeps no change journal and no access records: those are `tracked.TrackedDirectory`'s, a layer over it that only
deployments which read them need (OpenClaw's index, `refmem prune`); a vendored copy leaves it out
(D-VENDOR-SET). `Directory` says what it changes, at the moment it changes it, through three hooks
(`note_changes`, `_removed`, `_moved`) that do nothing here.

`open_directory` is the one function that knows which filesystem store a path gets.
"""

from __future__ import annotations

import contextlib
import os
import stat
from types import ModuleType
from typing import Callable, ContextManager, Iterator, List, Optional, Tuple, Union, cast

from . import _kernel as kernel
from . import _tree as tree
from . import problems
from ._bookkeeping import BOOKKEEPING_DIR, LOCK_NAME, WriteLock
from ._kernel import Dir
from ._optional import optional_module, required_module
from .messages import TENANT_NESTED
from .paths import VirtualPath
from .problems import DIR, FILE, FsProblem, Missing, OsFailure, TooBig
from .store_protocol import Entry, Listed, Store, TenantError, tenant_name

__all__ = [
    "BOOKKEEPING_DIR", "LOCK_NAME", "Directory", "Edit", "Entry", "Listed", "OpenFile", "TooBig", "open_directory",
    "protected",
]

READ_CHUNK = 1 << 20  # a large file is read (and viewed) this much at a time
_SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX


def protected(info: os.stat_result) -> bool:
    """D-MODE: a regular file its owner may not write is not edited or deleted."""
    return stat.S_ISREG(info.st_mode) and not info.st_mode & stat.S_IWUSR


class OpenFile:
    """A regular file open for reading (`store_protocol.ReadFile`); `info` is its fstat after opening."""

    __slots__ = ("fd", "info")

    def __init__(self, fd: int, info: os.stat_result) -> None:
        self.fd = fd
        self.info = info

    @property
    def size(self) -> int:
        return self.info.st_size

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

    __slots__ = ("data", "_folder", "_name", "_mode", "_read", "_version", "_changing")

    def __init__(
        self, folder: Dir, name: str, data: bytes, info: os.stat_result, changing: Callable[[], ContextManager[None]]
    ) -> None:
        self.data = data
        self._folder = folder
        self._name = name
        self._mode = stat.S_IMODE(info.st_mode) & ~_SPECIAL_BITS
        self._read = kernel.identity(info)
        self._version = _version(info)
        self._changing = changing  # the write lock, with the change recorded in the journal

    def replace(self, new_data: bytes) -> None:
        """Put `new_data` in place of the file read, only if the name still holds that very file, as it
        was read (replaced or rewritten by something outside the lock since the read, it is not
        clobbered: its inode number alone could be a new file's, reused)."""
        temp = kernel.write_temp(self._folder, new_data, self._mode)
        try:
            with self._changing():
                now = self._folder.lstat(self._name)
                if now is None or _version(now) != self._version:
                    raise OsFailure("changed")
                kernel.replace(self._folder, temp, self._name, expected=self._read)
        except BaseException:
            kernel.unlink_quietly(self._folder, temp)  # gone already unless the journal refused
            raise
        self._folder.fsync()


class Directory:
    """A memory directory on disk (`store_protocol.Store`): every method is a walk to a parent folder, then one
    primitive. `tenant` names a tenant whose memories live in their own folder (D-STORE-TENANT-FS)."""

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        portable: bool = False,
        create: bool = True,
        *,
        tenant: Optional[str] = None,
    ) -> None:
        """Open the memory directory at `path`, made if missing; with `create=False` a missing one
        raises Missing (prune must not conjure up a root from a typo)."""
        checked = None if tenant is None else tenant_name(tenant)  # before anything is made
        top = kernel.RootDir(path, portable, create)
        if checked is not None:
            parent = top
            try:
                top = _tenants().open_tenant(parent, checked)
            finally:
                parent.close()
        self._open(top, checked)

    def _open(self, top: kernel.RootDir, tenant: Optional[str]) -> None:
        self.dir = top
        self.real = top.real
        self.portable = top.portable
        self.tenant = tenant
        self._lock = WriteLock(top)
        self._kept = _Kept()  # under the lock, the folder `entry` reached, for the command's next step
        self._lock.released = self._kept.drop  # closed when the lock is let go (no cycle: `_Kept` knows no store)

    def close(self) -> None:
        """Release the root's descriptors (the handler keeps them for its lifetime)."""
        self._kept.drop()
        self._lock.close()
        self.dir.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def for_tenant(self, tenant: str) -> Directory:
        """The store of `tenant`'s memories below this root (D-STORE-TENANT-FS), of the same kind as this one;
        the caller closes it."""
        if self.tenant is not None:
            raise TenantError(TENANT_NESTED)
        return self._like(_tenants().open_tenant(self.dir, tenant_name(tenant)), tenant)

    def _like(self, top: kernel.RootDir, tenant: str) -> Directory:
        """A store of this kind, with this one's settings, over the opened `top`."""
        made = Directory.__new__(Directory)
        made._open(top, tenant)
        return made

    def walk(self, parts: Tuple[str, ...], create: bool = False, made: Optional[List[int]] = None) -> Dir:
        return self.dir.walk(parts, create, made)

    def _parent(self, path: VirtualPath, check: bool = True) -> Dir:
        return self.dir.walk(path.parts[:-1], check=check)

    def _looked_at(self, path: VirtualPath) -> Tuple[Dir, Optional[os.stat_result]]:
        """The folder holding `path` (the caller closes it) and the `lstat` of its name there. Under `locked()`, what
        `entry` just found is taken (D-FS-KEPT-FOLDER: a rename looks at its source, then moves it, walking once).
        The root-removed check (a stat) is made only when the folder is not found: a removed root has no entries."""
        kept = self._kept
        if kept.folder is not None and kept.parts == path.parts[:-1] and self._lock.held():
            folder, kept.folder = kept.folder, None
            if kept.name == path.name:
                return folder, kept.info
        else:
            try:
                folder = self._parent(path, check=False)
            except Missing:
                self.dir.check_removed()
                raise
        try:
            return folder, folder.lstat(path.name)
        except BaseException:
            folder.close()
            raise

    @contextlib.contextmanager
    def _made_parent(self, path: VirtualPath) -> Iterator[Dir]:
        """The folder holding `path`, made if missing; folders made are removed if the command fails.

        An existing folder is reached as a view reaches it (one openat below the root, one openat2
        deeper); only a missing one takes the name-by-name walk that makes folders."""
        made: List[int] = []
        try:
            try:
                existing: Optional[Dir] = self.dir.walk(path.parent.parts)
            except Missing:
                existing = None
            with existing or self.dir.walk(path.parent.parts, True, made) as folder:
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
        """What is at `path`, without following a link; None when nothing is (or OsFailure("root_removed")).
        The root-removed check is made only when nothing is found: a removed folder has no entries."""
        if path.is_root:
            return Entry(DIR, 0)
        try:
            folder = self._parent(path, check=False)
        except Missing:
            self.dir.check_removed()
            return None
        try:
            info = folder.lstat(path.name)
        except BaseException:
            folder.close()
            raise
        if self._lock.held():  # for the command's next step (`_looked_at`), until the lock is let go
            self._kept.keep(path.parts[:-1], folder, path.name, info)
        else:
            folder.close()
        if info is None:
            self.dir.check_removed()
            return None
        if path.trailing_slash and not stat.S_ISDIR(info.st_mode):
            return None  # a trailing "/" names a folder: anything else is not there (ENOTDIR)
        kind = problems.kind_of(info.st_mode)
        return Entry(kind, info.st_size if kind == FILE else 0)

    def open_regular(self, path: VirtualPath, refuse_hard_links: bool = True) -> OpenFile:
        """The regular file at `path`, open for reading (the caller closes it).

        Raises NotRegular with the kind found (a folder included), IsLink, HardLinked or Missing.
        The root-removed check is made only when nothing is found: a removed folder has no entries.
        """
        if not path.parts:
            raise problems.NotRegular(DIR)
        try:
            folder = self.dir.walk(path.parts[:-1], check=False)
            try:  # try/finally, not `with`: views are the commonest command, and this is their path
                return _open_file(folder, path, refuse_hard_links)
            finally:
                folder.close()
        except Missing:
            self.dir.check_removed()
            raise

    def children(
        self, path: VirtualPath, keep: Callable[[str], bool], limit: int
    ) -> Tuple[List[Tuple[str, str, int]], bool]:
        """The folders and regular files in the folder `path` that `keep` accepts, at most `limit` of them in
        directory order (the folder is read only until the limit could be met), and whether more were there.
        A name `keep` refuses is never stat'ed; links and special files are never given."""
        batch: List[Tuple[str, str, int]] = []
        more = False
        with self.dir.walk(path.parts) as folder:
            try:
                with folder.scandir() as entries:
                    for item in entries:
                        if not keep(item.name):
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
                        if len(batch) == limit:
                            more = True
                            break
                        batch.append((item.name, kind, size))
            except OSError as error:
                raise problems.os_failure(error) from None
        return batch, more

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

    # -- changes (each under the write lock, recorded in the journal before anything changes) --

    def _writing(self) -> ContextManager[None]:
        """The write lock for a mutation, unless this thread holds it already (the handler always does)."""
        return contextlib.nullcontext() if self._lock.held() else self._lock.locked()

    @contextlib.contextmanager
    def _changing(self, *paths: str) -> Iterator[None]:
        """The write lock, with `paths` recorded in the journal before the block changes them."""
        with self._writing():
            self.note_changes(paths)
            yield

    def note_changes(self, paths: Tuple[str, ...]) -> None:
        """The virtual paths `paths` (and what lies below them) are about to change: called under the write
        lock, after every check, before the change. Nothing is kept here (`tracked.TrackedDirectory` journals them)."""

    def _removed(self, canonical: str, is_dir: bool) -> None:
        """`canonical` (a folder with everything below it when `is_dir`) was just deleted."""

    def _moved(self, old: str, new: str, is_dir: bool) -> None:
        """`old` was just renamed to `new`."""

    def write_new(self, path: VirtualPath, data: bytes) -> None:
        """Create a file that must not exist yet; parents are made. All or nothing."""
        with self._writing(), self._made_parent(path) as folder:
            temp = kernel.write_temp(folder, data, kernel.FILE_MODE)
            try:
                self.note_changes((path.canonical,))
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
            yield Edit(folder, path.name, data, opened.info, lambda: self._changing(path.canonical))

    def delete(self, path: VirtualPath) -> None:
        """Remove a name; a folder goes with everything in it, at any depth. Links are removed, never
        followed; files their owner may not write are not removed (D-MODE)."""
        if path.is_root:
            raise OsFailure("denied")
        with self._writing():
            folder, info = self._looked_at(path)
            with folder:
                if info is None:
                    self.dir.check_removed()
                    raise Missing()
                if path.trailing_slash and not stat.S_ISDIR(info.st_mode):
                    raise Missing()
                if protected(info):
                    raise OsFailure("protected")
                self.note_changes((path.canonical,))
                try:
                    tree.remove(folder, path.name, info, keep=protected)
                except OsFailure as problem:
                    if problem.code == "protected":
                        raise OsFailure("protected_inside") from None
                    raise
                folder.fsync()
            self._removed(path.canonical, stat.S_ISDIR(info.st_mode))

    def rename(self, old: VirtualPath, new: VirtualPath) -> None:
        """Move `old` to `new`, never over anything; the destination's missing parents are made."""
        if old.is_root or new.is_root:
            raise OsFailure("denied")
        with self._writing():
            source, info = self._looked_at(old)
            with source:
                if info is None:
                    self.dir.check_removed()
                    raise Missing()
                is_dir = stat.S_ISDIR(info.st_mode)
                if old.parts[:-1] == new.parts[:-1]:  # one folder: it is the destination, fsynced once
                    self.note_changes((old.canonical, new.canonical))
                    kernel.rename_noreplace(source, old.name, source, new.name, is_dir)
                else:
                    with self._made_parent(new) as destination:
                        self.note_changes((old.canonical, new.canonical))
                        kernel.rename_noreplace(source, old.name, destination, new.name, is_dir)
                        destination.fsync()
                source.fsync()
            self._moved(old.canonical, new.canonical, is_dir)

    # -- the lock --

    def locked(self) -> ContextManager[None]:
        """An exclusive lock shared by every handler, thread and process on this root (`flock` of
        `.refmem/lock`, see bookkeeping.WriteLock). A folder `entry` reached within it may serve the command's
        next step (`_looked_at`); it is closed when the lock is let go."""
        return self._lock.locked()


class _Kept:
    """The folder `Directory.entry` reached under the write lock, for the same command's next step: a rename looks
    at its source, then moves it, and walks once. Only the lock's holder sets or takes it; the lock's release
    closes it, so nothing reached in one command serves another."""

    __slots__ = ("parts", "folder", "name", "info")

    def __init__(self) -> None:
        self.parts: Tuple[str, ...] = ()
        self.folder: Optional[Dir] = None
        self.name, self.info = "", cast("Optional[os.stat_result]", None)  # and what the `lstat` of `name` found

    def keep(self, parts: Tuple[str, ...], folder: Dir, name: str, info: Optional[os.stat_result]) -> None:
        self.drop()
        self.parts, self.folder, self.name, self.info = parts, folder, name, info

    def drop(self) -> None:
        folder, self.folder = self.folder, None
        if folder is not None:
            folder.close()


def _version(info: os.stat_result) -> Tuple[int, int, int, int, int]:
    """What tells one version of a file from another without reading it: identity, size, both times."""
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def _open_file(folder: Dir, path: VirtualPath, refuse_hard_links: bool) -> OpenFile:
    """The file `path` names in its open parent folder. A trailing "/" names a folder: anything
    else there is not found (POSIX ENOTDIR), a folder is NotRegular(DIR)."""
    if path.trailing_slash:
        info = folder.lstat(path.name)
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise Missing()
    return OpenFile(*kernel.open_regular(folder, path.name, refuse_hard_links))


def _tenants() -> ModuleType:
    """`_tenants.py`, which only a store with tenants needs (D-VENDOR-SET)."""
    return required_module("_tenants", "a tenant's own folder (tenant=...)")


def _as_store(root: Directory) -> Store:
    """Nothing at run time: mypy checks here that `Directory` implements `store_protocol.Store`."""
    return root


def open_directory(
    path: Union[str, os.PathLike[str]],
    *,
    tenant: Optional[str] = None,
    portable: bool = False,
    track_access: Optional[bool] = None,
) -> Store:
    """The filesystem store a handler serves for a directory path: the one place that chooses it.

    Where `tracked.py` is part of this copy (always in the package), a `tracked.TrackedDirectory`: the directory
    with its change
    journal and, unless `track_access` is False, its access records. In a vendored copy without it, the bare
    `Directory`; asking for access records there (`track_access=True`) is `optional.MissingModule`, naming it.
    """
    layer = optional_module("tracked", "keeping access records (track_access)", required=track_access is True)
    if layer is None:
        return Directory(path, portable, tenant=tenant)
    made: Store = layer.TrackedDirectory(path, portable, tenant=tenant, track_access=track_access is not False)
    return made
