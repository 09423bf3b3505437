"""Host paths a case names outside its own directory: watched, reported when touched, and put back.

The case directory has its own canary tree, but a payload may name a place on the host itself:
`/tmp/outside/secret.txt`, `/etc/passwd`, `../outside/secret.txt` (relative to the runner's working
directory), `/memories/../../x`. An implementation that uses such a path as it is writes to the host, where
the case directory's snapshots cannot see it, and leaves something behind that changes the next run's
outcome (a file the first run created is "already there" in the second). So every such path is looked at
(without following its last link) before the case and after it: a change is a safety finding, and what the
case created is removed again, a regular file it changed or removed is written back (up to 1 MiB), so that
every run starts from the same host. `/proc`, `/sys` and `/dev` are not watched: their contents change on
their own and cannot be written back.
"""

from __future__ import annotations

import os
import stat
import urllib.parse
from typing import Any, Dict, Iterable, List, Optional, Tuple

PATH_ARGUMENTS = ("path", "old_path", "new_path")
UNWATCHED = ("/proc", "/sys", "/dev")
RESTORE_LIMIT = 1 << 20

Snapshot = Optional[Tuple[Any, ...]]
"""None (nothing there), ("file", bytes or None, mode), ("dir",), ("link", target) or ("other",)."""


def _candidates(value: Any, cwd: str) -> List[str]:
    """The host paths one path argument could land on when used as it is."""
    if not isinstance(value, str) or not value or "\x00" in value:
        return []
    texts = {value, urllib.parse.unquote(value)}
    if value.startswith("file://"):
        texts.add(urllib.parse.urlparse(value).path)
    found = []
    for text in texts:
        if text.startswith("~"):
            text = os.path.expanduser(text)
        full = os.path.normpath(text if os.path.isabs(text) else os.path.join(cwd, text))
        if not any(full == top or full.startswith(top + "/") for top in UNWATCHED):
            found.append(full)
    return found


def _canonical(path: str) -> str:
    """`path` with the links of its existing folders resolved, taken before the case runs (when no backend has
    had a chance to plant one): the watcher later walks it without following any link."""
    head, tail = path, ""
    while head and head != os.path.dirname(head) and not os.path.isdir(head):
        head, name = os.path.split(head)
        tail = os.path.join(name, tail) if tail else name
    resolved = os.path.realpath(head) if head else head
    return os.path.join(resolved, tail) if tail else resolved


def named_paths(inputs: Iterable[Any], case_dir: str, cwd: Optional[str] = None) -> List[str]:
    """Host paths outside `case_dir` that the inputs' path arguments name, with their missing parents."""
    cwd = cwd or os.getcwd()
    case_real = os.path.realpath(case_dir)
    paths: List[str] = []
    for command in inputs:
        if not isinstance(command, dict):
            continue
        for argument in PATH_ARGUMENTS:
            for path in _candidates(command.get(argument), cwd):
                path = _canonical(path)
                if any(path == top or path.startswith(top + "/") for top in (case_dir, case_real)):
                    continue
                if any(path == top or path.startswith(top + "/") for top in UNWATCHED):
                    continue
                paths.append(path)
    return sorted(set(paths))


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_parent(path: str) -> Optional[Tuple[int, str]]:
    """(descriptor of `path`'s folder, its last name), the folder reached from `/` one name at a time without
    following a link; None when a name on the way is a link, is not a folder, or is missing. The watcher
    never looks, writes or removes through a link a backend may have planted on the way."""
    parts = [part for part in path.split("/") if part]
    if not parts:
        return None
    try:
        fd = os.open("/", _DIR_FLAGS)
    except OSError:
        return None
    for part in parts[:-1]:
        try:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = child
    return fd, parts[-1]


def _folder_identity(path: str) -> Optional[Tuple[int, int]]:
    opened = _open_parent(path + "/.")
    if opened is None:
        return None
    fd, _name = opened
    try:
        info = os.fstat(fd)
        return info.st_dev, info.st_ino
    finally:
        os.close(fd)


def _snapshot(path: str) -> Snapshot:
    opened = _open_parent(path)
    if opened is None:
        return ("unreachable",) if _exists_by_path(path) else None
    fd, name = opened
    try:
        return _snapshot_in(fd, name)
    finally:
        os.close(fd)


def _exists_by_path(path: str) -> bool:
    try:
        os.lstat(path)
        return True
    except (OSError, ValueError):
        return False


def _snapshot_in(folder: int, name: str) -> Snapshot:
    try:
        info = os.lstat(name, dir_fd=folder)
    except (OSError, ValueError):
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            return ("link", os.readlink(name, dir_fd=folder))
        except OSError:
            return ("link", None)
    if stat.S_ISDIR(info.st_mode):
        return ("dir",)
    if stat.S_ISREG(info.st_mode):
        data: Optional[bytes] = None
        if info.st_size <= RESTORE_LIMIT:
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=folder)
            except OSError:
                fd = -1
            if fd >= 0:
                try:
                    opened = os.fstat(fd)
                    if stat.S_ISREG(opened.st_mode) and opened.st_ino == info.st_ino:
                        data = os.read(fd, RESTORE_LIMIT + 1)
                except OSError:
                    data = None
                finally:
                    os.close(fd)
        return ("file", data, stat.S_IMODE(info.st_mode), info.st_size)
    return ("other",)


def _missing_ancestors(path: str) -> List[str]:
    """`path`'s ancestors that do not exist, deepest first (what an implementation may create on the way)."""
    missing = []
    parent = os.path.dirname(path)
    while parent and parent != os.path.dirname(parent) and _snapshot(parent) is None:
        missing.append(parent)
        parent = os.path.dirname(parent)
    return missing


def _describe(shot: Snapshot) -> str:
    if shot is None:
        return "nothing"
    return {
        "file": "a file", "dir": "a folder", "link": "a symbolic link", "unreachable": "reachable only through a link",
    }.get(str(shot[0]), "a special file")


class HostWatch:
    """Before/after snapshots of host paths a case names; `settle()` reports changes and undoes them."""

    def __init__(self, paths: Iterable[str]) -> None:
        watched = list(paths)
        for path in list(watched):
            watched += _missing_ancestors(path)
        self.before: Dict[str, Snapshot] = {path: _snapshot(path) for path in sorted(set(watched))}
        self.folders: Dict[str, Optional[Tuple[int, int]]] = {
            path: _folder_identity(os.path.dirname(path)) for path in self.before
        }

    def settle(self) -> List[Tuple[str, str]]:
        """(path, what happened) for every watched path that changed; each is put back as well as it can be,
        only through the very folder it was in before (never through a link that appeared on the way)."""
        changed = []
        # deepest first: what a case created inside a folder it created goes before the folder
        for path in sorted(self.before, key=lambda name: -name.count("/")):
            was, now = self.before[path], _snapshot(path)
            if was == now or (was is not None and was[0] == "dir" and now is not None and now[0] == "dir"):
                continue
            if now is not None and now[0] == "unreachable":
                changed.append((path, f"was {_describe(was)}, now reached through a link on the way (left alone)"))
                continue
            opened = _open_parent(path)
            if opened is None or _identity(opened[0]) != self.folders.get(path):
                if opened is not None:
                    os.close(opened[0])
                what = f"was {_describe(was)}, now {_describe(now)}; its folder was replaced (left alone)"
                changed.append((path, what))
                continue
            folder, name = opened
            try:
                _put_back(folder, name, was, now)
            finally:
                os.close(folder)
            changed.append((path, f"was {_describe(was)}, now {_describe(now)}"))
        return sorted(changed)


def _identity(fd: int) -> Optional[Tuple[int, int]]:
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _put_back(folder: int, name: str, was: Snapshot, now: Snapshot) -> None:
    """Undo a change to the entry `name` of the open `folder`: what appeared is removed (a folder with
    everything in it, never following a link), a regular file changed or removed is written back."""
    from refmem_harness import hosttree

    try:
        if now is not None and (was is None or was[0] != now[0] or was[0] == "file"):
            if now[0] == "dir":
                hosttree.remove_in(folder, name)
            elif was is None or was[0] != "file":
                os.unlink(name, dir_fd=folder)
        if was is not None and was[0] == "file" and was[1] is not None and len(was[1]) == was[3]:
            fd = os.open(name, _WRITE_FLAGS | os.O_CREAT, was[2], dir_fd=folder)
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    view = memoryview(was[1])
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fchmod(fd, was[2])
            finally:
                os.close(fd)
    except OSError:
        pass  # reported already; nothing more can be done from here
