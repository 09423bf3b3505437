"""The moves log: uses of paths that renames made, appended to one file instead of a record per path.

A rename counts as a use of the new path (D-EXPIRY) and carries the records of what it moves. Made as
per-path records (`access.py`), that is a new file per rename, whose creation and the metadata it adds
to the next journal commit of the filesystem cost as much as the rename itself. Here it is one line
appended to `.refmem/access/moves`:

    refmem-moves 1 <bytes after the last compaction>      (first line, written by compaction)
    [1795631368289533757,"/memories/new/name.md"]          a use: the path, at this time (ns)
    [null,"/memories/old/name.md"]                         forget: the path has no use any more

The log is replayed in order (a use keeps the later time, a forget drops the path) and read beside the
records: a path's last recorded use is the later of its record and its entry here. Appends happen
under the root's write lock (renames and deletes hold it), so lines never interleave, and a line is
one `write` of a few dozen bytes, so a killed process leaves whole lines. A torn line (a power loss)
is skipped. Past twice its size after the last compaction (and at least `COMPACT_BYTES`), the log is
rewritten with one line per path still used (temp file and rename, under the lock), so it stays
proportional to the paths renamed and still there; `prune` compacts it to the files that remain.
Like the records, it is not fsynced: a power loss may lose its last uses (SECURITY.md).
"""

from __future__ import annotations

import json
import os
import re
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from . import _kernel as kernel
from . import problems
from ._bookkeeping import MOVES_NAME
from ._changes import json_string
from ._handles import FILE_MODE, READ_FLAGS
from ._kernel import Dir
from ._records import remove_record
from ._single import open_single
from .paths import ROOT

COMPACT_BYTES = 64 * 1024  # the log is compacted past this size (or twice its last compacted size)
READ_LIMIT = 16 * 1024 * 1024  # a log is read this far at most: a planted huge file is not read whole
_HEADER = re.compile(rb"refmem-moves 1 ([0-9]{1,12})\n")
_PLAIN = re.compile(rb'\[(null|0|[1-9][0-9]{0,19}),"([\x20\x21\x23-\x5b\x5d-\x7e]*)"\]')
MoveRecord = Tuple[Optional[int], str]  # (time in ns, or None to forget; virtual path)
_ROOT_SLASH = (ROOT + "/").encode("ascii")


def encode(entries: Iterable[MoveRecord]) -> bytes:
    return "".join(f"[{'null' if when is None else when},{json_string(path)}]\n" for when, path in entries).encode(
        "ascii"
    )


def _decode(line: bytes) -> Optional[MoveRecord]:
    plain = _PLAIN.fullmatch(line)  # what `encode` writes for a plain path: read without the JSON parser
    if plain is not None:
        when, text = plain.groups()
        path = text.decode("ascii")
        if not (path == ROOT or path.startswith(ROOT + "/")):
            return None
        return (None if when == b"null" else int(when)), path
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)):
        return None
    when, path = value
    if not (path == ROOT or path.startswith(ROOT + "/")):
        return None
    if when is None or (isinstance(when, int) and not isinstance(when, bool) and when >= 0):
        return when, path
    return None


def replay(data: bytes) -> Dict[str, int]:
    """The last use (ns) of every path the log `data` still holds."""
    uses: Dict[str, int] = {}
    plain = _PLAIN.fullmatch
    for line in data.split(b"\n"):
        if not line.startswith(b"["):
            continue  # the header, a torn or a foreign line
        found = plain(line)  # what `encode` writes for a plain path, inline: compaction replays every line
        if found is not None and found.group(2).startswith(_ROOT_SLASH):
            when_text, path_bytes = found.groups()
            when: Optional[int] = None if when_text == b"null" else int(when_text)
            path = path_bytes.decode("ascii")
        else:
            entry = _decode(line)
            if entry is None:
                continue
            when, path = entry
        if when is None:
            uses.pop(path, None)
        elif when > uses.get(path, -1):
            uses[path] = when
    return uses


def read(folder: Dir) -> Dict[str, int]:
    """The uses in the log of the record folder `folder`; none when there is no log (or something else
    holds its name)."""
    try:
        fd, info = open_single(folder, MOVES_NAME, READ_FLAGS)
    except problems.FsProblem:
        return {}
    try:
        return replay(os.read(fd, min(info.st_size, READ_LIMIT)))
    except OSError as error:
        raise problems.os_failure(error) from None
    finally:
        os.close(fd)


def size(folder: Dir) -> int:
    """The log's size in bytes (0 when there is none): whether a forget has anything to forget."""
    info = folder.lstat(MOVES_NAME)
    return 0 if info is None else info.st_size


def append(folder: Dir, entries: List[MoveRecord], create: bool = True) -> None:
    """Append `entries` in one write (call under the root's write lock); compact when the log has grown
    past its bound. Without `create`, nothing is written when there is no log (a forget with nothing to
    forget). Anything but a single-link regular file at the log's name is replaced, never written through."""
    data = encode(entries)
    flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0)
    try:
        fd, info = open_single(folder, MOVES_NAME, flags, FILE_MODE)
    except problems.Missing:
        if create:
            raise
        return
    except (problems.IsLink, problems.NotRegular, problems.HardLinked):
        remove_record(folder, MOVES_NAME)
        fd, info = open_single(folder, MOVES_NAME, flags | os.O_CREAT, FILE_MODE)
    try:
        written = os.write(fd, data)
        grown = info.st_size + written
        compacted = _compacted_size(fd) if grown > COMPACT_BYTES else 0
    except OSError as error:
        raise problems.os_failure(error) from None
    finally:
        os.close(fd)
    if grown > max(COMPACT_BYTES, 2 * compacted):
        compact(folder)


def _compacted_size(fd: int) -> int:
    os.lseek(fd, 0, os.SEEK_SET)
    match = _HEADER.match(os.read(fd, 64))
    return 0 if match is None else int(match.group(1))


def compact(folder: Dir, keep: Optional[Callable[[str], bool]] = None) -> None:
    """Rewrite the log with one use per path (those `keep` accepts), all or nothing (temp file and rename).
    Call under the root's write lock."""
    uses = read(folder)
    entries = [(uses[path], path) for path in sorted(uses) if keep is None or keep(path)]
    body = encode(entries)
    header = f"refmem-moves 1 {len(body)}\n".encode("ascii")
    temp = kernel.write_temp(folder, header + body, FILE_MODE, sync=False)
    kernel.replace(folder, temp, MOVES_NAME)
