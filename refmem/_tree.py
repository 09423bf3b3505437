"""Whole-tree work over the kernel's folder handles: list a folder, descend a tree, remove a tree.

Nothing here resolves a name itself: every step is a handle method of `kernel.py` (`open_dir`
refuses links and non-folders, `open_parent` climbs only to the very folder entered on the way down
and confirms it is still inside the root, `rmdir`/`unlink` act on one name in an open folder), so
confinement is audited there. What lives here is the order of the steps: iterative, at any depth,
one descriptor held at a time.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Callable, Generator, List, Optional, Tuple

from ._kernel import Dir, Identity
from .problems import FsProblem, OsFailure, os_failure, problem_of


def scan(folder: Dir) -> List[Tuple[str, os.stat_result]]:
    """Every name in an open folder with its lstat; names gone before their lstat are left out."""
    found = []
    try:
        with folder.scandir() as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
    except OSError as error:
        raise os_failure(error) from None
    return found


class Visit:
    """A folder met by `descend`: open, `parts` below where the descent started, its entries."""

    __slots__ = ("dir", "parts", "entries", "_below", "_identity")

    def __init__(self, folder: Dir, parts: Tuple[str, ...], entries: List[Tuple[str, os.stat_result]]) -> None:
        self.dir = folder
        self.parts = parts
        self.entries = entries
        self._below = [name for name, info in reversed(entries) if stat.S_ISDIR(info.st_mode)]
        self._identity: Identity = (0, 0)


def descend(start: Dir, enter: Callable[[Tuple[str, ...], str], bool]) -> Generator[Visit, None, None]:
    """Every folder below `start`, then `start`, each after the folders inside it, each open.

    Iterative and at any depth: one descriptor is held at a time (plus `start`), and the way up is
    `open_parent`, which gives only the very folder (device, inode) entered on the way down, still
    inside the root; if the tree was moved meanwhile, the descent stops (OsFailure or Escaped).
    Folders that `enter(parts, name)` declines, links, and folders that cannot be opened are not
    entered. The consumer may remove names in the folder it is given; it must not close it.
    """
    top = Visit(start, (), scan(start))
    stack = [top]
    try:
        while stack:
            here = stack[-1]
            if here._below:
                name = here._below.pop()
                if not enter(here.parts, name):
                    continue
                try:
                    child_dir = here.dir.open_dir(name)
                except FsProblem:
                    continue
                try:
                    child = Visit(child_dir, here.parts + (name,), scan(child_dir))
                    child._identity = here.dir.identity()
                except (FsProblem, OSError):
                    child_dir.close()
                    continue
                if here is not top:
                    here.dir.close()
                stack.append(child)
                continue
            yield here
            stack.pop()
            if stack and stack[-1] is not top:
                stack[-1].dir = here.dir.open_parent(here._identity)
            if here is not top:
                here.dir.close()
    finally:
        for visit in stack:
            if visit is not top:
                visit.dir.close()


def remove(
    folder: Dir, name: str, info: os.stat_result, keep: Optional[Callable[[os.stat_result], bool]] = None
) -> None:
    """Remove `name` (lstat'ed as `info`): a folder with all it holds, at any depth; a link itself.

    `keep(info)` marks files that must not be removed (D-MODE): meeting one stops the removal with
    OsFailure("protected"); what was removed before stays removed (folder deletes are not atomic).
    """
    try:
        if stat.S_ISDIR(info.st_mode):
            with folder.open_dir(name) as child:
                for visit in descend(child, lambda parts, name: True):
                    for entry, entry_info in visit.entries:
                        if stat.S_ISDIR(entry_info.st_mode):
                            visit.dir.rmdir(entry)
                        elif keep is not None and keep(entry_info):
                            raise OsFailure("protected")
                        else:
                            visit.dir.unlink(entry)
            folder.rmdir(name)
        else:
            folder.unlink(name)
    except OSError as error:
        raise problem_of(error) from None
