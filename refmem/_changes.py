"""The filesystem store's change journal: which paths each mutation changed, by generation.

A consumer (the OpenClaw search index) keeps a generation and asks `changes_since(generation)`; it
gets the paths changed since then and the generation to ask from next, or None for the paths when it
must rescan. That keeps it fresh without rereading the tree, in this process and in others.

The file: `.refmem/changes`, ASCII, a header line then one line per mutation:

    refmem-changes 1 <base> <boot>
    ["/memories/notes/a.md"]
    ["/memories/old","/memories/new"]

A generation is `base` plus a byte offset into the file: the generation after a line is `base` plus
the offset of its end. So generations grow with every line, cost nothing to hand out, and a reader
seeks straight to where it stopped (work proportional to what changed since, bounded by the file).

Guarantees (the filesystem store's; docs/spec-notes.md D-STORE-CHANGES):

* A mutation appends its line under the root's write lock *before* it changes anything, so a change
  that happened is always in the journal (once there is one: see "Cheap" below), even if the process
  was killed half-way (a line for a
  change that then failed is possible, and harmless: the consumer rereads a path that did not change).
  Readers take the same lock, so they never see a line whose change is still under way.
* A recorded path stands for itself and everything below it; folders made as missing parents are
  not recorded on their own (their files are). The store's own `.refmem` files are never recorded.
* Bounded: past `MAX_BYTES` the file starts over in place with `base` moved past every generation
  handed out, so a reader from before gets None (rescan). More than `MAX_PATHS` distinct paths since
  a generation is also None.
* Cheap: one `write` of one line per mutation (the file is opened for the call in the `.refmem`
  folder kept open, so no file stays open for writing), no fsync. And only once someone reads changes:
  the first `since` on a root makes the journal (answering "rescan", since it has no generation to go
  by); until then a mutation costs one `stat` of `.refmem` in the root's folder (same folder, same times as when no
  journal was found: none was made since, see `_still_absent`), and appends nothing. A writer
  holds the lock while it looks and writes, and the first reader makes the journal under it, so a
  change is either made before the reader's first generation (and its rescan sees it) or recorded. The journal is
  therefore as durable as the access records, not as the content: a power loss may drop its last
  lines while the changes they describe, which were fsynced, survive. The header names the boot it
  was started in (Linux's boot_id); the first writer after a restart of the machine starts a new
  epoch (`base` past every earlier generation), so a consumer that kept a generation across the
  restart rescans. Where the system gives no boot identity the header says `-`, and a consumer that
  keeps a generation on disk must rescan after the machine restarts.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from typing import Iterable, Iterator, Optional, Set, Tuple

from . import problems
from ._bookkeeping import BOOKKEEPING_DIR, CHANGES_NAME, PROCESS_ID, Walker, open_folder
from ._handles import Identity, identity
from ._kernel import Dir
from ._single import open_single
from ._store_extras import Changes
from .paths import ROOT
from .problems import OsFailure

FORMAT = "refmem-changes 1"
MAX_BYTES = 256 * 1024  # the file starts over past this: about 4,000 mutations of short paths
MAX_PATHS = 1024  # more distinct paths than this since a generation: rescan instead
HEADER_MAX = 128
ABSENT_SETTLED_NS = 2_000_000_000  # "no journal" is remembered only of a `.refmem` unchanged this long (FAT's step)
_HEADER = re.compile(rb"refmem-changes 1 ([0-9]{1,20}) ([0-9A-Za-z-]{1,64})\n")
_BOOT_ID = "/proc/sys/kernel/random/boot_id"
_boot: Optional[str] = None


def boot_identity() -> str:
    """This boot of the machine (Linux's boot_id), or `-` where the system does not say."""
    global _boot
    if _boot is None:
        try:
            with open(_BOOT_ID, "rb") as source:
                raw = source.read(64).strip().decode("ascii")
        except (OSError, UnicodeDecodeError):
            raw = ""
        _boot = raw if re.fullmatch(r"[0-9A-Za-z-]{1,64}", raw) else "-"
    return _boot


def json_string(text: str) -> str:
    """`text` as a JSON string, ASCII only: what `json.dumps` gives, without its cost for a plain path."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return '"' + text + '"'
    return json.dumps(text, ensure_ascii=True)


def encode(paths: Iterable[str]) -> bytes:
    """One journal line: the paths as a JSON array, ASCII only (non-ASCII escaped), then a newline."""
    return ("[" + ",".join(map(json_string, paths)) + "]\n").encode("ascii")


def decode(line: bytes) -> Optional[Tuple[str, ...]]:
    """The paths of one journal line; None when it is not one (a torn or foreign line)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(path, str) and (path == ROOT or path.startswith(ROOT + "/")) for path in value):
        return None
    return tuple(value)


class Journal:
    """The change journal of one root; the caller holds the root's write lock for every call."""

    def __init__(self, root: Walker) -> None:
        self._root = root
        self._dir: Optional[Dir] = None  # `.refmem`, kept open (a folder: a read-only remount still works)
        self._pid = 0
        self._checked: Optional[Identity] = None  # the journal file whose header this process checked
        self._dir_identity: Identity = (0, 0)
        self._seen_top: Optional[os.stat_result] = None  # `.refmem` as `_moved` last found it
        # "No journal": `.refmem` (identity, mtime, ctime) when it was last found without one, unchanged for longer than
        # any filesystem's timestamp step. Creating the journal changes both times, so while they stand, none was made.
        self._absent: Optional[Tuple[Identity, int, int]] = None

    # -- the file --

    def _folder(self, fresh: bool = False) -> Dir:
        if fresh or self._dir is None or self._pid != PROCESS_ID[0]:
            self.close()
            self._dir = open_folder(self._root, (), create=True)
            self._pid = PROCESS_ID[0]
            self._dir_identity = self._dir.identity()
        return self._dir

    def _moved(self) -> bool:
        """The `.refmem` held open is no longer the root's (removed, or another put in its place). One look in the
        root's own folder: a removed root has no `.refmem` either, and the fresh walk that follows says so."""
        top = getattr(self._root, "top", None)
        if top is None:
            with self._root.walk(()) as top:
                now = top.lstat(BOOKKEEPING_DIR)
        else:
            now = top.lstat(BOOKKEEPING_DIR)
        self._seen_top = now
        return now is None or identity(now) != self._dir_identity

    def _still_absent(self) -> bool:
        """No journal was made since one was last found missing: `.refmem` is the same folder, with the same
        modification and change times (one `lstat` in the root's folder, where looking for the journal took two)."""
        absent = self._absent
        if absent is None or self._pid != PROCESS_ID[0]:
            return False
        if self._moved():
            return False
        now = self._seen_top
        return now is not None and (identity(now), now.st_mtime_ns, now.st_ctime_ns) == absent

    def _note_absent(self) -> None:
        """Remember that no journal is there, only when `.refmem` last changed longer ago than any timestamp step
        (two seconds, FAT's): a journal made later then always moves its times (a racy-timestamp guard)."""
        now = self._seen_top
        if now is not None and time.time_ns() - max(now.st_mtime_ns, now.st_ctime_ns) > ABSENT_SETTLED_NS:
            self._absent = (identity(now), now.st_mtime_ns, now.st_ctime_ns)

    def _open(self, create: bool) -> Optional[Tuple[int, os.stat_result]]:
        """The journal open for reading and appending (and its fstat), made if missing with `create`;
        None when there is none and `create` is off. OsFailure("bookkeeping") when something else holds
        its name."""
        flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0)
        for fresh in (False, True):
            folder = self._folder(fresh)
            try:
                return open_single(folder, CHANGES_NAME, flags)
            except problems.Missing:
                if not create and not self._moved():
                    return None  # nobody asked for changes yet: nothing to record (D-STORE-CHANGES-FS)
                continue  # `.refmem` was removed or replaced meanwhile: look it up again, once
            except (problems.IsLink, problems.NotRegular, problems.HardLinked):
                raise OsFailure("bookkeeping") from None
        raise OsFailure("bookkeeping")

    @contextlib.contextmanager
    def _opened(self, create: bool) -> Iterator[Optional[Tuple[int, int]]]:
        """(descriptor, size) of the journal with a header of this boot, opened for the call only (no file
        stays open for writing); None when there is no journal and `create` is off."""
        opened = self._open(create)
        if opened is None:
            yield None
            return
        fd = opened[0]
        try:
            yield fd, self._ready(*opened)
        except OSError as error:
            raise problems.os_failure(error) from None
        finally:
            os.close(fd)

    def _ready(self, fd: int, info: os.stat_result) -> int:
        """The size of the journal open as `fd`, started over first unless its header is of this boot."""
        size = info.st_size
        if identity(info) != self._checked:
            header = self._header(fd)
            if header is None or header[1] != boot_identity():
                size = self._start(fd, None if header is None else header[0] + size)
            self._checked = identity(info)
        return size

    @staticmethod
    def _header(fd: int) -> Optional[Tuple[int, str, int]]:
        """(base, boot, header length) of the journal open as `fd`, or None when it has no valid header."""
        match = _HEADER.match(_read_at(fd, 0, HEADER_MAX))
        if match is None:
            return None
        return int(match.group(1)), match.group(2).decode("ascii"), match.end()

    @staticmethod
    def _start(fd: int, past: Optional[int]) -> int:
        """Start the journal over in place with a base beyond every generation handed out so far: past
        `past` when the old end is known, and never before the clock (a journal whose header was lost).
        Returns the new size."""
        base = max(time.time_ns(), (past or 0) + 1)
        os.ftruncate(fd, 0)
        header = f"{FORMAT} {base} {boot_identity()}\n".encode("ascii")
        _write(fd, header)
        return len(header)

    def close(self) -> None:
        self._absent = None
        folder, self._dir = self._dir, None
        if folder is not None and self._pid == PROCESS_ID[0]:
            folder.close()

    # -- writing and reading --

    def append(self, paths: Iterable[str]) -> None:
        """Record that `paths` are about to change (call under the write lock, before the change), when
        there is a journal: one is made by the first reader (`since`)."""
        if self._still_absent():
            return
        self._absent = None
        opened = self._open(create=False)  # as `_opened`, without its generator: every mutation comes here
        if opened is None:
            self._note_absent()
            return
        fd = opened[0]
        try:
            size = self._ready(*opened)
            line = encode(paths)
            if size + len(line) > MAX_BYTES:
                header = self._header(fd)
                self._start(fd, None if header is None else header[0] + size)
            _write(fd, line)
        except OSError as error:
            raise problems.os_failure(error) from None
        finally:
            os.close(fd)

    def since(self, generation: int) -> Changes:
        """The paths recorded after `generation` and the generation to ask from next (see Changes). The
        first call on a root makes the journal (and, having no generation to go by, says rescan)."""
        self._absent = None
        with self._opened(create=True) as opened:
            if opened is None:  # pragma: no cover - made when missing
                raise OsFailure("bookkeeping")
            fd, size = opened
            header = self._header(fd)
            if header is None:  # pragma: no cover - _opened wrote one; only a writer outside the lock
                return Changes(0, None)
            base, _boot, header_length = header
            end = base + size
            if generation == end:
                return Changes(end, ())
            offset = generation - base
            if not header_length <= offset < size:
                return Changes(end, None)
            data = _read_at(fd, offset - 1, size - offset + 1)
        return _read_lines(generation, data, end)


def _read_lines(generation: int, data: bytes, end: int) -> Changes:
    """The paths in `data` (the byte before `generation`, then the lines after it)."""
    if not data.startswith(b"\n"):
        return Changes(end, None)  # not a generation this journal gave out: not at the end of a line
    complete = data.rfind(b"\n")
    found: Set[str] = set()
    for line in data[1:complete].split(b"\n") if complete else ():
        paths = decode(line)
        if paths is None:
            return Changes(end, None)
        found.update(paths)
        if len(found) > MAX_PATHS:
            return Changes(end, None)
    return Changes(generation + complete, tuple(sorted(found)))


def _read_at(fd: int, offset: int, size: int) -> bytes:
    """`size` bytes at `offset` (fewer at the end). A seek and a read, not `pread`: Windows has no pread,
    and the journal's descriptor is used by one thread at a time (under the write lock); appends do not
    care where the descriptor stands (O_APPEND)."""
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


def _write(fd: int, data: bytes) -> None:
    if os.write(fd, data) != len(data):
        raise OsFailure("io")  # a short write to a regular file: the disk is full; the line is torn
