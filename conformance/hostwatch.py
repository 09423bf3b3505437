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
import shutil
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


def named_paths(inputs: Iterable[Any], case_dir: str, cwd: Optional[str] = None) -> List[str]:
    """Host paths outside `case_dir` that the inputs' path arguments name, with their missing parents."""
    cwd = cwd or os.getcwd()
    paths: List[str] = []
    for command in inputs:
        if not isinstance(command, dict):
            continue
        for argument in PATH_ARGUMENTS:
            for path in _candidates(command.get(argument), cwd):
                if path == case_dir or path.startswith(case_dir + "/"):
                    continue
                paths.append(path)
    return sorted(set(paths))


def _snapshot(path: str) -> Snapshot:
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            return ("link", os.readlink(path))
        except OSError:
            return ("link", None)
    if stat.S_ISDIR(info.st_mode):
        return ("dir",)
    if stat.S_ISREG(info.st_mode):
        data: Optional[bytes] = None
        if info.st_size <= RESTORE_LIMIT:
            try:
                with open(path, "rb") as handle:
                    data = handle.read(RESTORE_LIMIT + 1)
            except OSError:
                data = None
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
    return {"file": "a file", "dir": "a folder", "link": "a symbolic link"}.get(str(shot[0]), "a special file")


class HostWatch:
    """Before/after snapshots of host paths a case names; `settle()` reports changes and undoes them."""

    def __init__(self, paths: Iterable[str]) -> None:
        watched = list(paths)
        for path in list(watched):
            watched += _missing_ancestors(path)
        self.before: Dict[str, Snapshot] = {path: _snapshot(path) for path in sorted(set(watched))}

    def settle(self) -> List[Tuple[str, str]]:
        """(path, what happened) for every watched path that changed; each is put back as well as it can be."""
        changed = []
        # deepest first: what a case created inside a folder it created goes before the folder
        for path in sorted(self.before, key=lambda name: -name.count("/")):
            was, now = self.before[path], _snapshot(path)
            if was == now or (was is not None and was[0] == "dir" and now is not None and now[0] == "dir"):
                continue
            changed.append((path, f"was {_describe(was)}, now {_describe(now)}"))
            _put_back(path, was, now)
        return sorted(changed)


def _put_back(path: str, was: Snapshot, now: Snapshot) -> None:
    try:
        if now is not None and (was is None or was[0] != now[0] or was[0] == "file"):
            if now[0] == "dir":
                shutil.rmtree(path, ignore_errors=True)
            elif was is None or was[0] != "file":
                os.unlink(path)
        if was is not None and was[0] == "file" and was[1] is not None and len(was[1]) == was[3]:
            with open(path, "wb") as handle:
                handle.write(was[1])
            os.chmod(path, was[2])
    except OSError:
        pass  # reported already; nothing more can be done from here
