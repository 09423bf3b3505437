"""Whether a path lies on a network filesystem, where SQLite's file locks cannot be trusted.

SQLite's documentation warns that POSIX advisory locks are broken or missing on many network filesystems
(NFS, SMB/CIFS, FUSE mounts of remote hosts), and that WAL needs shared memory that only one host can see:
two hosts writing one database there corrupt it. The SQLite store refuses such a database instead. The
decision is pure (`filesystem_type`, `is_network`) over the text of `/proc/self/mountinfo`, so it is tested
without a network mount; where there is no mountinfo (not Linux), nothing is refused.
"""

from __future__ import annotations

import os
import re
from typing import Optional, Tuple

MOUNTINFO = "/proc/self/mountinfo"

NETWORK_TYPES = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "ncpfs", "afs", "coda", "9p", "ceph", "glusterfs",
        "lustre", "gpfs", "beegfs", "orangefs", "davfs", "sshfs", "virtiofs",
    }
)
"""Filesystem types whose locks may not reach every host using the file (mountinfo's type field)."""
NETWORK_FUSE = frozenset(
    {"sshfs", "glusterfs", "s3fs", "gcsfuse", "rclone", "davfs2", "goofys", "juicefs", "cephfs", "moosefs", "lizardfs"}
)
"""FUSE filesystems (`fuse.NAME`, or `fuse.NAME`'s subtype) that are remote."""

_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as octal escapes (\\040 ...)."""
    return _ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), field)


def _mounts(mountinfo: str) -> Tuple[Tuple[str, str], ...]:
    """(mount point, filesystem type) of every well-formed line."""
    found = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split(" ")
        if after and after[0]:
            found.append((_unescape(fields[4]), after[0]))
    return tuple(found)


def _within(path: str, mount: str) -> bool:
    return mount == "/" or path == mount or path.startswith(mount.rstrip("/") + "/")


def filesystem_type(path: str, mountinfo: str) -> Optional[str]:
    """The type of the filesystem holding the absolute, resolved `path`: that of the last-listed mount whose
    mount point is the longest one above it (a later mount over the same point hides the earlier one)."""
    best: Optional[Tuple[int, str]] = None
    for mount, kind in _mounts(mountinfo):
        if _within(path, mount) and (best is None or len(mount) >= best[0]):
            best = (len(mount), kind)
    return None if best is None else best[1]


def is_network(kind: Optional[str]) -> bool:
    """Whether a filesystem type is one where SQLite's locking is unreliable."""
    if kind is None:
        return False
    kind = kind.lower()
    if kind in NETWORK_TYPES or kind.startswith("nfs"):
        return True
    if kind.startswith("fuse."):
        return kind[len("fuse.") :] in NETWORK_FUSE
    return False


def network_type_of(path: str) -> Optional[str]:
    """The network filesystem type `path` lies on, or None (local, or no mountinfo to tell)."""
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as mountinfo:
            text = mountinfo.read()
    except OSError:
        return None
    kind = filesystem_type(os.path.realpath(path), text)
    return kind if is_network(kind) else None
