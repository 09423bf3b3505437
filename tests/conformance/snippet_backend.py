"""The simple backend (simple_backend.py) with an SDK's edit replies: `str_replace` and `insert` answer with a
numbered snippet of the edited file, and both rewrite the whole file through str.splitlines, as three real
backends do (every CRLF, U+2028, U+2029, NEL, VT, FF, FS, GS and RS becomes "\\n": bytes no command named).

For the class tests: outside text a snippet shows through a planted hard link is judged as a view of it would be,
and the rewritten line breaks are untouched bytes changed. Never use it as a backend."""

from __future__ import annotations

import pathlib
from typing import Any, Dict

if __package__:
    from .simple_backend import SIGNALLING, Simple
else:  # imported as a top-level module, with this folder on sys.path
    from simple_backend import SIGNALLING, Simple

__all__ = ["SIGNALLING", "make"]


def _snippet(path: str, text: str) -> str:
    numbered = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1))
    return f"The memory file has been edited. Here's the result of running `cat -n` on a snippet of {path}:\n{numbered}"


def _read(target: pathlib.Path) -> str:
    with open(target, encoding="utf-8", newline="") as file:
        return file.read()


class Snippets(Simple):
    def _str_replace(self, command: Dict[str, Any]) -> str:
        target = self._path(command["path"])
        text = _read(target)
        if text.count(command["old_str"]) != 1:
            return "Error: old_str is not unique or not there"
        lines = text.replace(command["old_str"], command["new_str"]).splitlines()
        with open(target, "w", encoding="utf-8", newline="") as out:
            out.write("\n".join(lines) + "\n")
        return _snippet(command["path"], "\n".join(lines))

    def _insert(self, command: Dict[str, Any]) -> str:
        target = self._path(command["path"])
        lines = _read(target).splitlines()
        lines.insert(command["insert_line"], command["insert_text"].rstrip("\n"))
        with open(target, "w", encoding="utf-8", newline="") as out:
            out.write("\n".join(lines) + "\n")
        return _snippet(command["path"], "\n".join(lines))


def make(root: pathlib.Path) -> Snippets:
    return Snippets(root)
