"""The Linux system calls the walk needs that Python's `os` does not wrap, through `ctypes`.

Each loader returns a callable, or None where the call is missing (another OS, an old kernel, a
seccomp filter that refuses it): the kernel then takes its portable path. Nothing here decides
anything; `kernel.py` does.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Callable, Optional, cast

AT_FDCWD = -100
RENAME_NOREPLACE = 1
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (the unified syscall table)
# Never leave the starting folder, never follow any link (nor /proc's magic links) on the way.
RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH = 0x02, 0x04, 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _libc_function(name: str) -> Optional[Callable[..., int]]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return cast(Callable[..., int], getattr(ctypes.CDLL(None, use_errno=True), name))
    except (OSError, AttributeError):
        return None


def load_openat2(flags: int) -> Optional[Callable[[int, bytes], int]]:
    """`openat2(dir_fd, path, flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`:
    a descriptor, or -1 with the reason in `ctypes.get_errno()`."""
    syscall = _libc_function("syscall")
    if syscall is None:
        return None
    syscall.restype = ctypes.c_long  # type: ignore[attr-defined]
    how = _OpenHow(flags, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    pointer, size = ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how))

    def openat2(dir_fd: int, path: bytes) -> int:
        return int(syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dir_fd), ctypes.c_char_p(path), pointer, size))

    openat2.how = how  # type: ignore[attr-defined]  # kept alive as long as the callable
    probe = openat2(AT_FDCWD, b".")
    if probe < 0:
        return None
    os.close(probe)
    return openat2


def load_renameat2() -> Optional[Callable[..., int]]:
    """`renameat2(olddirfd, oldpath, newdirfd, newpath, flags)`: 0, or -1 with `ctypes.get_errno()`."""
    function = _libc_function("renameat2")
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]  # type: ignore[attr-defined]
    function.restype = ctypes.c_int  # type: ignore[attr-defined]
    return function


def fd_path(fd: int) -> Optional[str]:
    """The host path an open descriptor has now (Linux /proc, macOS F_GETPATH); None if unknown."""
    if sys.platform.startswith("linux"):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
    try:
        import fcntl

        getpath = getattr(fcntl, "F_GETPATH", None)
        if getpath is None:
            return None
        raw = fcntl.fcntl(fd, getpath, b"\0" * 1024)
        return os.fsdecode(raw.split(b"\0", 1)[0])
    except (ImportError, OSError):
        return None
