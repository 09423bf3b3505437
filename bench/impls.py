"""The three implementations the bench compares, behind one call: ``execute(tool_input) -> str``.

* ``refmem``: ``MemoryHandler(root).execute``.
* ``baseline`` (with ``--baseline DIR``): the same over another copy of ``refmem/`` (an earlier commit's),
  loaded beside this one, so that a change is measured before and after in one run.
* ``sdk``: the Anthropic Python SDK's ``BetaLocalFilesystemMemoryTool`` (installed for the bench
  only; the column is skipped when ``anthropic`` cannot be imported). It keeps its files in
  ``<base>/memories``, so every tree is built there and refmem is pointed at the same folder.
* ``floor``: the same work with plain ``os`` calls and no validation or formatting: what the disk
  and the interpreter cost at the least. Writes are as durable as refmem's (temp file, file fsync,
  rename, folder fsync; delete and rename fsync the folders they change), so it is the floor for
  refmem's durability, not for the SDK's (which does not fsync folders).
"""

from __future__ import annotations

import os
import shutil
from itertools import islice
from typing import Any, Callable, Dict, Optional

from refmem import tool


class Impl:
    name = ""
    note = ""

    def execute(self, tool_input: dict) -> object:  # pragma: no cover - interface
        raise NotImplementedError


class Refmem(Impl):
    name = "refmem"

    def __init__(self, root: str, **options: object) -> None:
        from refmem import MemoryHandler

        self.handler = MemoryHandler(root, **options)  # type: ignore[arg-type]

    def execute(self, tool_input: dict) -> object:
        return self.handler.execute(tool_input)


class Baseline(Impl):
    """Another copy of refmem (an earlier commit's `refmem/` folder, `--baseline DIR`), loaded beside this one
    under another module name, so that before and after are measured in one run, taking turns."""

    name = "baseline"
    source: Optional[str] = None

    def __init__(self, root: str, **options: object) -> None:
        module = load_baseline(self.source or "")
        self.handler = module.MemoryHandler(root, **options)

    def execute(self, tool_input: dict) -> object:
        return self.handler.execute(tool_input)


def load_baseline(source: str) -> Any:
    """The package in the folder `source` (a copy of `refmem/`), imported as `refmem_baseline`."""
    import importlib.util
    import sys

    loaded = sys.modules.get("refmem_baseline")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(
        "refmem_baseline", os.path.join(source, "__init__.py"), submodule_search_locations=[source]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"no package in {source}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["refmem_baseline"] = module
    spec.loader.exec_module(module)
    return module


def sdk_available() -> Optional[str]:
    """None when the SDK's local memory tool can be imported, else why not."""
    try:
        from anthropic.tools import BetaLocalFilesystemMemoryTool  # noqa: F401
    except Exception as error:  # noqa: BLE001 - any import failure means "skip the column"
        return f"{type(error).__name__}: {error}"
    return None


class Sdk(Impl):
    name = "sdk"

    def __init__(self, root: str) -> None:
        from anthropic.tools import BetaLocalFilesystemMemoryTool

        base = os.path.dirname(root)
        if os.path.basename(root) != "memories":
            raise ValueError("the SDK keeps its files in <base>/memories")
        self.tool = BetaLocalFilesystemMemoryTool(base_path=base)

    def execute(self, tool_input: dict) -> object:
        try:
            return self.tool.call(tool_input)
        except Exception as error:  # noqa: BLE001 - the SDK raises ToolError for error results
            return f"error: {error}"


class Floor(Impl):
    """No checks, no formatting; durable writes like refmem's."""

    name = "floor"

    def __init__(self, root: str) -> None:
        self.root = root
        self.commands: Dict[str, Callable[[dict], object]] = {name: getattr(self, name) for name in tool.NAMES}

    def host(self, path: str) -> str:
        return self.root + path[len("/memories"):]

    def execute(self, tool_input: dict) -> object:
        return self.commands[tool_input["command"]](tool_input)

    def view(self, c: dict) -> object:
        path = self.host(c["path"])
        window = c.get("view_range")
        if window is not None:
            start, end = window
            with open(path, "rb") as handle:
                return list(islice(handle, start - 1, None if end == -1 else end))
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except IsADirectoryError:
            pass
        found = []
        with os.scandir(path) as entries:
            for entry in entries:
                found.append((entry.name, entry.stat(follow_symlinks=False).st_size))
                if entry.is_dir(follow_symlinks=False):
                    with os.scandir(entry.path) as inner:
                        for item in inner:
                            found.append((item.name, item.stat(follow_symlinks=False).st_size))
        return found

    @staticmethod
    def _write(path: str, data: bytes) -> None:
        folder = os.path.dirname(path)
        temp = os.path.join(folder, ".floor-tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
        Floor._sync_dir(folder)

    def create(self, c: dict) -> object:
        path = self.host(c["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._write(path, c["file_text"].encode())
        return None

    def str_replace(self, c: dict) -> object:
        path = self.host(c["path"])
        with open(path, "rb") as handle:
            text = handle.read().decode()
        self._write(path, text.replace(c["old_str"], c["new_str"], 1).encode())
        return None

    def insert(self, c: dict) -> object:
        path = self.host(c["path"])
        with open(path, "rb") as handle:
            lines = handle.read().decode().split("\n")
        lines.insert(c["insert_line"], c["insert_text"].rstrip("\n"))
        self._write(path, "\n".join(lines).encode())
        return None

    @staticmethod
    def _sync_dir(folder: str) -> None:
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def delete(self, c: dict) -> object:
        path = self.host(c["path"])
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        self._sync_dir(os.path.dirname(path))
        return None

    def rename(self, c: dict) -> object:
        old, new = self.host(c["old_path"]), self.host(c["new_path"])
        os.makedirs(os.path.dirname(new), exist_ok=True)
        os.rename(old, new)
        self._sync_dir(os.path.dirname(new))
        if os.path.dirname(old) != os.path.dirname(new):
            self._sync_dir(os.path.dirname(old))
        return None


class CountedFloor(Floor):
    """The floor of a whole file's view as the page needs it: the bytes read, decoded (a file that is not
    UTF-8 is refused) and their lines counted (the page's note says how many there are)."""

    name = "floor, decoded and counted"

    def view(self, c: dict) -> object:
        if c.get("view_range") is not None:
            return super().view(c)
        with open(self.host(c["path"]), "rb") as handle:
            return handle.read().decode("utf-8").count("\n")


def make(name: str, root: str, **options: object) -> Impl:
    """An implementation by name; `options` go to refmem's handler (the others take none)."""
    if name == "refmem":
        return Refmem(root, **options)
    if name == "baseline":
        return Baseline(root, **options)
    return {"sdk": Sdk, "floor": Floor, CountedFloor.name: CountedFloor}[name](root)
