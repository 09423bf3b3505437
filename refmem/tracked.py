"""The filesystem store with its change journal and access records: `TrackedDirectory`, a layer over
`directory.Directory`.

`Directory` is the memory directory's operations, and all a vendored copy needs (D-VENDOR-SET). `TrackedDirectory` adds
what only some deployments read, built from `Directory`'s hooks at the moments it changes something:
  * the change journal (`changes.py`: `changes_since`, for OpenClaw's index), every change recorded under
    the write lock, after every check and before the change (`note_changes`);
  * the access records (`access.py`: `record_use`, `last_access`, for `refmem prune` and D-EXPIRY), moved
    and forgotten with the paths they are about.
Both live in `.refmem/` (`bookkeeping.py`); `open_directory` gives a `TrackedDirectory` wherever this module was copied.
"""

from __future__ import annotations

import os
from typing import Optional, Tuple, Union

from . import _access as access
from . import _kernel as kernel
from ._access import AccessTracker
from ._changes import Journal
from ._store_extras import Changes
from .directory import BOOKKEEPING_DIR, LOCK_NAME, Directory, Edit, Entry, Listed, OpenFile, TooBig, protected
from .paths import RESERVED_PREFIX, ROOT, VirtualPath
from .store_protocol import ReadFile

__all__ = [
    "BOOKKEEPING_DIR", "LOCK_NAME", "Edit", "Entry", "Listed", "OpenFile", "TooBig", "TrackedDirectory", "protected"
]


class TrackedDirectory(Directory):
    """A memory directory on disk with a change journal and, with `track_access`, access records (D-EXPIRY)."""

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        portable: bool = False,
        create: bool = True,
        *,
        tenant: Optional[str] = None,
        track_access: bool = True,
    ) -> None:
        """As `Directory`; `track_access` keeps the access records of views, deletes and renames (D-EXPIRY)."""
        self.track_access = track_access
        super().__init__(path, portable, create, tenant=tenant)

    def _open(self, top: kernel.RootDir, tenant: Optional[str]) -> None:
        super()._open(top, tenant)
        self._journal = Journal(top)
        self._access = AccessTracker(top)

    def _like(self, top: kernel.RootDir, tenant: str) -> TrackedDirectory:
        made = TrackedDirectory.__new__(TrackedDirectory)
        made.track_access = self.track_access
        made._open(top, tenant)
        return made

    def close(self) -> None:
        """Release the root's descriptors (the handler keeps them for its lifetime)."""
        self._access.close()
        self._journal.close()
        super().close()

    # -- the hooks: what changed, recorded --

    def note_changes(self, paths: Tuple[str, ...]) -> None:
        """Record in the change journal that the virtual paths `paths` (and what lies below them) are
        about to change; the store's own `.refmem` names are not recorded. Call under the write lock."""
        shown = tuple(path for path in paths if not _reserved(path))
        if shown:
            self._journal.append(shown)

    def _removed(self, canonical: str, is_dir: bool) -> None:
        if self.track_access and not _reserved(canonical):
            self._access.forget(canonical, is_dir=is_dir)

    def _moved(self, old: str, new: str, is_dir: bool) -> None:
        if self.track_access:
            self._access.move(old, new, is_dir=is_dir)

    # -- the journal and the access records (store_protocol.ChangeJournal, store_protocol.AccessRecords) --

    def changes_since(self, generation: int) -> Changes:
        """The paths changed since `generation` (changes.py); read under the write lock, so no change
        recorded is still under way."""
        with self._writing():
            return self._journal.since(generation)

    def record_use(self, path: VirtualPath, opened: ReadFile) -> None:
        """A view of the file just read: its access record, unless its own mtime already says it
        (D-EXPIRY). Never raises for the disk's sake: bookkeeping never fails a command."""
        if not self.track_access:
            return
        info = getattr(opened, "info", None)
        if info is not None and hasattr(info, "st_ino"):
            if 0 <= access.clock() - info.st_mtime < self._access.resolution:
                return  # the file's own mtime says it (`touch` would say the same, a few calls later)
            self._access.touch(path.canonical, changed_at=info.st_mtime, file_id=kernel.identity(info))
        else:
            self._access.touch(path.canonical)

    def last_access(self, path: VirtualPath) -> Optional[float]:
        return self._access.last_access(path.canonical)


def _reserved(canonical: str) -> bool:
    """A virtual path through the store's own `.refmem` names (the OpenClaw index's file, for one): its first name
    starts with `.refmem`."""
    return canonical.startswith(_RESERVED_START)


_RESERVED_START = ROOT + "/" + RESERVED_PREFIX
