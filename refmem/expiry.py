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
  at all when this tracker saw the record less than ``resolution`` seconds ago. Either way a recorded
  time is never more than ``resolution`` seconds behind the last access.
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

Pruning takes the same exclusive lock as the handler's writes (``flock`` on ``<root>/.refmem/lock``),
walks the tree from directory file descriptors without following any link, and re-checks each file
(same inode, same mtime) just before unlinking it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
import time
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

RootLike = Union[str, "os.PathLike[str]", int]
VirtualLike = Union[str, Sequence[str]]

BOOKKEEPING = ".refmem"
ACCESS = "access"
RESERVED_PREFIX = ".refmem"
TEMP_PREFIX = ".refmem-tmp-"
VIRTUAL_ROOT = "/memories"
DEFAULT_RESOLUTION = 60.0
SEEN_CAPACITY = 4096  # record times one tracker remembers before it starts over
STALE_TEMP_AGE = 3600.0
MAX_WALK_DEPTH = 64

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK
_RECORD_NAME = re.compile(r"[0-9a-f]{64}")


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
        raise ValueError(f"invalid duration {text!r}: use a number and a unit (s, m, h, d, w), e.g. 30d or 1w2d")
    if total <= 0:
        raise ValueError(f"invalid duration {text!r}: it must be longer than zero")
    return total


# --- opening the record folder ----------------------------------------------------------------


def _open_root(root: RootLike) -> Tuple[int, bool]:
    """(fd, owned): an fd for the root; `owned` when we opened it and must close it."""
    if isinstance(root, int):
        return root, False
    return os.open(os.fspath(root), os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC), True


def _open_dir_at(parent: int, name: str, create: bool) -> int:
    """Open the folder `name` inside `parent` without following a link; make it when asked."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:
        pass
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


class Record(NamedTuple):
    name: str
    path: str
    mtime: float


class AccessTracker:
    """Last-access records for one memory root. Hold one per handler; thread-safe; fork: reopen.

    ``root`` is the host directory that stands for ``/memories`` (a path, or an open directory fd
    that the caller keeps open). Every recording method swallows ``OSError`` and returns False:
    bookkeeping must never make a command fail (a read-only root simply records nothing).
    """

    def __init__(self, root: RootLike, resolution: float = DEFAULT_RESOLUTION) -> None:
        self.root = root
        self.resolution = float(resolution)
        self._fd: Optional[int] = None
        self._close: Callable[[int], None] = os.close
        # Record times this tracker has seen, so that repeated accesses within `resolution` cost a
        # dict look-up rather than a stat. A remembered time is never later than the record's own,
        # so a skip here is one the record itself would have allowed. Cleared when records move.
        self._seen: Dict[str, float] = {}

    # -- the record folder --

    def _access_fd(self, create: bool) -> Optional[int]:
        if self._fd is not None:
            return self._fd
        root_fd, owned = _open_root(self.root)
        try:
            try:
                book = _open_dir_at(root_fd, BOOKKEEPING, create)
            except FileNotFoundError:
                return None
            try:
                self._fd = _open_dir_at(book, ACCESS, create)
                # Closed later with the `close` of the `os` that opened it: under a patched `os`
                # (pyfakefs) a late real close would hit an unrelated descriptor of the same number.
                self._close = os.close
            except FileNotFoundError:
                return None
            finally:
                os.close(book)
        finally:
            if owned:
                os.close(root_fd)
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                self._close(fd)

    def __enter__(self) -> AccessTracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()

    # -- recording --

    def touch(self, path: VirtualLike, now: Optional[float] = None, changed_at: Optional[float] = None) -> bool:
        """Record that `path` was used at `now` (default: the clock).

        `changed_at` is the file's own mtime, when the caller has it: a use within `resolution` of
        the last change needs no record, since a path's last use is never earlier than its mtime.
        """
        if now is None and isinstance(path, str):
            current = time.time()
            if changed_at is not None and 0 <= current - changed_at < self.resolution:
                return True
            seen = self._seen.get(path)
            if seen is not None and 0 <= current - seen < self.resolution:
                return True
        try:
            return self._touch(record_name(path), virtual_path(path), now, force=now is not None)
        except (OSError, ValueError):
            return False

    def _touch(self, name: str, path: str, now: Optional[float], force: bool) -> bool:
        folder = self._access_fd(create=True)
        if folder is None:
            return False
        when = time.time() if now is None else float(now)
        stamp = int(when * 1e9)
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISREG(info.st_mode):
            if not force and 0 <= when - info.st_mtime < self.resolution:
                self._remember(path, info.st_mtime)
                return True  # recorded recently enough: one stat, no write
            os.utime(name, ns=(stamp, stamp), dir_fd=folder, follow_symlinks=False)
            self._remember(path, when)
            return True
        if info is not None:  # something that is not a record squats the name: clear it
            _remove_any(folder, name)
        self._create(folder, name, path, stamp)
        self._remember(path, when)
        return True

    def _remember(self, path: str, when: float) -> None:
        if len(self._seen) >= SEEN_CAPACITY:
            self._seen.clear()
        self._seen[path] = when

    def _create(self, folder: int, name: str, path: str, stamp: int) -> None:
        temp = TEMP_PREFIX + secrets.token_hex(8)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=folder)
        try:
            try:
                data = (path + "\n").encode("utf-8", "surrogatepass")
                while data:
                    data = data[os.write(fd, data) :]
                os.utime(fd, ns=(stamp, stamp))
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise

    def forget(self, path: VirtualLike, is_dir: Optional[bool] = None) -> bool:
        """Drop the records of a deleted path; for a folder (or when unknown), of everything below."""
        self._seen.clear()
        try:
            folder = self._access_fd(create=False)
            if folder is None:
                return True
            vpath = virtual_path(path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(record_name(vpath), dir_fd=folder)
            if is_dir is not False:
                for record in self.records(prefix=vpath + "/"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(record.name, dir_fd=folder)
            return True
        except (OSError, ValueError):
            return False

    def move(
        self, old: VirtualLike, new: VirtualLike, is_dir: Optional[bool] = None, now: Optional[float] = None
    ) -> bool:
        """Carry records along a rename. The renamed path itself counts as changed at `now`;
        things below a renamed folder keep their times. The new record is written before the old one
        is removed, so a crash in between leaves a stale record, never a lost one."""
        self._seen.clear()
        try:
            old_path, new_path = virtual_path(old), virtual_path(new)
            folder = self._access_fd(create=True)
            if folder is None:
                return False
            when = time.time() if now is None else float(now)
            self._touch(record_name(new_path), new_path, when, force=True)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(record_name(old_path), dir_fd=folder)
            if is_dir is not False:
                prefix = old_path + "/"
                for record in self.records(prefix=prefix):
                    moved = new_path + record.path[len(old_path) :]
                    self._touch(record_name(moved), moved, record.mtime, force=True)
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(record.name, dir_fd=folder)
            return True
        except (OSError, ValueError):
            return False

    # -- reading --

    def last_access(self, path: VirtualLike) -> Optional[float]:
        """The recorded last access of `path`, or None when it has no valid record."""
        try:
            folder = self._access_fd(create=False)
            if folder is None:
                return None
            vpath = virtual_path(path)
            record = _read_record(folder, record_name(vpath))
            return record.mtime if record is not None and record.path == vpath else None
        except (OSError, ValueError):
            return None

    def records(self, prefix: str = "") -> List[Record]:
        """Every valid record (content hashes to its name), optionally only paths under `prefix`."""
        folder = self._access_fd(create=False)
        if folder is None:
            return []
        found = []
        for name in _names(folder):
            if not _RECORD_NAME.fullmatch(name):
                continue
            record = _read_record(folder, name)
            if record is not None and record.path.startswith(prefix):
                found.append(record)
        return found


def _names(folder: int) -> List[str]:
    with os.scandir(folder) as entries:
        return [entry.name for entry in entries]


def _read_record(folder: int, name: str) -> Optional[Record]:
    try:
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK, dir_fd=folder)
    except (FileNotFoundError, OSError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > 8192:
            return None
        raw = os.read(fd, 8192)
    finally:
        os.close(fd)
    if not raw.endswith(b"\n"):
        return None
    try:
        path = raw[:-1].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    if hashlib.sha256(raw[:-1]).hexdigest() != name:
        return None
    return Record(name, path, info.st_mtime)


def _remove_any(folder: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except IsADirectoryError:
        _rmtree_at(folder, name)
    except OSError as error:
        if error.errno in (errno.EISDIR, errno.EPERM):
            _rmtree_at(folder, name)
        elif error.errno != errno.ENOENT:
            raise


def _rmtree_at(parent: int, name: str) -> None:
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    try:
        with os.scandir(fd) as entries:
            items = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        for child, is_dir in items:
            if is_dir:
                _rmtree_at(fd, child)
            else:
                os.unlink(child, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


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


@contextlib.contextmanager
def _root_lock(root_fd: int) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock: one process per root is assumed
        yield
        return
    book = _open_dir_at(root_fd, BOOKKEEPING, create=True)
    try:
        fd = os.open("lock", os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=book)
    finally:
        os.close(book)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class _Candidate(NamedTuple):
    parent_fd: int
    name: str
    vpath: str
    ino: int
    dev: int
    mtime_ns: int


def prune(
    root: str | os.PathLike[str],
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
    are removed). Pass ``lock=False`` only when the caller already holds the root's lock.
    """
    if not older_than > 0:
        raise ValueError("older_than must be a positive number of seconds")
    current = time.time() if now is None else float(now)
    cutoff = current - float(older_than)
    root_fd = os.open(os.fspath(root), os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        guard = _root_lock(root_fd) if lock and not dry_run else contextlib.nullcontext()
        with guard:
            tracker = AccessTracker(root_fd)
            try:
                return _prune_locked(root_fd, tracker, cutoff, current, dry_run)
            finally:
                tracker.close()
    finally:
        os.close(root_fd)


def _prune_locked(root_fd: int, tracker: AccessTracker, cutoff: float, now: float, dry_run: bool) -> PruneReport:
    try:
        records: Dict[str, Record] = {r.path: r for r in tracker.records()}
    except OSError:
        records = {}
    removed_files: List[str] = []
    removed_dirs: List[str] = []
    live_files: Set[str] = set()
    kept = 0
    temp_files = 0

    def visit(dir_fd: int, vdir: str, depth: int) -> bool:
        """Prune inside one open folder; True when the prune removed something and left it empty."""
        nonlocal kept, temp_files
        removed_any = False
        remaining = 0
        with os.scandir(dir_fd) as entries:
            items = list(entries)
        for entry in items:
            name = entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if name.startswith(RESERVED_PREFIX):
                if name.startswith(TEMP_PREFIX) and stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_TEMP_AGE:
                    if not dry_run:
                        with contextlib.suppress(OSError):
                            os.unlink(name, dir_fd=dir_fd)
                    temp_files += 1
                    continue
                remaining += 1
                continue
            vpath = vdir + "/" + name
            if stat.S_ISREG(info.st_mode):
                record = records.get(vpath)
                last = info.st_mtime if record is None else max(record.mtime, info.st_mtime)
                if last < cutoff:
                    candidate = _Candidate(dir_fd, name, vpath, info.st_ino, info.st_dev, info.st_mtime_ns)
                    if dry_run or _unlink_if_same(candidate):
                        removed_files.append(vpath)
                        removed_any = True
                        continue
                kept += 1
                live_files.add(vpath)
                remaining += 1
            elif stat.S_ISDIR(info.st_mode) and depth < MAX_WALK_DEPTH:
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
                except OSError:
                    remaining += 1
                    continue
                try:
                    emptied = visit(child, vpath, depth + 1)
                finally:
                    os.close(child)
                if emptied:
                    removed_any = True
                    if dry_run:
                        removed_dirs.append(vpath)
                        continue
                    try:
                        os.rmdir(name, dir_fd=dir_fd)
                    except OSError:  # something arrived meanwhile: keep it
                        remaining += 1
                    else:
                        removed_dirs.append(vpath)
                        continue
                else:
                    remaining += 1
            else:
                remaining += 1  # links and special files are not memories we manage
        if removed_any and not dry_run:
            with contextlib.suppress(OSError):
                os.fsync(dir_fd)
        return removed_any and remaining == 0

    visit(root_fd, VIRTUAL_ROOT, 0)

    stale = 0
    removed_set = set(removed_files)
    folder = tracker._access_fd(create=False)
    for path, record in records.items():
        if path in live_files:
            continue
        if path not in removed_set:
            stale += 1
        if not dry_run and folder is not None:
            with contextlib.suppress(OSError):
                os.unlink(record.name, dir_fd=folder)
    if folder is not None:
        temp_files += _clear_stale_temps(folder, now, dry_run)
    return PruneReport(sorted(removed_files) + sorted(removed_dirs), kept, stale, temp_files)


def _clear_stale_temps(folder: int, now: float, dry_run: bool) -> int:
    count = 0
    for name in _names(folder):
        if not name.startswith(TEMP_PREFIX):
            continue
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_TEMP_AGE:
            count += 1
            if not dry_run:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=folder)
    return count


def _unlink_if_same(candidate: _Candidate) -> bool:
    """Unlink only the file we judged: same inode and mtime as when we looked."""
    try:
        info = os.stat(candidate.name, dir_fd=candidate.parent_fd, follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or (info.st_ino, info.st_dev, info.st_mtime_ns) != (
        candidate.ino,
        candidate.dev,
        candidate.mtime_ns,
    ):
        return False
    try:
        os.unlink(candidate.name, dir_fd=candidate.parent_fd)
    except OSError:
        return False
    return True
