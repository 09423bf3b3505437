"""Read the root's tree from disk in the model's terms, through the harness's one tree reader (hosttree: bounded,
from folder descriptors, never following a link). The handler's own names (`.refmem...`, at any level) are left
out; a link, a special file, a file with more than one link, or one that cannot be read or decoded is OPAQUE."""

from __future__ import annotations

from pathlib import Path

from refmem_harness import hosttree
from refmem_harness.model import DIR, OPAQUE, Node, Tree, file_node

HANDLER_PREFIX = ".refmem"


def read_model_tree(root: Path) -> Tree:
    tree: Tree = {(): DIR}
    found = hosttree.read(str(root), skip=lambda relative: relative.rpartition("/")[2].startswith(HANDLER_PREFIX))
    for relative, entry in found.tree.items():
        tree[tuple(relative.split("/"))] = _node(entry)
    return tree


def _node(entry: hosttree.Node) -> Node:
    if entry.kind == hosttree.DIR:
        return DIR
    if entry.kind != hosttree.FILE or entry.nlink != 1 or entry.data is None:
        return OPAQUE
    try:
        return file_node(entry.data.decode("utf-8"))
    except UnicodeDecodeError:
        return OPAQUE
