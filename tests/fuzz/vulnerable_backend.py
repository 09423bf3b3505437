"""A deliberately vulnerable memory backend: the fuzzer's tests must find its planted escape.

Two classic mistakes, both reachable through the tool's API:

1. the containment check compares string prefixes without a separator, so a root `.../memories`
   admits `.../memories_evil/...` (`/memories_evil/secret.txt` reads the sibling folder);
2. the checks run before percent-decoding, so `/memories/%2e%2e/outside/secret.txt` passes them and
   is decoded into a real `..` afterwards, which the operating system then follows.

`make` has both bugs; `make_percent_only` has only the second (its prefix check is correct), so a
test can show that each one is found on its own.

Everything else is careful (no host paths in messages, FIFOs are not opened), so that what the
fuzzer reports is the planted bug and not noise. Never use this as a real backend.
"""

from __future__ import annotations

import os
import shutil
import stat
import urllib.parse
from pathlib import Path
from typing import Any

from planted_support import PlantedBackend, Refused


class VulnerableMemory(PlantedBackend):
    def __init__(self, root: Path, separator_bug: bool = True) -> None:
        self.root = str(root)
        self.prefix = self.root if separator_bug else self.root + os.sep

    def _host(self, path: Any) -> str:
        if not isinstance(path, str) or not path.startswith("/memories"):
            raise Refused("the path must start with /memories")
        if ".." in path.split("/"):
            raise Refused("no .. allowed")
        host = os.path.normpath(self.root + path[len("/memories") :])
        if host != self.root and not host.startswith(self.prefix):  # without a separator: memories_evil passes
            raise Refused("the path escapes the memory directory")
        return urllib.parse.unquote(host)  # decoded after the checks: %2e%2e becomes a real ..

    def _view(self, command: dict) -> str:
        host = self._host(command["path"])
        info = os.stat(host)
        if stat.S_ISDIR(info.st_mode):
            names = sorted(name for name in os.listdir(host) if not name.startswith("."))
            return "\n".join([f"Directory {command['path']}:"] + names)
        if not stat.S_ISREG(info.st_mode):
            raise Refused("not a regular file")
        with open(host, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().split("\n")
        return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, 1))

    def _create(self, command: dict) -> str:
        host = self._host(command["path"])
        if os.path.lexists(host):
            raise Refused(f"File {command['path']} already exists")
        os.makedirs(os.path.dirname(host), exist_ok=True)
        with open(host, "x", encoding="utf-8") as handle:
            handle.write(command["file_text"])
        return f"File created successfully at: {command['path']}"

    def _str_replace(self, command: dict) -> str:
        host = self._host(command["path"])
        if not os.path.isfile(host):
            raise Refused("not a file")
        with open(host, encoding="utf-8") as handle:
            text = handle.read()
        old = command["old_str"]
        if not old or text.count(old) != 1:
            raise Refused("old_str must occur exactly once")
        with open(host, "w", encoding="utf-8") as handle:
            handle.write(text.replace(old, command["new_str"]))
        return "The memory file has been edited."

    def _insert(self, command: dict) -> str:
        host = self._host(command["path"])
        if not os.path.isfile(host):
            raise Refused("not a file")
        with open(host, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        line = command["insert_line"]
        if not isinstance(line, int) or not 0 <= line <= len(lines):
            raise Refused("bad insert_line")
        lines.insert(line, command["insert_text"])
        with open(host, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines))
        return f"The file {command['path']} has been edited."

    def _delete(self, command: dict) -> str:
        host = self._host(command["path"])
        if host == self.root:
            raise Refused("cannot delete the root")
        if os.path.isdir(host) and not os.path.islink(host):
            shutil.rmtree(host)
        else:
            os.remove(host)
        return f"Successfully deleted {command['path']}"

    def _rename(self, command: dict) -> str:
        old, new = self._host(command["old_path"]), self._host(command["new_path"])
        if os.path.lexists(new):
            raise Refused("the destination exists")
        os.makedirs(os.path.dirname(new), exist_ok=True)
        os.rename(old, new)
        return f"Successfully renamed {command['old_path']} to {command['new_path']}"


def make(root: Path) -> VulnerableMemory:
    return VulnerableMemory(root)


def make_percent_only(root: Path) -> VulnerableMemory:
    return VulnerableMemory(root, separator_bug=False)
