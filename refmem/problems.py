"""What a store reports: the kind of thing at a name, and problems, each with a `code`.

The kernel, the filesystem store and any other store (`store_protocol.Store`) raise these; the handler
turns each into a message through the code (`messages.py` holds every phrase). Kept apart from the
kernel so that the kernel file holds only what confinement depends on. Pure: nothing here touches
the filesystem.
"""

from __future__ import annotations

import errno
import stat
from typing import Dict, Optional

# What can stand at a name: the kinds a listing, a refusal or a message speaks of.
DIR, FILE, LINK, SPECIAL = "dir", "file", "link", "special"
_KIND_BY_FORMAT = {stat.S_IFDIR: DIR, stat.S_IFREG: FILE, stat.S_IFLNK: LINK}


def kind_of(mode: int) -> str:
    """The kind of thing an `st_mode` describes."""
    return _KIND_BY_FORMAT.get(stat.S_IFMT(mode), SPECIAL)


class FsProblem(Exception):
    """An outcome the caller turns into a result; `code` names it for the message table."""

    code = "fs"


class Missing(FsProblem):
    code = "missing"  # nothing there, or a path through something that is not a folder


class IsLink(FsProblem):
    code = "link"


class HardLinked(FsProblem):
    code = "hard_linked"  # a regular file with other names: its content may live outside the root


class Exists(FsProblem):
    code = "exists"


class Escaped(FsProblem):
    code = "escaped"  # the confinement check found a location outside the root


class NotRegular(FsProblem):
    """A FIFO, socket, device, or a folder where a file is needed; `kind` says which."""

    code = "not_regular"

    def __init__(self, kind: str = SPECIAL) -> None:
        super().__init__(kind)
        self.kind = kind


class ParentNotDir(FsProblem):
    """Creating below a non-folder: `depth` names lead to it."""

    code = "parent_not_dir"

    def __init__(self, depth: int) -> None:
        super().__init__(depth)
        self.depth = depth


class TooBig(FsProblem):
    """The file is larger than an edit may read (`size` bytes)."""

    code = "too_big"

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class Conflict(FsProblem):
    """A conditional write's precondition failed (D-STORE-HISTORY-WRITE): `found` is the SHA-256 of the content
    there, or None when no file is."""

    code = "conflict"

    def __init__(self, found: Optional[str]) -> None:
        super().__init__(found)
        self.found = found


class NoVersion(FsProblem):
    """A restore asked for a version of a path that is not kept (never was, or retention dropped it)."""

    code = "no_version"


class OsFailure(FsProblem):
    """The OS refused, or the tree changed under us; `code` is a key of messages.IO_REASONS."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


_CODE_BY_ERRNO: Dict[int, str] = {
    errno.ENOSPC: "no_space",
    errno.EDQUOT: "no_space",
    errno.EIO: "io",
    errno.EACCES: "denied",
    errno.EPERM: "denied",
    errno.EROFS: "read_only_fs",
}


def os_failure(error: OSError) -> OsFailure:
    """The OsFailure an unexpected OSError stands for (its errno picks the reason, never its text)."""
    return OsFailure(_CODE_BY_ERRNO.get(error.errno or 0, "os"))


def problem_of(error: OSError) -> FsProblem:
    """The problem an OSError from a call on one name stands for."""
    if isinstance(error, (FileNotFoundError, NotADirectoryError)):
        return Missing()
    if isinstance(error, FileExistsError):
        return Exists()
    if error.errno == errno.ELOOP:
        return IsLink()
    return os_failure(error)
