"""Access tracking and pruning: the documentation's "memory expiration".

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
* No append-only journal: a journal needs compaction, a lock for appends from several processes,
  and a reader that replays it; per-path records need none of that and rename/delete of one file
  touches one record.
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

Pruning takes the same exclusive lock as the handler's writes (``store.Root.locked``: ``flock`` on
``<root>/.refmem/lock``), walks the tree with ``tree.descend`` (from directory descriptors, at any
depth, without following any link), and re-checks each file (same inode, same mtime) just before
unlinking it.

Every disk access goes through the kernel: the record folder is opened by the root's one walk, and
records are read, dated, made and removed with the kernel's primitives in that folder. A record is
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
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

from . import kernel, problems, tree
from .kernel import Dir
from .messages import DURATION_FORMAT, DURATION_NOT_POSITIVE
from .paths import RESERVED_PREFIX
from .problems import FsProblem, OsFailure
from .store import BOOKKEEPING_DIR, Root

RootLike = Union[Root, str, "os.PathLike[str]"]
FileId = Tuple[int, int]  # (st_dev, st_ino) of a file
VirtualLike = Union[str, Sequence[str]]

VIRTUAL_ROOT = "/memories"
DEFAULT_RESOLUTION = 60.0
SEEN_CAPACITY = 4096  # record times one tracker remembers before it starts over
STALE_TEMP_AGE = 3600.0
ACCESS_DIR = "access"  # .refmem/access: the records
RECORD_LIMIT = 8192  # a record holds one virtual path: anything larger is not one
_UTIME_BY_FD = os.utime in os.supports_fd

_RECORD_NAME = re.compile(r"[0-9a-f]{64}")
# What a recording method turns into False: the disk said no (Root raises FsProblem), or a bad path.
_FAILURES = (OSError, ValueError, FsProblem)


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
    return hashlib.sha256(virtual_path(path).encode("utf-8", "surrogatepass")).hexdigest()


# --- durations --------------------------------------------------------------------------------

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_duration(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``90m``, ``3600s``, ``2w`` or a sum such as ``1w2d`` or ``1.5h``.

    Units: s, m (minutes), h, d, w; lower case only (no months or years: their length varies).
    A bare number, an unknown unit, a negative or a zero duration raises ValueError.
    """
    cleaned = text.strip() if isinstance(text, str) else ""
    if not cleaned:
        raise ValueError("empty duration: use a number and a unit, e.g. 30d, 12h, 90m, 3600s, 2w")
    total = 0.0
    pos = 0
    for match in _DURATION.finditer(cleaned):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(cleaned):
        raise ValueError(DURATION_FORMAT.format(text=text))
    if total <= 0:
        raise ValueError(DURATION_NOT_POSITIVE.format(text=text))
    return total


# --- records ----------------------------------------------------------------------------------


class Record(NamedTuple):
    name: str
    path: str
    mtime: float


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

    ``root`` is the handler's open ``Root`` (its owner closes it), or the host directory that
    stands for ``/memories``, opened (never created) on first use and closed with the tracker.
    Every recording method swallows ``OSError`` and ``FsProblem`` and returns False: bookkeeping
    must never make a command fail (a read-only root simply records nothing).
    """

    def __init__(self, root: RootLike, resolution: float = DEFAULT_RESOLUTION) -> None:
        if not isinstance(root, (Root, str, os.PathLike)):
            raise TypeError("AccessTracker takes an Root or a directory path")
        self.root = root
        self.resolution = float(resolution)
        self._own: Optional[Root] = None  # the Root opened from a path given; closed by close()
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

    def _disk(self) -> Root:
        """The Root that every record operation goes through."""
        if isinstance(self.root, Root):
            return self.root
        if self._own is None:
            self._own = Root(self.root, create=False)
        return self._own

    def _folder(self, create: bool = True) -> Dir:
        """The record folder, opened once and kept: recording a view is then one call, not three."""
        with self._lock:
            if self._closed:
                raise OsFailure("operating system error")
            if self._dir is None:
                self._dir = open_records(self._disk(), create)
            return self._dir

    def _existing_folder(self) -> Optional[Dir]:
        """The record folder, or None when no record was ever made (reading creates nothing)."""
        try:
            return self._folder(create=False)
        except problems.Missing:
            return None

    def close(self) -> None:
        """Release the record folder (and a Root this tracker opened). A closed tracker records nothing."""
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
        """Drop the records of a deleted path; for a folder (or when unknown), of everything below."""
        self._seen.clear()
        with self._lock:
            try:
                folder = self._existing_folder()
                if folder is None:
                    return True
                vpath = virtual_path(path)
                remove_record(folder, record_name(vpath))
                if is_dir is not False:
                    for record in self.records(prefix=vpath + "/"):
                        remove_record(folder, record.name)
                return True
            except _FAILURES:
                return False

    def move(
        self, old: VirtualLike, new: VirtualLike, is_dir: Optional[bool] = None, now: Optional[float] = None
    ) -> bool:
        """Carry records along a rename. The renamed path itself counts as changed at `now`;
        things below a renamed folder keep their times. The new record is written before the old one
        is removed, so a crash in between leaves a stale record, never a lost one."""
        self._seen.clear()
        with self._lock:
            try:
                old_path, new_path = virtual_path(old), virtual_path(new)
                folder = self._folder()
                when = time.time() if now is None else float(now)
                self._touch(record_name(new_path), new_path, when, force=True)
                remove_record(folder, record_name(old_path))
                if is_dir is not False:
                    for record in self.records(prefix=old_path + "/"):
                        moved = new_path + record.path[len(old_path) :]
                        self._touch(record_name(moved), moved, record.mtime, force=True)
                        remove_record(folder, record.name)
                return True
            except _FAILURES:
                return False

    # -- reading --

    def last_access(self, path: VirtualLike) -> Optional[float]:
        """The recorded last access of `path`, or None when it has no valid record."""
        with self._lock:
            try:
                folder = self._existing_folder()
                if folder is None:
                    return None
                vpath = virtual_path(path)
                record = self._read(folder, record_name(vpath))
                return record.mtime if record is not None and record.path == vpath else None
            except _FAILURES:
                return None

    def records(self, prefix: str = "") -> List[Record]:
        """Every valid record (content hashes to its name), optionally only paths under `prefix`.

        Raises FsProblem when the record folder cannot be read.
        """
        with self._lock:
            folder = self._existing_folder()
            if folder is None:
                return []
            found = []
            for name in names(folder):
                if not _RECORD_NAME.fullmatch(name):
                    continue
                record = self._read(folder, name)
                if record is not None and record.path.startswith(prefix):
                    found.append(record)
            return found

    def _read(self, folder: Dir, name: str) -> Optional[Record]:
        read = read_record(folder, name)
        return None if read is None else _parse_record(name, *read)


# --- records on disk: the kernel's primitives in the record folder ------------------------------


def open_records(root: Root, create: bool) -> Dir:
    """`.refmem/access`, opened by the root's one walk (made with `create`; else Missing when absent).
    Anything but folders squatting those names is OsFailure("bookkeeping"): it names no path."""
    try:
        return root.walk((BOOKKEEPING_DIR, ACCESS_DIR), create=create)
    except (problems.ParentNotDir, problems.Escaped):
        raise OsFailure("bookkeeping") from None


def set_record_time(folder: Dir, name: str, stamp_ns: int) -> bool:
    """Date the record `name` through a descriptor of it, only if it is a single-link regular file
    (a FIFO is never waited on, a link never followed, a hard link never written through).
    False when it is not one: the caller replaces the name instead."""
    if not _UTIME_BY_FD:  # pragma: no cover - Windows: dated by name, checked just before
        path, dir_fd = folder.ref(name)
        os.utime(path, ns=(stamp_ns, stamp_ns), dir_fd=dir_fd)
        return True
    try:
        fd = folder.open_file(name, kernel.READ_FLAGS)
    except (problems.IsLink, problems.Missing):
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return False
        os.utime(fd, ns=(stamp_ns, stamp_ns))
    finally:
        os.close(fd)
    return True


def put_record(folder: Dir, name: str, data: bytes, stamp_ns: int) -> None:
    """Create (or replace) the record `name` holding `data`, dated `stamp_ns`, all or nothing: a temp
    file is written, dated and renamed into place. Not fsynced (see the module docstring)."""
    temp = kernel.write_temp(folder, data, kernel.FILE_MODE, sync=False)
    try:
        if not set_record_time(folder, temp, stamp_ns):
            raise OsFailure("changed")
    except BaseException:
        kernel.unlink_quietly(folder, temp)
        raise
    kernel.replace(folder, temp, name)


def read_record(folder: Dir, name: str) -> Optional[Tuple[bytes, float]]:
    """(bytes, mtime) of the record `name`; None unless it is a single-link regular file of at most
    RECORD_LIMIT bytes. Bounded: a forged huge file is never read whole."""
    try:
        fd, info = kernel.open_regular(folder, name, refuse_hard_links=True)
    except FsProblem:
        return None
    try:
        if info.st_size > RECORD_LIMIT:
            return None
        return os.read(fd, RECORD_LIMIT), info.st_mtime
    except OSError:
        return None
    finally:
        os.close(fd)


def remove_record(folder: Dir, name: str) -> None:
    """Remove the record `name`, or whatever squats it (a folder goes whole, a link is not followed)."""
    info = folder.lstat(name)
    if info is not None:
        with contextlib.suppress(problems.Missing):
            tree.remove(folder, name, info)


def names(folder: Dir) -> List[str]:
    """The names in an open folder, unsorted."""
    try:
        with folder.scandir() as entries:
            return [entry.name for entry in entries]
    except OSError as error:
        raise problems.os_failure(error) from None


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


# --- module-level conveniences for the handler --------------------------------------------------


def record_access(root: RootLike, path: VirtualLike, now: Optional[float] = None) -> bool:
    """One-shot `AccessTracker(root).touch(path)`; a handler should keep a tracker instead."""
    with AccessTracker(root) as tracker:
        return tracker.touch(path, now)


def forget_access(root: RootLike, path: VirtualLike, is_dir: Optional[bool] = None) -> bool:
    with AccessTracker(root) as tracker:
        return tracker.forget(path, is_dir)


def move_access(
    root: RootLike, old: VirtualLike, new: VirtualLike, is_dir: Optional[bool] = None, now: Optional[float] = None
) -> bool:
    with AccessTracker(root) as tracker:
        return tracker.move(old, new, is_dir, now)


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
    disk = root if isinstance(root, Root) else Root(root, create=False)
    try:
        guard = disk.locked() if lock and not dry_run else contextlib.nullcontext()
        with guard, AccessTracker(disk) as tracker:
            return _Pruner(disk, cutoff, current, dry_run).run(tracker)
    finally:
        if disk is not root:
            disk.close()


class _Pruner:
    """One prune's judgement: which files are old, which folders it emptied, what it counted."""

    def __init__(self, root: Root, cutoff: float, now: float, dry_run: bool) -> None:
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
            if self.dry_run or _removed(found.dir.rmdir, name):
                self.removed_dirs.append(vpath)
                return True
        return False

    def _file(self, folder: Dir, name: str, info: os.stat_result, vpath: str) -> bool:
        record = self.records.get(vpath)
        last = info.st_mtime if record is None else max(record.mtime, info.st_mtime)
        # Unlinked only if it is still the file judged here (same inode and mtime).
        if last < self.cutoff and (self.dry_run or unlink_if_unchanged(folder, name, info)):
            self.removed_files.append(vpath)
            return True
        self.kept += 1
        self.live_files.add(vpath)
        return False

    def _drop_records(self, tracker: AccessTracker) -> int:
        """Drop the records of paths that are no longer files and count the stale ones (those the
        prune did not remove itself); the record folder's old temp files go too."""
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
        self.temp_files += clear_stale_temps(folder, names(folder), self.now, STALE_TEMP_AGE, self.dry_run)
        return stale
