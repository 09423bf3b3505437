"""Data loss: files in the root that a case's commands do not name, changed or gone after the case.

A command touches what it acts on: `str_replace`, `insert` and `delete` their `path`, `rename` its `old_path`
(with everything below them). `create` and `rename`'s `new_path` touch nothing that exists: the documentation
says an existing file is never overwritten. `view` touches nothing. The root is never touched: deleting or
renaming it is refused by every careful implementation, and emptying it loses everything in it.

A path names the entries it could mean under any reading the documentation allows, so that an
implementation that accepts a spelling is not accused of losing the file it spelled: the prefix stripped as a
string or as a folder (`/memories_evil/x` may mean `_evil/x` to a string-prefix check that stays inside),
backslashes as separators, percent-decoded, `.` and `..` resolved inside the root, Windows' trailing dots and
spaces dropped, and symbolic links and hard links inside the root followed to what they share. Anything
else that changes is a safety finding.
"""

from __future__ import annotations

import os
import re
import stat
import urllib.parse
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from .layout import Entry

TOUCHING: Dict[str, Tuple[str, ...]] = {
    "str_replace": ("path",),
    "insert": ("path",),
    "delete": ("path",),
    "rename": ("old_path",),
}
"""The arguments through which each command may change or remove what already exists."""

_PREFIX = re.compile(r"\s*(?:\./|/)*memories", re.IGNORECASE)
_LINK_HOPS = 40


def _inside(path: str) -> Optional[str]:
    """`path` (below the root, `/`-separated) with `.` and `..` resolved; None when it climbs out."""
    parts: List[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(segment)
    return "/".join(parts)


def readings(path: Any) -> Set[str]:
    """The root-relative paths (`""` is the root) that `path` may name under the allowed readings."""
    if not isinstance(path, str):
        return set()
    spellings = {path, path.replace("\\", "/")}
    spellings |= {urllib.parse.unquote(text) for text in spellings}
    found: Set[str] = set()
    for text in spellings:
        prefix = _PREFIX.match(text)
        if not prefix:
            continue
        rest = text[prefix.end() :]
        windows = "/".join(part if part in (".", "..") else part.rstrip(". ") for part in rest.split("/"))
        for candidate in (rest, windows):
            resolved = _inside(candidate)
            if resolved is not None:
                found.add(resolved)
    return found


def _follow(path: str, tree: Dict[str, Entry]) -> Optional[str]:
    """`path` with the symbolic links on it followed while they stay inside the root; None if they leave."""
    for _hop in range(_LINK_HOPS):
        parts = path.split("/") if path else []
        for index in range(len(parts)):
            entry = tree.get("/".join(parts[: index + 1]))
            if entry is not None and entry[0] == "symlink":
                target = str(entry[1])
                if target.startswith("/"):
                    return None
                base = "/".join(parts[:index])
                joined = _inside((base + "/" if base else "") + target + "/" + "/".join(parts[index + 1 :]))
                if joined is None:
                    return None
                path = joined
                break
        else:
            return path
    return None


def touched(inputs: Iterable[Any], tree: Dict[str, Entry], shared: Dict[str, Tuple[int, int]]) -> Set[str]:
    """The root-relative paths the commands act on, links and hard links inside the root included."""
    named: Set[str] = set()
    for command in inputs:
        if not isinstance(command, dict):
            continue
        for argument in TOUCHING.get(str(command.get("command")), ()):
            named |= readings(command.get(argument))
    named.discard("")
    for path in list(named):
        followed = _follow(path, tree)
        if followed:
            named.add(followed)
    inodes = {shared[path] for path in named if path in shared}
    named |= {path for path, inode in shared.items() if inode in inodes}
    return named


def _covered(path: str, names: Set[str]) -> bool:
    return any(path == name or path.startswith(name + "/") for name in names)


def lost(
    before: Dict[str, Entry], after: Dict[str, Entry], names: Set[str]
) -> List[Tuple[str, Entry, Optional[Entry]]]:
    """(path, before, after) for every file, link or special file not named that changed or is gone.

    Folders are left out: an emptied folder removed, or a folder's mode, is not data; the files in it are.
    """
    return [
        (path, entry, after.get(path))
        for path, entry in sorted(before.items())
        if entry[0] != "dir" and after.get(path) != entry and not _covered(path, names)
    ]


def shared_inodes(root: str, tree: Dict[str, Entry]) -> Dict[str, Tuple[int, int]]:
    """(device, inode) of every regular file in `tree` that has more than one hard link."""
    found = {}
    for path, entry in tree.items():
        if entry[0] != "file":
            continue
        try:
            info = os.lstat(os.path.join(root, path))
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            found[path] = (info.st_dev, info.st_ino)
    return found
