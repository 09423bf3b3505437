"""Read the root's tree from disk in the model's terms (never following a link)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Tuple

from .model import DIR, OPAQUE, Node, Tree, file_node

HANDLER_PREFIX = ".refmem"
MAX_READ = 2 << 20


def read_tree(root: Path) -> Tree:
    tree: Tree = {(): DIR}
    _walk(str(root), (), tree)
    return tree


def _walk(directory: str, parts: Tuple[str, ...], tree: Tree) -> None:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return
    for name in names:
        if name.startswith(HANDLER_PREFIX):
            continue
        full = os.path.join(directory, name)
        key = parts + (name,)
        try:
            info = os.lstat(full)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            tree[key] = DIR
            _walk(full, key, tree)
        elif stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
            tree[key] = _read_file(full)
        else:
            tree[key] = OPAQUE


def _read_file(full: str) -> Node:
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return OPAQUE
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_READ)
    try:
        return file_node(data.decode("utf-8"))
    except UnicodeDecodeError:
        return OPAQUE
