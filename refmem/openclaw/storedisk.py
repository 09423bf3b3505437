"""The OpenClaw tools over a store that is not a directory (a database store): `disk.Files` in the words of
`refmem.store_protocol.Store` alone.

A database has no `.refmem/` folder, no inodes and no folder times (D-OPENCLAW-STORES): the search index lives
in memory, stays fresh from the store's change journal (`fresh.JournalFreshness`), and tells one version of a
file from another by its size and a digest of its bytes. The scan is `listing.list_tree` below `memory/`
plus the two curated files at the top, bounded by `max_indexed_files`; reads are `open_regular`; the daily log
is one read-modify-write inside `locked()` (one transaction).

Every store call goes through `guarded`: a refusal stays the `FsProblem` it is, and anything else a store
raises (an engine error it did not word, a closed connection) becomes OsFailure("os"), so that the tools answer
with an error result naming nothing of the host, as the handler answers a store's bug (D-INTERNAL).
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from .. import _listing as listing
from ..limits import DEFAULT_LIMITS, Limits
from ..paths import VirtualPath
from ..problems import FILE, Exists, FsProblem, HardLinked, IsLink, Missing, NotRegular, OsFailure, ParentNotDir
from ..store_protocol import ReadFile, Store
from . import paths
from .disk import FileState, FolderState, IndexHandle
from .limits import DEFAULT_OPENCLAW_LIMITS

Parts = Tuple[str, ...]

GONE = (Missing, NotRegular, IsLink, HardLinked, ParentNotDir)
"""What says a path holds no indexable file (as opposed to a store that failed, which the search reports)."""
LISTED_PER_FILE = 2
"""The scan lists at most this many entries (files and folders) per file it may index: folders count too."""


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """A store's refusals as they are; anything else it raises as OsFailure("os") (see the module docstring)."""
    try:
        yield
    except FsProblem:
        raise
    except Exception:  # noqa: BLE001 - a store's bug or an engine error it did not word: never a traceback
        raise OsFailure("os") from None


def _listed(name: str) -> bool:
    """Is `name` one that `listing.list_tree` shows and enters (not hidden, not `node_modules`), and one the
    OpenClaw tools read?"""
    return listing.is_listed(name, paths.readable_name)


def content_state(data: bytes) -> FileState:
    """The state of a file in a store without inodes or times: its size, and a 63-bit digest of its bytes in
    the place of the modification time (no device, no inode): equal states, equal bytes."""
    digest = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big") >> 1
    return FileState(0, 0, len(data), digest)


class StoreDisk:
    """The workspace in a `store_protocol.Store` that is not a directory, as the OpenClaw tools use it."""

    def __init__(
        self,
        store: Store,
        limits: Limits = DEFAULT_LIMITS,
        allowed: Optional[Callable[[str], bool]] = None,
        read_limit: int = DEFAULT_OPENCLAW_LIMITS.max_index_file_bytes,
    ) -> None:
        self.store = store
        self.limits = limits
        self.allowed = allowed  # the session's allow-list, on OpenClaw's spelling of a path; None: all
        self.read_limit = read_limit  # files larger than this are never indexed: their state is their size

    # -- reading --

    def open_file(self, path: VirtualPath) -> ReadFile:
        """The file at `path`, open for reading (FsProblem otherwise)."""
        with guarded():
            return self.store.open_regular(path)

    def read_file(self, parts: Parts, limit: int) -> Optional[Tuple[bytes, FileState]]:
        """The bytes and state of an indexable file; None when it is gone, not a file or over `limit` bytes.
        A store that fails raises its FsProblem: the file is not dropped from the index for a busy database."""
        try:
            with guarded(), self.store.open_regular(VirtualPath(parts)) as opened:
                if opened.size > limit:
                    return None
                data = opened.read_all()
        except GONE:
            return None
        return (data, content_state(data)) if len(data) <= limit else None

    def scan(
        self, cap: int, folders: Optional[Dict[Parts, FolderState]] = None, under: Parts = ()
    ) -> Dict[Parts, FileState]:
        """The indexable memory files (below `under`), at most `cap`, the first in path order, each read once
        for its state. A database has no folder times: `folders` is left as it is."""
        if under and not self._entered(under):
            return {}
        at_top = [] if under else [(name,) for name in sorted(paths.ROOT_FILES)]
        candidates: List[Parts] = [parts for parts in at_top if self._indexable(parts)]
        top = under or (paths.MEMORY_DIR,)
        try:
            with guarded():
                listed, _ = listing.list_tree(
                    self.store,
                    VirtualPath(top), paths.READ_MAX_DEPTH - len(top), LISTED_PER_FILE * cap + 1, paths.readable_name
                )
        except (Missing, NotRegular):
            listed = []
        candidates += [top + item.parts for item in listed if item.kind == FILE and self._indexable(top + item.parts)]
        found: Dict[Parts, FileState] = {}
        for parts in sorted(candidates):
            if len(found) == cap:
                break
            state = self._read_state(parts)
            if state is not None:
                found[parts] = state
        return found

    def list_folder(self, parts: Parts) -> Optional[Tuple[Dict[Parts, FileState], Dict[Parts, FolderState]]]:
        """Never asked (no folder is recorded by `scan`): None, as for a folder that is gone."""
        return None

    def folder_state(self, parts: Parts) -> Optional[FolderState]:
        """A database keeps no folder times: None, as for a folder that is gone."""
        return None

    def state_of(self, parts: Parts) -> Optional[FileState]:
        """The state of the file at `parts` when the scan would index it; None otherwise."""
        if not self._indexable(parts) or not self._entered(parts[:-1]):
            return None
        return self._read_state(parts)

    def _read_state(self, parts: Parts) -> Optional[FileState]:
        """The file's state: read whole for its digest, or, over `read_limit` (never indexed), its size alone."""
        try:
            with guarded(), self.store.open_regular(VirtualPath(parts)) as opened:
                if opened.size > self.read_limit:
                    return FileState(0, 0, opened.size, 0)
                data = opened.read_all()
        except GONE:
            return None
        return content_state(data)

    def _entered(self, folder: Parts) -> bool:
        """Does the scan enter the folder `folder` (every name on the way)?"""
        return all(_listed(name) and paths.enters(folder[:depth], name) for depth, name in enumerate(folder))

    def _indexable(self, parts: Parts) -> bool:
        return (
            paths.is_indexed(parts)
            and all(_listed(name) for name in parts)
            and paths.within_bounds(parts)
            and (self.allowed is None or self.allowed(paths.relative(parts)))
        )

    # -- writing --

    def append(self, path: VirtualPath, extend: Callable[[bytes], bytes], limit: int) -> None:
        """Replace the file at `path` by `extend(old bytes)` (b"" when it does not exist) in one transaction of
        the store. FsProblem when it cannot."""
        with guarded(), self.store.locked():
            try:
                with self.store.open_edit(path, limit) as edit:
                    edit.replace(extend(edit.data))
                return
            except Missing:
                pass
            try:
                self.store.write_new(path, extend(b""))  # ParentNotDir: a file is in the way
            except Exists:
                raise OsFailure("changed") from None  # made meanwhile by a writer outside the transaction

    # -- the search index: none in a database --

    def index_handle(self) -> IndexHandle:
        """A database store has no index file (the workspace keeps its index in memory)."""
        raise OsFailure("os")

    def drop_index(self) -> None:
        """Nothing to drop: there is no index file."""
