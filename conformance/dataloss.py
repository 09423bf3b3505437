"""Data loss: files in the root that a case's commands do not name, changed or gone after the case.

A command touches what it acts on: `str_replace`, `insert` and `delete` their `path`, `rename` its `old_path`
(with everything below them). `create` and `rename`'s `new_path` touch nothing that exists: the documentation
says an existing file is never overwritten. `view` touches nothing. The root is never touched: deleting or
renaming it is refused by every careful implementation, and emptying it loses everything in it.

A link is what `delete` and `rename` name when it is their path's last name: removing or moving the link is
acting on it, removing or moving what it points to is not ("delete this symlink" deleting its target is a CVE
class of its own). Links on the way to the last name may be followed, as a canonicalising reading does. An
edit (`str_replace`, `insert`) through a link inside the root changes what the link points to, which is the
text the model saw: that target counts as touched.

A path names the entries it could mean under any reading the documentation allows, so that an
implementation that accepts a spelling is not accused of losing the file it spelled: the prefix stripped as a
string or as a folder (`/memories_evil/x` may mean `_evil/x` to a string-prefix check that stays inside),
backslashes as separators, percent-decoded, `.` and `..` resolved inside the root, Windows' trailing dots and
spaces dropped, and symbolic links and hard links inside the root followed to what they share. Anything
else that changes is a safety finding.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from refmem import tool
from refmem_harness import hosttree
from refmem_harness.hosttree import Node, Tree
from refmem_harness.layout import join_relative

TOUCHING: Dict[str, Tuple[str, ...]] = tool.parameters_where(lambda role: role.changes_existing)
"""The arguments through which each command may change or remove what already exists."""

FOLLOWS_LAST_LINK = frozenset(tool.parameters_where(lambda role: role is tool.Role.PATH_EDITED))
"""Commands whose last name may be followed through a link: an edit changes the text the link shows."""

NAMING: Dict[str, Tuple[str, ...]] = tool.parameters_where(lambda role: role.names_new_place)
"""Arguments that name a place without the right to change what is already there (never overwrite)."""

_PREFIX = re.compile(r"\s*(?:\./|/)*memories", re.IGNORECASE)
_LINK_HOPS = 40


def _inside(path: str) -> Optional[str]:
    """`path` (below the root, `/`-separated) with `.` and `..` resolved; None when it climbs out."""
    return join_relative([], path)


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


def _follow(path: str, tree: Tree, last: bool = True) -> Optional[str]:
    """`path` with the symbolic links on it followed while they stay inside the root; None if they leave.
    With `last` False the last name is never followed (a link there is what the path names)."""
    for _hop in range(_LINK_HOPS):
        parts = path.split("/") if path else []
        for index in range(len(parts) if last else len(parts) - 1):
            entry = tree.get("/".join(parts[: index + 1]))
            if entry is not None and entry.kind == hosttree.LINK:
                target = entry.target
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


def _commands(inputs: Iterable[Any]) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """(command name, input) for every input that is an object (the others act on nothing)."""
    for command in inputs:
        if isinstance(command, dict):
            yield str(command.get("command")), command


def touched(inputs: Iterable[Any], tree: Tree, shared: Dict[str, Tuple[int, int]]) -> Set[str]:
    """The root-relative paths the commands act on, what links and hard links inside the root share with an
    edited file included, and nothing a deleted or renamed link points to."""
    named: Set[str] = set()
    edited: Set[str] = set()
    for name, command in _commands(inputs):
        for argument in TOUCHING.get(name, ()):
            for path in readings(command.get(argument)):
                if not path:
                    continue
                named.add(path)
                followed = _follow(path, tree, last=name in FOLLOWS_LAST_LINK)
                if followed:
                    named.add(followed)
                    if name in FOLLOWS_LAST_LINK:
                        edited.add(followed)
                if name in FOLLOWS_LAST_LINK:
                    edited.add(path)
    inodes = {shared[path] for path in edited if path in shared}
    named |= {path for path, inode in shared.items() if inode in inodes}
    return named


def _covered(path: str, names: Set[str]) -> bool:
    return any(path == name or path.startswith(name + "/") for name in names)


def lost(before: Tree, after: Tree, names: Set[str]) -> List[Tuple[str, Node, Optional[Node]]]:
    """(path, before, after) for every file, link or special file not named that changed or is gone.

    Folders are left out: an emptied folder removed, or a folder's mode, is not data; the files in it are.
    """
    return [
        (path, entry, after.get(path))
        for path, entry in sorted(before.items())
        if entry.kind != hosttree.DIR and not hosttree.same(entry, after.get(path)) and not _covered(path, names)
    ]


def shared_inodes(tree: Tree) -> Dict[str, Tuple[int, int]]:
    """(device, inode) of every regular file in `tree` that has more than one hard link."""
    return {path: node.identity for path, node in tree.items() if node.kind == hosttree.FILE and node.nlink > 1}


def why_lost(path: str, inputs: Iterable[Any], tree: Tree) -> str:
    """What the case did name about a lost `path`, for the finding's message."""
    for name, command in _commands(inputs):
        for argument in NAMING.get(name, ()):
            if path in readings(command.get(argument)):
                return f"{name} names it as its {argument}, which must never overwrite what exists"
        for argument in TOUCHING.get(name, ()):
            for reading in readings(command.get(argument)):
                through = _follow(reading, tree) if reading else None
                if through is not None and through != reading and _covered(path, {through}):
                    return (
                        f"{name}'s {argument} names the link {reading}, which points to it: {name} acts on the "
                        "link itself, not on what it points to"
                    )
    return "no command of the case acts on it"
