"""Change notices from the kernel, so that a search after a pause does not rescan (D-OPENCLAW-INDEX-WATCH).

On Linux, `Inotify` watches every folder holding memory files (through `ctypes`, standard library only)
and is a source of changes (`changes.Source`) in place of the 2 s full-scan interval: a file made,
edited in place, removed or renamed in a watched folder is named by the kernel and read again by the next
search. A folder made, removed or renamed moves its parent's time, which every search checks (the folder
check lists it again, and it is watched under its new name); a queue that overflowed means a full scan. Where inotify
is missing (another system, no `libc`, no watch left: `fs.inotify.max_user_watches`), `start` answers
None and the interval is used, as before (`Freshness.method` says which is in use).

The notices are only hints: every file named is read again through the audited walk, never through the
watched path, so a folder swapped for a link under a watch can make a change be seen late, never read
outside the workspace. Watches are added after a folder is listed: a file made, removed or renamed in
between still changes the folder's time, which every search checks; an edit in place in that moment is
seen at the next full scan.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
import weakref
from typing import Dict, Iterable, Optional, Set, Tuple

from . import paths
from .changes import Paths, Source

Parts = Tuple[str, ...]

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x1000000
_IN_DONT_FOLLOW = 0x2000000
_IN_ISDIR = 0x40000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")
MAX_WATCHES = 16_384
"""Most folders one handler watches; a workspace with more falls back to the interval."""
_READ_BYTES = 65_536


class Inotify(Source):
    """The kernel's notices for the watched folders of one workspace (see the module docstring)."""

    def __init__(self, libc: ctypes.CDLL, fd: int, root: str) -> None:
        self._libc = libc
        self.fd = fd
        self.root = root
        self.by_watch: Dict[int, Parts] = {}
        self.watched: Dict[Parts, int] = {}
        self.failed = False  # a folder could not be watched: the caller goes back to the interval
        self.lock = threading.Lock()
        self._closer = weakref.finalize(self, os.close, fd)

    def close(self) -> None:
        self._closer()

    def watch(self, folders: Iterable[Parts]) -> None:
        """Watch each of `folders` (parts below the workspace) not watched yet."""
        with self.lock:
            for parts in folders:
                if parts in self.watched:
                    continue
                if len(self.watched) >= MAX_WATCHES:
                    self.failed = True
                    return
                host = os.path.join(self.root, *parts).encode("utf-8", "surrogateescape")
                number = self._libc.inotify_add_watch(self.fd, host, _MASK)
                if number < 0:
                    if ctypes.get_errno() in (2, 20):  # gone, or no longer a folder: the folder check sees it
                        continue
                    self.failed = True
                    return
                self.by_watch[number] = parts
                self.watched[parts] = number

    def changes_since(self, token: int) -> Tuple[int, Paths]:
        """The files named since the last call (`None`: scan everything: the first call, an overflow, or
        a folder made, removed or moved)."""
        with self.lock:
            changed: Set[str] = set()
            rescan = token == 0
            while True:
                try:
                    data = os.read(self.fd, _READ_BYTES)
                except BlockingIOError:
                    break
                except OSError:
                    rescan = True
                    break
                if not data:
                    break
                offset = 0
                while offset + _EVENT.size <= len(data):
                    number, mask, _cookie, size = _EVENT.unpack_from(data, offset)
                    raw = data[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0")
                    offset += _EVENT.size + size
                    parts = self.by_watch.get(number)
                    if mask & _IN_Q_OVERFLOW:
                        rescan = True
                        continue
                    if parts is None or mask & _IN_ISDIR:
                        continue  # a folder made, removed or renamed: its parent's time moved (the folder check)
                    if mask & (_IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF):
                        self.by_watch.pop(number, None)  # watched again under its new name once listed
                        self.watched.pop(parts, None)
                        if not mask & _IN_IGNORED:
                            self._libc.inotify_rm_watch(self.fd, number)
                        continue
                    name = raw.decode("utf-8", "surrogateescape")
                    if paths.is_indexed(parts + (name,)):
                        changed.add("/".join(parts + (name,)))
            return token + 1, None if rescan else changed


def start(root: str) -> Optional[Inotify]:
    """An inotify instance for the workspace at `root` (a host path), or None where there is none."""
    if not sys.platform.startswith("linux") or os.environ.get("REFMEM_WATCH", "1") == "0":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init = libc.inotify_init1
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        return None
    return Inotify(libc, fd, root)
