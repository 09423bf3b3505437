"""A simple, naive filesystem backend of the kind a first implementation looks like: pathlib, resolve() and
relative_to() as the documentation suggests, blocking opens, errors as "Error: ..." strings, and one bug: an
absolute path below the system's temporary folder is used as it is (a "scratch" shortcut), so the matrix's
`/tmp/outside/secret.txt` lands on the host.

The determinism test runs the suite against it twice; it is never a model of good behaviour.
"""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from typing import Any, Dict

SIGNALLING = {"error_prefix": "Error:"}


class Simple:
    storage = "filesystem"

    def __init__(self, root: pathlib.Path) -> None:
        self.root = pathlib.Path(root)

    def _path(self, path: Any) -> pathlib.Path:
        scratch = tempfile.gettempdir() + "/"
        if isinstance(path, str) and path.startswith(scratch) and ".." not in path.split("/"):
            return pathlib.Path(path)  # the bug: trusted as a host path
        if not isinstance(path, str) or not path.startswith("/memories"):
            raise ValueError("Error: the path must start with /memories")
        target = (self.root / path[len("/memories") :].lstrip("/")).resolve()
        target.relative_to(self.root.resolve())  # ValueError when it leaves the root
        return target

    def execute(self, command: Dict[str, Any]) -> str:
        try:
            return getattr(self, "_" + str(command["command"]))(command)
        except (ValueError, OSError, KeyError, TypeError, AttributeError, RuntimeError) as exc:
            text = str(exc)
            return text if text.startswith("Error:") else "Error: the command failed"

    def _view(self, command: Dict[str, Any]) -> str:
        target = self._path(command["path"])
        if target.is_dir():
            lines = [f"{len(p.read_bytes()) if p.is_file() else 4096}B\t/memories/{p.relative_to(self.root)}"
                     for p in sorted(target.rglob("*")) if len(p.relative_to(target).parts) <= 2]
            return "Here're the files:\n" + "\n".join([f"4096B\t{command['path']}"] + lines)
        text = target.read_text()
        return "Here's the content:\n" + "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1))

    def _create(self, command: Dict[str, Any]) -> str:
        target = self._path(command["path"])
        if target.exists():
            return f"Error: File {command['path']} already exists"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(command["file_text"])
        return f"File created successfully at: {command['path']}"

    def _str_replace(self, command: Dict[str, Any]) -> str:
        target = self._path(command["path"])
        text = target.read_text()
        if text.count(command["old_str"]) != 1:
            return "Error: old_str is not unique or not there"
        target.write_text(text.replace(command["old_str"], command["new_str"]))
        return "The memory file has been edited."

    def _insert(self, command: Dict[str, Any]) -> str:
        target = self._path(command["path"])
        lines = target.read_text().splitlines()
        lines.insert(command["insert_line"], command["insert_text"].rstrip("\n"))
        target.write_text("\n".join(lines) + "\n")
        return f"The file {command['path']} has been edited."

    def _delete(self, command: Dict[str, Any]) -> str:
        target = self._path(command["path"])
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
        return f"Successfully deleted {command['path']}"

    def _rename(self, command: Dict[str, Any]) -> str:
        source, target = self._path(command["old_path"]), self._path(command["new_path"])
        if target.exists():
            return f"Error: The destination {command['new_path']} already exists"
        target.parent.mkdir(parents=True, exist_ok=True)
        source.rename(target)
        return f"Successfully renamed {command['old_path']} to {command['new_path']}"


def make(root: pathlib.Path) -> Simple:
    return Simple(root)
