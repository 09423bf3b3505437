"""Pruning: remove the memories nobody used for a while (the documentation's "memory expiration").

A file's last use is the later of its own mtime and its access record (`access.py`). Pruning takes the
same exclusive lock as the handler's writes (`bookkeeping.WriteLock`: `flock` on `.refmem/lock`), walks
the tree with `tree.descend` (from directory descriptors, at any depth, without following any link),
re-checks each file (same inode, same mtime) just before unlinking it, and records every path it
removes in the change journal before removing it. Folders it emptied go too; folders that were empty
already stay; stale records and old temp files are cleared.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

from . import _kernel as kernel
from . import _tree as tree
from ._access import AccessTracker, Record, virtual_path
from ._kernel import Dir
from ._records import names, remove_record
from .paths import RESERVED_PREFIX
from .problems import FsProblem, OsFailure
from .tracked import TrackedDirectory

STALE_TEMP_AGE = 3600.0
RootLike = Union[TrackedDirectory, str, "os.PathLike[str]"]


# --- pruning ----------------------------------------------------------------------------------


class PruneReport(NamedTuple):
    """What a prune removed (or, dry run, would remove).

    ``removed``: virtual paths of files, then of folders left empty by the prune, sorted.
    ``kept``: regular files kept. ``stale_records``: records of paths that no longer exist, dropped.
    ``temp_files``: leftover temp files (``.refmem-tmp-*``, older than an hour) removed.
    """

    removed: List[str]
    kept: int
    stale_records: int = 0
    temp_files: int = 0


def prune(
    root: RootLike,
    older_than: float,
    dry_run: bool = False,
    now: Optional[float] = None,
    *,
    lock: bool = True,
) -> PruneReport:
    """Remove memory files not viewed or changed for `older_than` seconds; report what went.

    A file's last use is the later of its access record and its mtime. Folders that the prune
    leaves empty go too (never `/memories` itself); folders that were empty already stay. Links,
    special files and the handler's own `.refmem*` names are never touched (old leftover temp files
    are removed). Pass ``lock=False`` only when the caller already holds the root's lock. A root
    given as a path must exist (else problems.Missing); it is opened for the prune and closed after.
    """
    if not older_than > 0:
        raise ValueError("older_than must be a positive number of seconds")
    current = time.time() if now is None else float(now)
    cutoff = current - float(older_than)
    disk = root if isinstance(root, TrackedDirectory) else TrackedDirectory(root, create=False)
    try:
        guard = disk.locked() if lock and not dry_run else contextlib.nullcontext()
        with guard, AccessTracker(disk) as tracker:
            return _Pruner(disk, cutoff, current, dry_run).run(tracker)
    finally:
        if disk is not root:
            disk.close()


class _Pruner:
    """One prune's judgement: which files are old, which folders it emptied, what it counted."""

    def __init__(self, root: TrackedDirectory, cutoff: float, now: float, dry_run: bool) -> None:
        self.root = root
        self.cutoff = cutoff
        self.now = now
        self.dry_run = dry_run
        self.records: Dict[str, Record] = {}
        self.removed_files: List[str] = []
        self.removed_dirs: List[str] = []
        self.live_files: Set[str] = set()
        self.emptied: Set[Tuple[str, ...]] = set()  # folders the prune removed from and left empty
        self.kept = 0
        self.temp_files = 0

    def run(self, tracker: AccessTracker) -> PruneReport:
        try:
            self.records = {r.path: r for r in tracker.records()}
        except (OSError, FsProblem):
            self.records = {}
        def enter(parts: Tuple[str, ...], name: str) -> bool:
            return not name.startswith(RESERVED_PREFIX)

        with self.root.walk(()) as top, contextlib.closing(tree.descend(top, enter)) as walk:
            for found in walk:  # at any depth; every folder closes even on error
                self._folder(found)
        stale = self._drop_records(tracker)
        removed = sorted(self.removed_files) + sorted(self.removed_dirs)
        return PruneReport(removed, self.kept, stale, self.temp_files)

    def _folder(self, found: tree.Visit) -> None:
        """Judge the entries of one open folder, whose subfolders were judged already."""
        vdir = virtual_path(found.parts)
        reserved = [name for name, _ in found.entries if name.startswith(RESERVED_PREFIX)]
        temps = clear_stale_temps(found.dir, reserved, self.now, STALE_TEMP_AGE, self.dry_run)
        self.temp_files += temps
        removed = 0
        remaining = len(reserved) - temps  # the handler's other names stay, and so keep the folder
        for name, info in found.entries:
            if name.startswith(RESERVED_PREFIX):
                continue
            if self._entry(found, name, info, vdir + "/" + name):
                removed += 1
            else:
                remaining += 1
        if removed and not self.dry_run:
            found.dir.fsync()
        if removed and not remaining:
            self.emptied.add(found.parts)

    def _entry(self, found: tree.Visit, name: str, info: os.stat_result, vpath: str) -> bool:
        """True when the prune removes the entry (dry run: would); links and special files stay."""
        if stat.S_ISREG(info.st_mode):
            return self._file(found.dir, name, info, vpath)
        if stat.S_ISDIR(info.st_mode) and found.parts + (name,) in self.emptied:
            # Removed unless something arrived since the folder was judged.
            if self.dry_run or (self._note(vpath) and _removed(found.dir.rmdir, name)):
                self.removed_dirs.append(vpath)
                return True
        return False

    def _file(self, folder: Dir, name: str, info: os.stat_result, vpath: str) -> bool:
        record = self.records.get(vpath)
        last = info.st_mtime if record is None else max(record.mtime, info.st_mtime)
        # Unlinked only if it is still the file judged here (same inode and mtime).
        if last < self.cutoff and (self.dry_run or (self._note(vpath) and unlink_if_unchanged(folder, name, info))):
            self.removed_files.append(vpath)
            return True
        self.kept += 1
        self.live_files.add(vpath)
        return False

    def _note(self, vpath: str) -> bool:
        """Record in the change journal that `vpath` is about to go (before it goes); True."""
        self.root.note_changes((vpath,))
        return True

    def _drop_records(self, tracker: AccessTracker) -> int:
        """Drop the records of paths that are no longer files and count the stale ones (those the
        prune did not remove itself); the moves log keeps the uses of the files that remain; the
        record folder's old temp files go too."""
        folder = tracker._existing_folder()
        if folder is None:
            return 0
        pruned = set(self.removed_files)
        stale = 0
        for path, record in self.records.items():
            if path in self.live_files:
                continue
            if path not in pruned:
                stale += 1
            if not self.dry_run:
                with contextlib.suppress(OSError, FsProblem):
                    remove_record(folder, record.name)
        if not self.dry_run:
            with contextlib.suppress(OSError, FsProblem):
                tracker.compact(keep=self.live_files.__contains__)  # the moves log: the files that remain
        self.temp_files += clear_stale_temps(folder, names(folder), self.now, STALE_TEMP_AGE, self.dry_run)
        return stale


# --- removing only what was judged ---------------------------------------------------------------


def unlink_if_unchanged(folder: Dir, name: str, judged: os.stat_result) -> bool:
    """Unlink `name` only if it is still the regular file that was `judged` (same inode, device and
    mtime): a file replaced or rewritten since is kept. True when it was removed."""
    try:
        info = folder.lstat(name)
    except OsFailure:
        return False
    if info is None or not stat.S_ISREG(info.st_mode) or _version(info) != _version(judged):
        return False
    return _removed(folder.unlink, name)


def clear_stale_temps(folder: Dir, candidates: Sequence[str], now: float, age: float, dry_run: bool) -> int:
    """Remove (dry run: count) the temp files among `candidates` unchanged for over `age` seconds:
    the debris of a crashed write, not a write in progress. Returns how many."""
    count = 0
    for name in candidates:
        if not name.startswith(kernel.TEMP_PREFIX):
            continue
        with contextlib.suppress(OsFailure):
            info = folder.lstat(name)
            if info is not None and stat.S_ISREG(info.st_mode) and now - info.st_mtime > age:
                count += 1
                if not dry_run:
                    kernel.unlink_quietly(folder, name)
    return count


def _version(info: os.stat_result) -> Tuple[int, int, int]:
    """What tells one version of a file from another: inode, device, mtime in nanoseconds."""
    return info.st_ino, info.st_dev, info.st_mtime_ns


def _removed(remove: Callable[[str], None], name: str) -> bool:
    try:
        remove(name)
    except OSError:
        return False
    return True
