"""Two planted bugs of one class in one backend, for the property suite's every-distinct-failure test: error text
carries the host path (buggy_backends' host_path_in_errors) and rename replaces an existing destination (its
rename_overwrites). A search that stopped at the first would report only the leak. Never use it as a backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

if __package__:
    from .buggy_backends import SIGNALLING, make_host_path_in_errors, make_rename_overwrites
else:  # imported as a top-level module, with this folder on sys.path
    from buggy_backends import SIGNALLING, make_host_path_in_errors, make_rename_overwrites

__all__ = ["SIGNALLING", "make"]


class TwoBugs:
    storage = "filesystem"

    def __init__(self, root: Path) -> None:
        self.leaky = make_host_path_in_errors(root)
        self.overwriting = make_rename_overwrites(root)

    def execute(self, tool_input: Any) -> Any:
        renames = isinstance(tool_input, dict) and tool_input.get("command") == "rename"
        return (self.overwriting if renames else self.leaky).execute(tool_input)


def make(root: Path) -> TwoBugs:
    return TwoBugs(root)
