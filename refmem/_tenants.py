"""A tenant's own memory root below a directory (D-STORE-TENANT-FS): only a handler made with `tenant=` needs it, so
a vendored copy may leave this file out (D-VENDOR-SET)."""

from __future__ import annotations

import os

from . import _kernel as kernel
from . import problems
from ._bookkeeping import BOOKKEEPING_DIR, TENANTS_DIR
from .problems import Missing, OsFailure


def open_tenant(parent: kernel.RootDir, tenant: str) -> kernel.RootDir:
    """`.refmem/tenants/<tenant>` below `parent`, made if missing, opened as a root of its own.

    The folder is reached by the parent's walk (never through a link, never outside the parent),
    then opened by its host path as a root and accepted only if it is that very folder (device and
    inode): a folder swapped for a link in between is refused, not followed. Anything but folders
    on the way is OsFailure("bookkeeping").
    """
    try:
        with parent.walk((BOOKKEEPING_DIR, TENANTS_DIR, tenant), create=True) as folder:
            expected = folder.identity()
    except (problems.ParentNotDir, problems.Escaped, Missing):
        raise OsFailure("bookkeeping") from None
    opened = kernel.RootDir(os.path.join(parent.real, BOOKKEEPING_DIR, TENANTS_DIR, tenant), parent.portable, False)
    try:
        if opened.top.identity() != expected:
            raise OsFailure("bookkeeping")
    except BaseException:
        opened.close()
        raise
    return opened
