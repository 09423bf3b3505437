"""A deliberately slow memory backend: the cost oracle's tests must find its planted quadratic.

`view` of a file numbers each line by counting the newlines from the start of the file up to that
line, so a file of n short lines costs about n * n / 2 character comparisons: harmless on a page of
notes, seconds on a megabyte of `a\\n`. Everything else is linear, and careful: names are checked
one by one, nothing is followed through a symbolic link, only regular files with one link are read
or edited, and messages never show a host path, so the only thing the fuzzer can report is the cost.
Never use this as a real backend.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any, List

from planted_support import PlantedBackend, Refused

MAX_FILE_BYTES = 1 << 20
MAX_ENTRIES = 1000


class QuadraticMemory(PlantedBackend):
    def __init__(self, root: Path) -> None:
        self.root = str(root)

    def _names(self, path: Any) -> List[str]:
        if not isinstance(path, str) or not (path == "/memories" or path.startswith("/memories/")):
            raise Refused("the path must be /memories or below it")
        names = [name for name in path[len("/memories") :].split("/") if name]
        for name in names:
            if name in (".", "..") or "\x00" in name or "\\" in name or "%" in name or len(name.encode()) > 255:
                raise Refused("a name in the path is not allowed")
        if len(names) > 16:
            raise Refused("the path is too deep")
        return names

    def _host(self, path: Any, parents: bool = False) -> str:
        """The host path, after checking that no folder on the way is a link or a file."""
        names = self._names(path)
        host = self.root
        for name in names[:-1]:
            host = os.path.join(host, name)
            try:
                info = os.lstat(host)
            except FileNotFoundError:
                if not parents:
                    raise Refused("the path does not exist") from None
                os.mkdir(host)
                continue
            if not stat.S_ISDIR(info.st_mode):
                raise Refused("a folder on the way is not a folder")
        return os.path.join(host, names[-1]) if names else host

    def _regular(self, host: str) -> os.stat_result:
        info = os.lstat(host)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise Refused("not a regular file")
        return info

    def _read(self, host: str) -> str:
        self._regular(host)
        fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1).decode("utf-8")

    def _write(self, host: str, text: str, new: bool) -> None:
        data = text.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise Refused("the file would be too large")
        flags = os.O_WRONLY | os.O_NOFOLLOW | (os.O_CREAT | os.O_EXCL if new else os.O_TRUNC)
        fd = os.open(host, flags, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)

    # --- commands ----------------------------------------------------------------------------

    def _view(self, command: dict) -> str:
        host = self._host(command["path"])
        info = os.lstat(host)
        if stat.S_ISDIR(info.st_mode):
            return self._listing(host, command["path"])
        text = self._read(host)
        # The planted quadratic: each line's number is recounted from the start of the file.
        out, start = [], 0
        while start <= len(text):
            end = text.find("\n", start)
            end = len(text) if end == -1 else end
            number = text.count("\n", 0, start) + 1
            out.append(f"{number:6}\t{text[start:end]}")
            start = end + 1
        return "\n".join(out)

    def _listing(self, host: str, shown: str) -> str:
        lines = [f"Directory {shown.rstrip('/')}:"]
        for name in sorted(os.listdir(host))[:MAX_ENTRIES]:
            if not name.startswith("."):
                lines.append(name)
        return "\n".join(lines)

    def _create(self, command: dict) -> str:
        text = command["file_text"]
        if not isinstance(text, str):
            raise Refused("file_text must be a string")
        host = self._host(command["path"], parents=True)
        if host == self.root or os.path.lexists(host):
            raise Refused(f"File {command['path']} already exists")
        self._write(host, text, new=True)
        return f"File created successfully at: {command['path']}"

    def _str_replace(self, command: dict) -> str:
        old, new = command["old_str"], command["new_str"]
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            raise Refused("old_str and new_str must be strings, old_str not empty")
        host = self._host(command["path"])
        text = self._read(host)
        first = text.find(old)
        if first == -1 or text.find(old, first + 1) != -1:
            raise Refused("old_str must occur exactly once")
        self._write(host, text[:first] + new + text[first + len(old) :], new=False)
        return "The memory file has been edited."

    def _insert(self, command: dict) -> str:
        line, inserted = command["insert_line"], command["insert_text"]
        if not isinstance(line, int) or isinstance(line, bool) or not isinstance(inserted, str):
            raise Refused("insert_line must be an integer and insert_text a string")
        host = self._host(command["path"])
        lines = self._read(host).split("\n")
        if not 0 <= line <= len(lines):
            raise Refused("insert_line is out of range")
        lines.insert(line, inserted)
        self._write(host, "\n".join(lines), new=False)
        return f"The file {command['path']} has been edited."

    def _delete(self, command: dict) -> str:
        host = self._host(command["path"])
        if host == self.root:
            raise Refused("cannot delete the root")
        info = os.lstat(host)
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(host)  # never follows links inside
        else:
            os.unlink(host)
        return f"Successfully deleted {command['path']}"

    def _rename(self, command: dict) -> str:
        old = self._host(command["old_path"])
        new = self._host(command["new_path"], parents=True)
        if self.root in (old, new) or os.path.lexists(new):
            raise Refused("the destination exists")
        if (new + os.sep).startswith(old + os.sep):
            raise Refused("cannot move a folder into itself")
        os.lstat(old)
        os.rename(old, new)
        return f"Successfully renamed {command['old_path']} to {command['new_path']}"


def make(root: Path) -> QuadraticMemory:
    return QuadraticMemory(root)
