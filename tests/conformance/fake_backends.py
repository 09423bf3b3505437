"""Fake implementations for the runner's tests: a tiny correct-enough handler and broken variants."""

from __future__ import annotations

import pathlib
import threading
from typing import Any, Dict, NamedTuple


class Result(NamedTuple):
    output: str
    is_error: bool


class ToolError(Exception):
    """Stands in for the Anthropic SDK's ToolError (recognised by name)."""


class Tiny:
    """Just enough of the memory tool for the test cases: view a file, create, delete."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = pathlib.Path(root)

    def _where(self, path: str) -> pathlib.Path:
        relative = path[len("/memories") :].lstrip("/")
        if not path.startswith("/memories") or ".." in relative.split("/"):
            raise ToolError(f"Error: invalid path {path}")
        return self.root / relative

    def _view(self, path: str, target: pathlib.Path, command: Dict[str, Any]) -> Result:
        if not target.is_file():
            return Result(f"The path {path} does not exist. Please provide a valid path.", True)
        lines = target.read_text().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        body = "".join(f"\n{n:>6}\t{line}" for n, line in enumerate(lines, 1))
        return Result(f"Here's the content of {path} with line numbers:{body}", False)

    def _create(self, path: str, target: pathlib.Path, command: Dict[str, Any]) -> Result:
        if target.exists():
            return Result(f"Error: File {path} already exists", True)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(command["file_text"])
        return Result(f"File created successfully at: {path}", False)

    def _delete(self, path: str, target: pathlib.Path, command: Dict[str, Any]) -> Result:
        target.unlink()
        return Result(f"Successfully deleted {path}", False)

    def execute(self, command: Dict[str, Any]) -> Any:
        path = command["path"]
        try:
            target = self._where(path)
        except ToolError as exc:
            return Result(str(exc), True)
        return getattr(self, "_" + command["command"])(path, target, command)


class Wrong(Tiny):
    """Every result's is_error inverted on views, and a trailing space on successes."""

    def execute(self, command: Dict[str, Any]) -> Any:
        result = super().execute(command)
        if command["command"] != "view":
            return result
        return Result(result.output + " ", not result.is_error)


class Raiser(Tiny):
    """Raises a ValueError on views of missing files; a ToolError on deletes."""

    def execute(self, command: Dict[str, Any]) -> Any:
        if command["command"] == "delete":
            raise ToolError(f"cannot delete {command['path']}")
        result = super().execute(command)
        if result.is_error and command["command"] == "view":
            raise ValueError("boom")
        return result


class Leaker(Tiny):
    """Follows `..` and shows the host path in errors."""

    def _where(self, path: str) -> pathlib.Path:
        return self.root / path[len("/memories") :].lstrip("/")

    def execute(self, command: Dict[str, Any]) -> Any:
        result = super().execute(command)
        if result.is_error:
            return Result(f"{result.output} ({self.root})", True)
        return result


class Escaper(Tiny):
    """Writes a file next to the root on every create."""

    def _create(self, path: str, target: pathlib.Path, command: Dict[str, Any]) -> Result:
        (self.root.parent / "outside" / "dropped.txt").write_text("x")
        return super()._create(path, target, command)


HANGER_RELEASE = threading.Event()
"""Set by a test once its run is over: the abandoned hung call returns (else after HANG_SECONDS)."""
HANGER_WOKE = threading.Event()
"""Set when a hung call returns: before its test's run is over, the runner waited for it."""
HANG_SECONDS = 120


class Hanger(Tiny):
    """Hangs on views of /memories/missing, until HANGER_RELEASE is set."""

    def execute(self, command: Dict[str, Any]) -> Any:
        if command.get("path") == "/memories/missing":
            HANGER_RELEASE.wait(HANG_SECONDS)
            HANGER_WOKE.set()
        return super().execute(command)


class PlainString(Tiny):
    """Returns plain strings for successes (the SDK's convention) and raises ToolError for errors."""

    def call(self, command: Dict[str, Any]) -> Any:
        result = super().execute(command)
        if result.is_error:
            raise ToolError(result.output)
        return result.output


def tiny(root: pathlib.Path) -> Tiny:
    return Tiny(root)


class ReadOnlyTiny(Tiny):
    """Tiny with one option: `read_only` refuses create and delete with the reference's message."""

    def __init__(self, root: pathlib.Path, read_only: bool = False) -> None:
        super().__init__(root)
        self.read_only = read_only

    def execute(self, command: Dict[str, Any]) -> Any:
        if self.read_only and command["command"] in ("create", "delete"):
            return Result(f"Error: The memory directory is read-only; {command['command']} is not allowed.", True)
        return super().execute(command)


def read_only_tiny(root: pathlib.Path, *, read_only: bool = False, unrelated: int = 0) -> ReadOnlyTiny:
    return ReadOnlyTiny(root, read_only)


wrong = Wrong
raiser = Raiser
leaker = Leaker
escaper = Escaper
hanger = Hanger
plain = PlainString
