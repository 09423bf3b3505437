"""Keeping the search index fresh without a rescan per search (D-OPENCLAW-INDEX-FRESH).

Before each search `Freshness.update` asks the sources of changes (`changes.py`) what changed and
reads again only that: the in-process notices and the store's journal name files; the interval says
when the full scan is due; and the cheap check of every search looks at the modification time of each
folder holding memory files, listing again only a folder whose time moved (or moved too recently to
be trusted, `changes.RACY_NS`). A folder that appeared is scanned whole, one that went takes its files
with it.

`JournalFreshness` is the same over a store that is not a directory (a database, D-OPENCLAW-STORES): every
change to it goes through refmem and is in its change journal, so the journal is the only source; it has no
folder times to look at and no other program to wait for.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, List, Optional, Set, Tuple

from ..store_protocol import Store
from ..tracked import TrackedDirectory
from . import changes, paths, watch
from .disk import Files, FolderState
from .index import Index, Refreshed
from .limits import OpenClawLimits

Parts = Tuple[str, ...]


def _directly_in(folder: Parts) -> Callable[[str], bool]:
    prefix = "/".join(folder)
    if not prefix:
        return lambda path: "/" not in path
    return lambda path: path.rsplit("/", 1)[0] == prefix if "/" in path else False


def _below(folder: Parts) -> Callable[[str], bool]:
    prefix = "/".join(folder) + "/"
    return lambda path: path.startswith(prefix)


class Freshness:
    """What one handler knows of the workspace since its last search: the tokens its sources handed
    out and the state of every folder it looked at (with when it looked)."""

    def __init__(self, root: TrackedDirectory, limits: OpenClawLimits, journal: bool = True) -> None:
        self.limits = limits
        key = changes.workspace_key(root)
        self.notices = changes.Notices(key)
        self.watcher = watch.start(root.real)
        self.interval = changes.Interval(limits.scan_interval_ms * 1_000_000)
        sources: List[changes.Source] = [self.notices, self.watcher or self.interval]
        store_journal = changes.journal(root) if journal else None
        if store_journal is not None:
            sources.append(store_journal)
        self.sources = sources
        self.tokens = [0] * len(sources)
        self.folders: Dict[Parts, Tuple[FolderState, int]] = {}  # state, and when it was taken (ns)
        self.lock = threading.Lock()
        self.full_scans = 0

    @property
    def method(self) -> str:
        """How edits made in place by another program are found: `inotify`, or `interval` (the full scan)."""
        return "inotify" if self.watcher is not None else "interval"

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.close()

    def _watch(self) -> None:
        """Watch every folder known; where the kernel refuses, go back to the interval."""
        if self.watcher is None:
            return
        self.watcher.watch(self.folders)
        if self.watcher.failed:
            self.watcher.close()
            self.watcher = None
            self.sources[1] = self.interval
            self.tokens[1] = 0

    def update(self, index: Index, disk: Files) -> Refreshed:
        """Bring `index` up to date (see the module docstring)."""
        with self.lock:
            try:
                return self._update(index, disk)
            finally:
                self._watch()

    def _update(self, index: Index, disk: Files) -> Refreshed:
        """The sources asked, then what they name (or everything) read again."""
        changed: Set[str] = set()
        full = False
        for number, source in enumerate(self.sources):
            self.tokens[number], found = source.changes_since(self.tokens[number])
            if found is None:
                full = True
            else:
                changed |= found
        if full:
            return self.full(index, disk)
        total = [0, 0, 0, 0]
        for result in self._check_folders(index, disk):
            total = [a + b for a, b in zip(total, result)]
        if changed:
            result = index.refresh_paths(disk, self.limits, changed)
            total = [a + b for a, b in zip(total, result)]
        return Refreshed(*total)

    def full(self, index: Index, disk: Files) -> Refreshed:
        """The full scan, now."""
        folders: Dict[Parts, FolderState] = {}
        taken = time.time_ns()
        result = index.refresh(disk, self.limits, folders)
        self.folders = {parts: (state, taken) for parts, state in folders.items()}
        self.full_scans += 1
        return result

    def _check_folders(self, index: Index, disk: Files) -> List[Refreshed]:
        results: List[Refreshed] = []
        gone: List[Parts] = []
        for parts, (known, taken) in sorted(self.folders.items()):
            if any(parts[: len(g)] == g for g in gone):
                continue
            now = time.time_ns()
            state = disk.folder_state(parts)
            if state == known and known.mtime_ns < taken - changes.RACY_NS:
                continue
            if state is None:
                gone.append(parts)
                results.append(index.reconcile(disk, self.limits, {}, _below(parts)))
                continue
            listed = disk.list_folder(parts)
            if listed is None:
                gone.append(parts)
                results.append(index.reconcile(disk, self.limits, {}, _below(parts)))
                continue
            files, subfolders = listed
            self.folders[parts] = (state, now)
            results.append(index.reconcile(disk, self.limits, files, _directly_in(parts)))
            for sub in subfolders:
                if sub not in self.folders:  # a new folder: scanned whole
                    found: Dict[Parts, FolderState] = {}
                    scanned = disk.scan(self.limits.max_indexed_files, found, sub)
                    results.append(index.reconcile(disk, self.limits, scanned, _below(sub)))
                    taken_now = time.time_ns()
                    for folder, folder_state in found.items():
                        self.folders[folder] = (folder_state, taken_now)
            children = [f for f in self.folders if len(f) == len(parts) + 1 and f[:-1] == parts]
            for old in [f for f in children if f not in subfolders]:
                gone.append(old)
                results.append(index.reconcile(disk, self.limits, {}, _below(old)))
        for parts in gone:
            for folder in [folder for folder in self.folders if folder[: len(parts)] == parts]:
                del self.folders[folder]
        return results

    def announce(self, relative: str) -> None:
        """This process wrote `relative`: tell every handler of the workspace."""
        if paths.is_indexed(tuple(relative.split("/"))):
            changes.notify(self.notices.key, [relative])


class JournalFreshness:
    """What one handler knows of a store that is not a directory: the generation its journal handed out last.

    Before each search the journal names what changed since (each path standing for itself and everything
    below it): each is read again, and what was below it listed again. A journal that cannot tell (the first
    search, more than `CHANGES_MAX` changes, a trimmed journal) or that fails means the full scan. The
    generation moves only once the index holds what it names, so a search that failed half-way is made good
    by the next."""

    def __init__(self, store: Store, limits: OpenClawLimits) -> None:
        self.journal = changes.StoreJournal(store)
        self.limits = limits
        self.generation: Optional[int] = None  # None: no search yet, the first one scans
        self.lock = threading.Lock()
        self.full_scans = 0

    method = "journal"
    """How changes are found: every change to the store is in its journal."""

    def update(self, index: Index, disk: Files) -> Refreshed:
        """Bring `index` up to date (see the class docstring)."""
        with self.lock:
            generation, found = self.journal.changes_since(self.generation or 0)
            changed = None if self.generation is None else found
            if changed is None or "" in changed:
                result = self.full(index, disk)
            else:
                total = [0, 0, 0, 0]
                for path in sorted(changed):
                    parts = tuple(path.split("/"))
                    scanned = disk.scan(self.limits.max_indexed_files, None, parts)
                    result = index.reconcile(disk, self.limits, scanned, _below(parts), below=path)
                    total = [a + b for a, b in zip(total, result)]
                total = [a + b for a, b in zip(total, index.refresh_paths(disk, self.limits, changed))]
                result = Refreshed(*total)
            self.generation = generation
            return result

    def full(self, index: Index, disk: Files) -> Refreshed:
        """The full scan, now."""
        result = index.refresh(disk, self.limits)
        self.full_scans += 1
        return result

    def announce(self, relative: str) -> None:
        """Nothing to do: the write is in the store's journal."""
