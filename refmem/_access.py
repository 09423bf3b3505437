"""Access records: when each memory was last used, for the documentation's "memory expiration" (`prune.py`).

A memory that nobody has viewed or changed for a long time can be removed. Filesystem access times
cannot tell us when that was (``noatime`` and ``relatime`` mounts are the norm, and backups touch
them), so the handler keeps its own record.

Storage: one small file per tracked path
----------------------------------------
``<root>/.refmem/access/<sha256 of the virtual path>``. The file's *content* is the virtual path
(``/memories/a/b.md``) and never changes; the file's *modification time* is the last access, set
explicitly with ``utime``. Why this layout:

* Writes record nothing: a created or edited file's own mtime is the time of the change. A view
  records an access only when the file was last changed more than ``resolution`` seconds ago.
* Recording an access is one ``utimensat`` call on a file that already exists: atomic, no data
  written, cheap enough for every ``view``. Repeated accesses within ``resolution`` seconds (60 by
  default; expiry is measured in days) are skipped after a single ``stat``, or with no system call
  at all when this tracker recorded the same file (device and inode) at that path less than
  ``resolution`` seconds ago. Either way a recorded time is never more than ``resolution`` seconds
  behind the last access of the file now at the path.
* A record is created once, by writing a temp file and renaming it into place, so a crash leaves
  either no record or a whole one, never a torn one. The name is the hash of the content, so a
  record whose content does not hash to its name (a torn write after a power loss on a filesystem
  that reorders data and metadata) is recognised and ignored, never misattributed.
* A rename records nothing of its own here: the use of the new path and the times of the records it
  carries are lines appended to the moves log (`_access_log.py`), since a record file made per rename cost as
  much as the rename. A path's last recorded use is the later of its record and its latest line there.
* Records are not fsynced: losing the last few seconds of access times in a power failure makes a
  file look older by those seconds, which expiry measured in days does not notice. A process crash
  (SIGKILL) loses nothing: the kernel has the rename and the timestamp.

A file without a record (created before tracking was enabled, or by another program) falls back to
its own ``mtime``. A path's last use is ``max(record time, file mtime)``: a change made without the
handler still counts as a change.

Records are keyed by path, so renaming a folder moves the records of everything below it; that scans
the record folder once (O(number of records)), which is fine for an operation that is rare and
already walks the folder. A record left behind by a crash between a rename and its record move is
stale; ``prune`` removes stale records (paths that are no longer regular files).

Every disk access goes through the kernel: the record folder is opened by the root's one walk, and
records are read, dated, made and removed with the bookkeeping primitives in that folder. A record is
dated only through a descriptor of a single-link regular file (never through a link or a hard link
planted by another program: such a name is replaced, never written through).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import threading
import time
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _access_log as moves
from . import _kernel as kernel
from . import problems
from ._bookkeeping import ACCESS_DIR, Walker, open_folder
from ._kernel import Dir
from ._records import names, put_record, read_record, remove_record, set_record_time
from .problems import FsProblem, OsFailure

RootLike = Union[Walker, str, "os.PathLike[str]"]
FileId = Tuple[int, int]  # (st_dev, st_ino) of a file
VirtualLike = Union[str, Sequence[str]]

VIRTUAL_ROOT = "/memories"
DEFAULT_RESOLUTION = 60.0
SEEN_CAPACITY = 4096  # record times one tracker remembers before it starts over

RECORD_NAME = re.compile(r"[0-9a-f]{64}")
# What a recording method turns into False: the disk said no (the walk raises FsProblem), or a bad path.
_FAILURES = (OSError, ValueError, FsProblem)


def clock() -> float:
    """The records' clock (`time.time`; a test's frozen one where a test replaced this module's `time`)."""
    return time.time()


# --- virtual paths ----------------------------------------------------------------------------


def virtual_path(path: VirtualLike) -> str:
    """The canonical virtual path string for ``"/memories/a/b"``, ``("a", "b")`` or ``[]`` (root).

    Only the spelling is normalised (one trailing ``/`` dropped); validation is the handler's job.
    """
    if isinstance(path, str):
        if path.endswith("/") and path != "/":
            path = path[:-1]
        if path != VIRTUAL_ROOT and not path.startswith(VIRTUAL_ROOT + "/"):
            raise ValueError("a virtual path starts with /memories")
        return path
    parts = tuple(path)
    return VIRTUAL_ROOT + "".join("/" + part for part in parts)


def record_name(path: VirtualLike) -> str:
    """The record file name of a virtual path: the hex SHA-256 of its UTF-8 canonical spelling."""
    return _hashed(virtual_path(path))


def _hashed(canonical: str) -> str:
    """`record_name` of a path already canonical (`virtual_path`)."""
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


# --- records ----------------------------------------------------------------------------------


class Record(NamedTuple):
    name: str
    path: str
    mtime: float


def _ns(when: float) -> int:
    return int(when * 1e9)


def _content(path: str) -> bytes:
    """What a record holds: its virtual path and a newline (a torn write lacks the newline)."""
    return (path + "\n").encode("utf-8", "surrogatepass")


def _parse_record(name: str, raw: bytes, mtime: float) -> Optional[Record]:
    """The record in `raw`, the bytes of the file `name`; None when it is torn or foreign."""
    if not raw.endswith(b"\n"):
        return None
    try:
        path = raw[:-1].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    if hashlib.sha256(raw[:-1]).hexdigest() != name:
        return None
    return Record(name, path, mtime)


class AccessTracker:
    """Last-access records for one memory root. Hold one per handler; thread-safe; fork: reopen.

    ``root`` is what walks the memory root (the store's ``TrackedDirectory`` or its ``kernel.RootDir``; its owner
    closes it), or the host directory that stands for ``/memories``, opened (never created) on first
    use and closed with the tracker.
    Every recording method swallows ``OSError`` and ``FsProblem`` and returns False: bookkeeping
    must never make a command fail (a read-only root simply records nothing).
    """

    def __init__(self, root: RootLike, resolution: float = DEFAULT_RESOLUTION) -> None:
        if not isinstance(root, (str, os.PathLike)) and not callable(getattr(root, "walk", None)):
            raise TypeError("AccessTracker takes a store, its walk or a directory path")
        self.root = root
        self.resolution = float(resolution)
        self._own: Optional[kernel.RootDir] = None  # the root opened from a path given; closed by close()
        self._dir: Optional[Dir] = None
        # One lock for the record folder handle and every record operation: the folder is opened
        # once, by one thread, and never used after close() by another.
        self._lock = threading.RLock()
        self._closed = False
        # path -> (record time, (device, inode) of the file then at the path), so that repeated
        # views of one file within `resolution` cost a dict look-up rather than a stat. A hit needs
        # the same file: another file moved to the path meanwhile (by another handler or process,
        # whose renames this tracker never sees) is looked up afresh.
        self._seen: Dict[str, Tuple[float, FileId]] = {}

    # -- the record folder --

    def _disk(self) -> Walker:
        """What every record operation walks through."""
        if not isinstance(self.root, (str, os.PathLike)):
            return self.root
        if self._own is None:
            self._own = kernel.RootDir(self.root, create=False)
        return self._own

    def _folder(self, create: bool = True) -> Dir:
        """The record folder, opened once and kept: recording a view is then one call, not three."""
        with self._lock:
            if self._closed:
                raise OsFailure("operating system error")
            if self._dir is None:
                self._dir = open_folder(self._disk(), (ACCESS_DIR,), create)
            return self._dir

    def _existing_folder(self) -> Optional[Dir]:
        """The record folder, or None when no record was ever made (reading creates nothing)."""
        try:
            return self._folder(create=False)
        except problems.Missing:
            return None

    def close(self) -> None:
        """Release the record folder (and a root this tracker opened). A closed tracker records nothing."""
        with self._lock:
            self._closed = True
            folder, self._dir = self._dir, None
            own, self._own = self._own, None
            if folder is not None:
                with contextlib.suppress(OSError):
                    folder.close()
            if own is not None:
                own.close()

    def __enter__(self) -> AccessTracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()

    # -- recording --

    def touch(
        self,
        path: VirtualLike,
        now: Optional[float] = None,
        changed_at: Optional[float] = None,
        file_id: Optional[FileId] = None,
    ) -> bool:
        """Record that `path` was used at `now` (default: the clock).

        `changed_at` is the file's own mtime and `file_id` its (device, inode), when the caller has
        them (the handler, after a view). A use within `resolution` of the last change needs no
        record, since a path's last use is never earlier than its mtime; and a use of the same file
        that this tracker recorded less than `resolution` ago needs no look at the record at all.
        """
        if now is None and isinstance(path, str):
            current = time.time()
            if changed_at is not None and 0 <= current - changed_at < self.resolution:
                return True
            seen = self._seen.get(path)
            if seen is not None and file_id is not None and seen[1] == file_id:
                if 0 <= current - seen[0] < self.resolution:
                    return True
        try:
            with self._lock:
                recorded = self._touch(record_name(path), virtual_path(path), now, force=now is not None)
        except _FAILURES:
            return False
        if file_id is not None and isinstance(path, str):
            self._remember(path, recorded, file_id)
        return True

    def _touch(self, name: str, path: str, now: Optional[float], force: bool) -> float:
        """Bring the record of `path` up to `now`; returns the time the record holds afterwards."""
        folder = self._folder()
        when = time.time() if now is None else float(now)
        stamp = int(when * 1e9)
        info = folder.lstat(name)
        if info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
            if not force and 0 <= when - info.st_mtime < self.resolution:
                return info.st_mtime  # recorded recently enough: one stat, no write
            if set_record_time(folder, name, stamp):
                return when
        if info is not None:  # something that is not our record squats the name: clear it
            remove_record(folder, name)
        put_record(folder, name, _content(path), stamp)
        return when

    def _remember(self, path: str, recorded: float, file_id: FileId) -> None:
        if len(self._seen) >= SEEN_CAPACITY:
            self._seen.clear()
        self._seen[path] = (recorded, file_id)

    def forget(self, path: VirtualLike, is_dir: Optional[bool] = None) -> bool:
        """Drop the records of a deleted path; for a folder (or when unknown), of everything below.
        Call under the root's write lock (the moves log is appended to)."""
        self._seen.clear()
        with self._lock:
            try:
                folder = self._existing_folder()
                if folder is None:
                    return True
                vpath = virtual_path(path)
                gone = [vpath]
                if is_dir is not False:
                    gone += [record.path for record in self.records(prefix=vpath + "/")]
                # Only a log can hold a use of the path as well: where there is one, say it is gone.
                moves.append(folder, [(None, gone_path) for gone_path in gone], create=False)
                for gone_path in gone:
                    remove_record(folder, _hashed(gone_path))
                return True
            except _FAILURES:
                return False

    def move(
        self, old: VirtualLike, new: VirtualLike, is_dir: Optional[bool] = None, now: Optional[float] = None
    ) -> bool:
        """Carry records along a rename (call under the root's write lock). The renamed path itself
        counts as used at `now`; things below a renamed folder keep their times. All of it is one
        append to the moves log (`_access_log.py`), written before the old records are removed, so a crash in
        between leaves a stale record, never a lost one."""
        self._seen.clear()
        with self._lock:
            try:
                old_path, new_path = virtual_path(old), virtual_path(new)
                folder = self._folder()
                when = time.time() if now is None else float(now)
                entries: List[moves.MoveRecord] = [(_ns(when), new_path), (None, old_path)]
                old_name = _hashed(old_path)
                carried = [old_name] if folder.lstat(old_name) is not None else []
                if is_dir is not False:
                    for record in self.records(prefix=old_path + "/"):
                        moved = new_path + record.path[len(old_path) :]
                        entries += [(_ns(record.mtime), moved), (None, record.path)]
                        carried.append(record.name)
                moves.append(folder, entries)
                for carried_name in carried:
                    remove_record(folder, carried_name)
                return True
            except _FAILURES:
                return False

    # -- reading --

    def last_access(self, path: VirtualLike) -> Optional[float]:
        """The recorded last access of `path` (its record or the moves log, the later), or None."""
        with self._lock:
            try:
                folder = self._existing_folder()
                if folder is None:
                    return None
                vpath = virtual_path(path)
                record = self._read(folder, record_name(vpath))
                times = [record.mtime] if record is not None and record.path == vpath else []
                logged = moves.read(folder).get(vpath)
                if logged is not None:
                    times.append(logged / 1e9)
                return max(times) if times else None
            except _FAILURES:
                return None

    def records(self, prefix: str = "") -> List[Record]:
        """Every valid record (content hashes to its name) and every use in the moves log, one per path
        (the later), optionally only paths under `prefix`.

        Raises FsProblem when the record folder cannot be read.
        """
        with self._lock:
            folder = self._existing_folder()
            if folder is None:
                return []
            found: Dict[str, Record] = {}
            for name in names(folder):
                if not RECORD_NAME.fullmatch(name):
                    continue
                record = self._read(folder, name)
                if record is not None and record.path.startswith(prefix):
                    found[record.path] = record
            for path, logged in moves.read(folder).items():
                if path.startswith(prefix) and (path not in found or found[path].mtime < logged / 1e9):
                    found[path] = Record(record_name(path), path, logged / 1e9)
            return list(found.values())

    def compact(self, keep: Callable[[str], bool]) -> None:
        """Rewrite the moves log with the uses of the paths `keep` accepts (prune: the files that remain)."""
        with self._lock:
            folder = self._existing_folder()
            if folder is not None and moves.size(folder):
                moves.compact(folder, keep)

    def _read(self, folder: Dir, name: str) -> Optional[Record]:
        read = read_record(folder, name)
        return None if read is None else _parse_record(name, *read)
