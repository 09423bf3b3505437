"""What a folder's view lists: decided here, once, for every store (D-VIEW-LIST-RULES).

A store answers one narrow question, `Store.children(path, keep, limit)`: the folders and regular files
directly in one folder whose names `keep` accepts, at most `limit` of them, and whether more were there.
Everything else a listing is, is decided here, above every store: which names are shown and entered
(not hidden, not `node_modules`, addressable), the cap, the order (by name, in code point order, depth
first), and that a folder which cannot be entered below the listed one is left out rather than failing
the view.
"""

from __future__ import annotations

import contextlib
from typing import Callable, ContextManager, List, Tuple

from .paths import VirtualPath
from .problems import DIR, Missing, OsFailure
from .store_protocol import Listed, Store

SKIPPED_NAME = "node_modules"  # never shown nor entered, like hidden names


def is_listed(name: str, addressable: Callable[[str], bool]) -> bool:
    """Whether a listing shows (and enters) a name found in a folder."""
    return not name.startswith(".") and name != SKIPPED_NAME and addressable(name)


def list_tree(
    store: Store, path: VirtualPath, depth: int, cap: int, addressable: Callable[[str], bool]
) -> Tuple[List[Listed], bool]:
    """Folders and regular files below the folder `path`, `depth` levels, depth first and sorted by name, at
    most `cap` of them, and whether more were left out. Which ones a capped folder gives is the store's
    (D-VIEW-LIST-CAP): each folder is asked only for as many as the cap leaves room for.

    Missing (or the store's refusal) when `path` is not a folder; a folder below it that cannot be entered
    (gone meanwhile, a link swapped in) is listed but not entered. A store with consistent reads
    (`reading()`, the database stores) answers the whole listing from one state.
    """
    found: List[Listed] = []
    truncated = False

    def keep(name: str) -> bool:
        return is_listed(name, addressable)

    def visit(folder: VirtualPath, prefix: Tuple[str, ...], level: int) -> None:
        nonlocal truncated
        try:
            batch, more = store.children(folder, keep, cap - len(found))
        except (Missing, OsFailure):
            if not prefix:
                raise
            return
        if more:
            truncated = True
        for name, kind, size in sorted(batch, key=_by_name):
            if len(found) >= cap:
                truncated = True
                return
            found.append(Listed(prefix + (name,), kind, size))
            if kind == DIR and level < depth:
                visit(VirtualPath(folder.parts + (name,)), prefix + (name,), level + 1)

    reading: Callable[[], ContextManager[None]] = getattr(store, "reading", contextlib.nullcontext)
    with reading():
        visit(VirtualPath(path.parts), (), 1)
    return found, truncated


def _by_name(child: Tuple[str, str, int]) -> str:
    return child[0]
