"""Where the search index learns what changed, so that a search does not rescan the workspace.

A *source of changes* answers `changes_since(token) -> (token, paths)`: the memory files (paths below
the workspace, `memory/2026-11-23.md`) changed since the token it handed out last, or `None` for
"unknown or too many: scan everything". The index asks each source before every search and reads
again only what they name (D-OPENCLAW-INDEX-FRESH):

* `Notices`: writes made by this process's OpenClaw tools (`append_daily`, `refmem log`) are announced
  here as they happen, to every handler of the same workspace in the process: the next search sees
  them, whatever the interval.
* `Interval`: the full scan (every memory file's device, inode, size and modification time, one
  directory read per folder) is due every `scan_interval_ms` (2 s by default; OpenClaw's watcher
  waits 1.5 s after a change): an edit made by another program, in place, is seen by the first search
  after that. A handler's first search always scans.
* `Folders` (the cheap check of every search): the modification time of each folder holding memory
  files. A file made, removed or replaced by a rename (every write refmem makes, the memory tool's
  included, and most editors' saves) changes its folder's time, so only that folder is listed again.
  A folder changed within `RACY_NS` of being looked at is listed again at the next search as well
  (file systems keep times at a clock tick's precision: two changes in one tick look like one).
* The store's change journal, once `refmem.tracked.TrackedDirectory` offers `changes_since(generation)`, is one
  more source with no other change: `journal(root)` wraps it (the seam, below).
* `StoreJournal`: the journal of a store that is not a directory (a database, D-OPENCLAW-STORES), where
  every change goes through refmem: there it is the only source (`fresh.JournalFreshness`).

Standard library only; the sources hold no descriptors.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable, Dict, List, Optional, Set, Tuple, Union

from .._store_extras import ChangeJournal
from ..problems import FsProblem
from ..store_protocol import Store
from ..tracked import TrackedDirectory
from .storedisk import guarded

Paths = Optional[Set[str]]
"""Changed paths below the workspace, or None: scan everything."""

NOTICE_CAP = 4096
"""Notices kept per workspace; a handler further behind than this scans."""
RACY_NS = 100_000_000
"""A folder changed this close to when it was looked at is looked at again (file times are coarse)."""


class Source:
    """A source of changes (see the module docstring)."""

    def changes_since(self, token: int) -> Tuple[int, Paths]:
        raise NotImplementedError


# --- in-process notices ---------------------------------------------------------------------------


class _Log:
    """The notices of one workspace: (generation, path), the latest `NOTICE_CAP`."""

    def __init__(self) -> None:
        self.generation = 0
        self.entries: List[Tuple[int, str]] = []


_LOGS: Dict[Tuple[int, int], _Log] = {}
_LOGS_LOCK = threading.Lock()


def workspace_key(root: TrackedDirectory) -> Tuple[int, int]:
    """The workspace's identity in this process: its folder's device and inode."""
    info = os.stat(root.real)
    return info.st_dev, info.st_ino


def notify(key: Tuple[int, int], changed: List[str]) -> None:
    """Announce that this process changed `changed` (paths below the workspace `key`)."""
    with _LOGS_LOCK:
        log = _LOGS.setdefault(key, _Log())
        for path in changed:
            log.generation += 1
            log.entries.append((log.generation, path))
        del log.entries[:-NOTICE_CAP]


class Notices(Source):
    """The in-process notices of one workspace."""

    def __init__(self, key: Tuple[int, int]) -> None:
        self.key = key

    def current(self) -> int:
        with _LOGS_LOCK:
            log = _LOGS.get(self.key)
            return 0 if log is None else log.generation

    def changes_since(self, token: int) -> Tuple[int, Paths]:
        with _LOGS_LOCK:
            log = _LOGS.get(self.key)
            if log is None or log.generation == token:
                return token, set()
            if log.entries and log.entries[0][0] > token + 1:
                return log.generation, None  # fell behind the kept notices
            return log.generation, {path for generation, path in log.entries if generation > token}


# --- the full scan at an interval -------------------------------------------------------------------


class Interval(Source):
    """Says "scan everything" once every `interval_ns` (the token is when the last scan was made)."""

    def __init__(self, interval_ns: int, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.interval_ns = interval_ns
        self.clock = clock

    def changes_since(self, token: int) -> Tuple[int, Paths]:
        now = self.clock()
        if token == 0 or now - token >= self.interval_ns:
            return now, None
        return token, set()


# --- the store's change journal (the seam) ----------------------------------------------------------


class Journal(Source):
    """The store's change journal: every write made through refmem, by any process.

    A journal that cannot be kept (bookkeeping unwritable, `.refmem` not a folder of ours) says
    "rescan" once and nothing after: the folder check and the interval still see every change, so
    search goes on without it, the way it goes on with its index in memory."""

    def __init__(self, changes_since: Callable[[int], Tuple[int, object]]) -> None:
        self._changes_since: Optional[Callable[[int], Tuple[int, object]]] = changes_since

    def changes_since(self, token: int) -> Tuple[int, Paths]:
        if self._changes_since is None:
            return token, set()
        try:
            generation, changed = self._changes_since(token)
        except (FsProblem, OSError):
            self._changes_since = None
            return token, None
        if changed is None:
            return generation, None
        return generation, {relative(path) for path in changed}  # type: ignore[attr-defined]


def relative(path: Union[str, Tuple[str, ...], object]) -> str:
    """A journal's path as the index spells it: below the workspace, `/`-separated ("" for the workspace)."""
    parts = getattr(path, "parts", path)
    if isinstance(parts, tuple):
        return "/".join(str(part) for part in parts)
    text = str(path)
    if text == "/memories":
        return ""
    return text[len("/memories/") :] if text.startswith("/memories/") else text.lstrip("/")


class StoreJournal(Source):
    """The change journal of a store every change goes through (a database): being the only source there,
    one that fails says "rescan" (from the same token, a superset next time) and never goes quiet."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def changes_since(self, token: int) -> Tuple[int, Paths]:
        if not isinstance(self.store, ChangeJournal):  # a store without one (store_protocol.ChangeJournal): rescan
            return token, None
        try:
            with guarded():
                generation, changed = self.store.changes_since(token)
        except FsProblem:
            return token, None
        return generation, None if changed is None else {relative(path) for path in changed}


def journal(root: TrackedDirectory) -> Optional[Source]:
    """The store's change journal as a source, when the store keeps one.

    THE SEAM: when `refmem.tracked.TrackedDirectory` gains `changes_since(generation) -> (generation, paths or
    None)`, this returns it as a source and every handler uses it, with no other change."""
    changes_since = getattr(root, "changes_since", None)
    return Journal(changes_since) if callable(changes_since) else None
