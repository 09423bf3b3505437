"""The harness's one way to read, compare and remove a host tree that a backend under test may have shaped.

A backend is hostile to the harness too: after a case its root (and, if it escaped, the folders around it) can
hold anything, a sparse 8 GiB file, a FIFO where a file was, a link where a folder was, a tree thousands of
levels deep, millions of entries. So every read here is bounded and never follows a link:

- folders are entered from an open descriptor of their parent (`O_DIRECTORY | O_NOFOLLOW`), never by a path
  that could pass through a link planted on the way; a file is opened the same way with `O_NONBLOCK` (a FIFO
  is never opened: its kind comes from `lstat` first, and the open descriptor is checked with `fstat`);
- a file's bytes are read in chunks and hashed (sha256) only where a check needs them (`wanted`), up to
  `HASH_LIMIT`; the first `HEAD_BYTES` are kept for messages, the whole file only up to `KEEP_BYTES`;
- at most `MAX_ENTRIES` entries and `MAX_DEPTH` levels are read; a tree beyond that is marked `truncated`;
- one read keeps at most `KEEP_TOTAL` bytes of whole files and hashes at most `HASH_TOTAL`, over the whole tree
  (not per file): what the budget leaves unread is counted (`Read.unread`) for the caller to report. A run holds
  a handful of reads at a time, so its memory is bounded by the run, not by what a backend left behind.

Nothing here imports the code under test (`refmem`): the judge does not lean on what it judges. Standard
library only (the fuzzer imports it inside its harness).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import secrets
import stat
from typing import Callable, Dict, Iterator, List, Optional, Tuple

FILE, DIR, LINK, OTHER = "file", "dir", "symlink", "other"

HEAD_BYTES = 4096
"""Bytes of a file kept for messages ("a file holding ...")."""
KEEP_BYTES = 1 << 20
"""Files up to this size are kept whole (a final-state diff shows them)."""
HASH_LIMIT = 64 << 20
"""Files larger than this are never read: they are compared by size, identity and modification time."""
READ_CHUNK = 1 << 20
MAX_ENTRIES = 200_000
"""Entries read from one tree at most; more and the tree is marked truncated."""
MAX_DEPTH = 4096
"""Levels entered at most (each holds a descriptor while its children are read)."""
KEEP_TOTAL = 64 << 20
"""Bytes of whole files one read keeps at most, over all its files: 2,000 files of 1 MiB (sparse, so free to
make) would otherwise be held whole, twice over where a check compares two reads."""
HASH_TOTAL = 1 << 30
"""Bytes one read hashes at most, over all its files; the files beyond are compared by size, identity and
modification time, and counted in `Read.unread`."""

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC


@dataclasses.dataclass(frozen=True)
class Node:
    """One entry of a tree, as `lstat` and (for a file, where wanted) its bytes show it."""

    kind: str
    mode: int = 0
    """Permission bits; for OTHER the file type bits (a FIFO, a socket, a device)."""
    size: int = 0
    target: str = ""
    """A link's text."""
    digest: Optional[str] = None
    """sha256 of a file's bytes, when they were read (None: not wanted, unreadable or over HASH_LIMIT)."""
    head: bytes = b""
    data: Optional[bytes] = dataclasses.field(default=None, repr=False)
    """The whole file, when it was read and is at most KEEP_BYTES."""
    unreadable: str = ""
    """Why a wanted file could not be read (its mode, say)."""
    nlink: int = dataclasses.field(default=1, compare=False)
    identity: Tuple[int, int] = dataclasses.field(default=(0, 0), compare=False)
    mtime_ns: int = dataclasses.field(default=0, compare=False)

    def text(self, limit: int = HEAD_BYTES) -> str:
        """What the file holds, for a message (its head, decoded leniently)."""
        shown = self.data if self.data is not None else self.head
        return shown[:limit].decode("utf-8", "replace")


Tree = Dict[str, Node]
"""POSIX relative path -> Node, sorted by path."""


@dataclasses.dataclass
class Read:
    """A tree as read: its entries and whether the bounds cut it short."""

    tree: Tree
    truncated: bool = False
    total_bytes: int = 0
    """Sum of the sizes of its regular files."""
    unread: int = 0
    """Files a check wanted the bytes of that the read's budget (KEEP_TOTAL, HASH_TOTAL) left unread or not
    kept whole: a caller reports them (never a silent pass)."""
    unread_bytes: int = 0

    def budget_note(self) -> str:
        """What the budget left unread, as a finding's message; empty when nothing was."""
        if not self.unread:
            return ""
        return (f"{self.unread} files ({self.unread_bytes} bytes) were not read whole: the tree holds more than the "
                f"harness reads in one look ({KEEP_TOTAL >> 20} MiB kept, {HASH_TOTAL >> 20} MiB hashed); they "
                "were compared by size, identity and modification time only")


@dataclasses.dataclass
class _Budget:
    """What one read may still keep whole and hash."""

    keep: int
    hash: int


def same(before: Optional[Node], after: Optional[Node]) -> bool:
    """Whether an entry is unchanged: kind, mode, link text, and for a file its bytes (by digest when both were
    read; by size, identity and modification time when either was not)."""
    if before is None or after is None:
        return before is after
    if before.kind != after.kind or before.mode != after.mode or before.target != after.target:
        return False
    if before.kind != FILE:
        return True
    if before.size != after.size:
        return False
    if before.digest is not None and after.digest is not None:
        return before.digest == after.digest
    return before.identity == after.identity and before.mtime_ns == after.mtime_ns


def holds(node: Optional[Node], data: bytes) -> bool:
    """Whether `node` is a regular file holding exactly `data` (read with `want_all` or a `wanted` naming it)."""
    if node is None or node.kind != FILE or node.size != len(data):
        return False
    if node.data is not None:
        return node.data == data
    return node.digest == hashlib.sha256(data).hexdigest()


def describe(node: Optional[Node], limit: int = 120) -> str:
    """An entry in words, for a finding's message (a file's text drawn with its invisible characters)."""
    if node is None:
        return "nothing"
    if node.kind == FILE:
        from .visible import inline

        if node.unreadable:
            return f"a file of {node.size} bytes that could not be read ({node.unreadable})"
        if node.digest is None and node.data is None and node.size:
            return f"a file of {node.size} bytes"
        text = inline(node.text())
        more = "" if node.data is not None or node.size <= len(node.head) else f"... ({node.size} bytes)"
        return "a file holding " + (text[:limit] + ("..." if len(text) > limit else "")) + more
    if node.kind == DIR:
        return "a folder"
    if node.kind == LINK:
        return f"a symbolic link to {node.target[:limit]}"
    return "a special file"


Wanted = Callable[[str, int], bool]
"""(relative path, size) -> whether a file's bytes are needed (hashed, head kept)."""


def want_all(path: str, size: int) -> bool:
    return True


def want_none(path: str, size: int) -> bool:
    return False


def wanted_like(before: Tree) -> Wanted:
    """Bytes are needed only to tell whether a file that was there with the same size changed."""

    def wanted(path: str, size: int) -> bool:
        node = before.get(path)
        return node is not None and node.kind == FILE and node.size == size and node.digest is not None

    return wanted


def _read_file(
    parent: int, name: str, info: os.stat_result, keep: bool = True
) -> Tuple[Optional[str], bytes, Optional[bytes], str]:
    """(digest, head, whole or None, why unreadable) of a regular file opened from its folder's descriptor;
    `keep`: the whole file may be kept (small enough, and the read's budget allows)."""
    if info.st_size > HASH_LIMIT:
        return None, b"", None, ""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
    except OSError as exc:
        return None, b"", None, exc.strerror or "cannot open"
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            return None, b"", None, "it changed while it was read"
        digest = hashlib.sha256()
        head = b""
        kept: Optional[List[bytes]] = [] if keep and opened.st_size <= KEEP_BYTES else None
        total = 0
        while total <= HASH_LIMIT:
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            digest.update(chunk)
            if len(head) < HEAD_BYTES:
                head += chunk[: HEAD_BYTES - len(head)]
            if kept is not None:
                kept.append(chunk)
                if total > KEEP_BYTES:
                    kept = None
        if total > HASH_LIMIT:
            return None, head, None, ""
        return digest.hexdigest(), head, b"".join(kept) if kept is not None else None, ""
    except OSError as exc:
        return None, b"", None, exc.strerror or "cannot read"
    finally:
        os.close(fd)


def _node(
    parent: int,
    name: str,
    relative: str,
    wanted: Wanted,
    budget: Optional[_Budget] = None,
    result: Optional[Read] = None,
) -> Optional[Tuple[Node, os.stat_result]]:
    try:
        info = os.lstat(name, dir_fd=parent)
    except OSError:
        return None  # gone meanwhile
    mode = info.st_mode
    common = {"nlink": info.st_nlink, "identity": (info.st_dev, info.st_ino), "mtime_ns": info.st_mtime_ns}
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(name, dir_fd=parent)
        except OSError:
            target = ""
        return Node(LINK, 0, info.st_size, target, **common), info  # type: ignore[arg-type]
    if stat.S_ISDIR(mode):
        return Node(DIR, stat.S_IMODE(mode), **common), info  # type: ignore[arg-type]
    if stat.S_ISREG(mode):
        digest, head, data, why = None, b"", None, ""
        if wanted(relative, info.st_size):
            size = info.st_size
            hashed = budget is None or size <= budget.hash
            keep = budget is None or size <= budget.keep
            if hashed:
                digest, head, data, why = _read_file(parent, name, info, keep)
            if budget is not None and result is not None:
                budget.hash -= size if hashed else 0
                budget.keep -= len(data) if data is not None else 0
                if not hashed or (not keep and size <= KEEP_BYTES):
                    result.unread += 1
                    result.unread_bytes += size
        node = Node(FILE, stat.S_IMODE(mode), info.st_size, "", digest, head, data, why, **common)  # type: ignore[arg-type]
        return node, info
    return Node(OTHER, stat.S_IFMT(mode), info.st_size, **common), info  # type: ignore[arg-type]


def open_folder(path: str) -> int:
    """A descriptor of the folder `path`, whose last name must not be a link (its parents are the caller's)."""
    return os.open(path, _DIR_FLAGS)


def read(
    top: str,
    wanted: Wanted = want_all,
    skip: Callable[[str], bool] = lambda relative: False,
    enter: Callable[[str], bool] = lambda relative: True,
    max_entries: int = MAX_ENTRIES,
    keep_total: int = KEEP_TOTAL,
    hash_total: int = HASH_TOTAL,
) -> Read:
    """Every entry below the folder `top`, by relative path; folders are entered (unless `enter` says no),
    links are not followed. `skip(relative)` leaves an entry out (and does not enter it). A `top` that is not
    a folder (gone, or a link) reads as an empty tree.
    """
    result = Read({})
    budget = _Budget(keep_total, hash_total)
    try:
        top_fd = open_folder(top)
    except OSError:
        return result
    stack: List[Tuple[int, str, Iterator[str]]] = []
    try:
        stack.append((top_fd, "", iter(_names(top_fd))))
        while stack:
            fd, prefix, names = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                if fd != top_fd:
                    os.close(fd)
                continue
            relative = prefix + name
            if skip(relative):
                continue
            if len(result.tree) >= max_entries:
                result.truncated = True
                break
            found = _node(fd, name, relative, wanted, budget, result)
            if found is None:
                continue
            node, _info = found
            result.tree[relative] = node
            if node.kind == FILE:
                result.total_bytes += node.size
            if node.kind != DIR or not enter(relative):
                continue
            if len(stack) >= MAX_DEPTH:
                result.truncated = True
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # replaced by a link meanwhile, or unreadable
            stack.append((child, relative + "/", iter(_names(child))))
    finally:
        for fd, _prefix, _left in stack:
            if fd != top_fd:
                os.close(fd)
        os.close(top_fd)
    result.tree = dict(sorted(result.tree.items()))
    return result


def read_bytes(top: str, relative: str, limit: int = KEEP_BYTES) -> Optional[bytes]:
    """The bytes of the regular file `relative` below the folder `top`, or None when there is none (a name on the
    way is a link or not a folder, the file is a link, a FIFO or larger than `limit`). Each folder is entered
    from its parent's descriptor, as `read` does; nothing is followed and a FIFO is never opened."""
    names = [name for name in relative.split("/") if name]
    if not names or any(name in (".", "..") for name in names):
        return None
    opened: List[int] = []
    try:
        opened.append(open_folder(top))
        for name in names[:-1]:
            opened.append(os.open(name, _DIR_FLAGS, dir_fd=opened[-1]))
        info = os.lstat(names[-1], dir_fd=opened[-1])
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        _digest, _head, data, _why = _read_file(opened[-1], names[-1], info)
        return data if data is not None and len(data) <= limit else None
    except OSError:
        return None
    finally:
        for fd in opened:
            os.close(fd)


def _names(fd: int) -> List[str]:
    try:
        with os.scandir(fd) as entries:
            return sorted(entry.name for entry in entries)
    except OSError:
        return []


def changes(before: Tree, after: Tree, label: str = "") -> List[Tuple[str, Optional[Node], Optional[Node]]]:
    """(path, before, after) for every entry that appeared, went, or changed (`same`), by path."""
    return [
        (label + path, before.get(path), after.get(path))
        for path in sorted(set(before) | set(after))
        if not same(before.get(path), after.get(path))
    ]


Fingerprint = Dict[str, Tuple[object, ...]]


def fingerprint(top: str, max_entries: int = MAX_ENTRIES) -> Fingerprint:
    """Metadata of every entry below `top` (no byte read): cheap to take, and any write changes it."""
    read_result = read(top, want_none, max_entries=max_entries)
    return {
        path: (node.kind, node.mode, node.identity, node.size, node.mtime_ns, node.nlink, node.target)
        for path, node in read_result.tree.items()
    }


# --- removal ----------------------------------------------------------------------------------


def remove(path: str) -> None:
    """Delete the tree at `path` whatever it holds and however deep, never following a link: folders are
    entered from their parent's descriptor and emptied with `unlinkat`; permissions a test took away are given
    back first; a chain deeper than MAX_DEPTH is cut by moving its bottom up beside the top and removing that
    afterwards. A `path` that is a link or a file is unlinked; one that is not there is nothing to do."""
    parent, name = os.path.split(os.path.abspath(path))
    try:
        parent_fd = open_folder(parent)
    except OSError:
        return
    try:
        remove_in(parent_fd, name)
    finally:
        os.close(parent_fd)


def remove_in(parent_fd: int, name: str) -> None:
    """Delete the entry `name` of the open folder `parent_fd` (see `remove`)."""
    pending = [name]
    while pending:
        current = pending.pop()
        if not _folder_or_unlink(parent_fd, current):
            continue
        pending.extend(_empty(parent_fd, current))
        with contextlib.suppress(OSError):
            os.rmdir(current, dir_fd=parent_fd)


def _folder_or_unlink(parent_fd: int, name: str) -> bool:
    """True when `name` (in `parent_fd`) is a folder, to empty and remove; anything else is unlinked (or was gone)."""
    try:
        info = os.lstat(name, dir_fd=parent_fd)
    except OSError:
        return False
    if stat.S_ISDIR(info.st_mode):
        return True
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=parent_fd)
    return False


def _empty(parent_fd: int, name: str) -> List[str]:
    """Empty the folder `name` (in `parent_fd`) depth first; returns the names of chains moved up beside it."""
    moved: List[str] = []
    with contextlib.suppress(OSError):
        os.chmod(name, 0o700, dir_fd=parent_fd, follow_symlinks=False)
    try:
        top = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        return moved
    # (descriptor, the name it was opened by in the folder below it on the stack, names left to visit)
    stack: List[Tuple[int, str, Iterator[str]]] = [(top, name, iter(_names(top)))]
    try:
        while stack:
            fd, _own, names = stack[-1]
            child = next(names, None)
            if child is None:
                stack.pop()
                os.close(fd)
                if stack:
                    with contextlib.suppress(OSError):
                        os.rmdir(_own, dir_fd=stack[-1][0])
                continue
            if not _folder_or_unlink(fd, child):
                continue
            if len(stack) >= MAX_DEPTH:
                away = f".hosttree-deep-{secrets.token_hex(8)}"
                with contextlib.suppress(OSError):
                    os.rename(child, away, src_dir_fd=fd, dst_dir_fd=parent_fd)
                    moved.append(away)
                continue
            with contextlib.suppress(OSError):
                os.chmod(child, 0o700, dir_fd=fd, follow_symlinks=False)
            try:
                opened = os.open(child, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue
            stack.append((opened, child, iter(_names(opened))))
    finally:
        for fd, _own, _left in stack:
            with contextlib.suppress(OSError):
                os.close(fd)
    return moved
