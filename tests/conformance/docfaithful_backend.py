"""A careful backend that answers in the documentation's own strings, as plain text, declaring how its errors
read: the backend a new implementer writes with the documentation at hand. It must pass the default profile.

Its errors are the documentation's: "The path {path} does not exist. Please provide a valid path." (view),
"Error: ..." (most), "No replacement was performed..." (str_replace), "File {path} exceeds maximum line limit
of 999,999 lines." (view of a huge file) and the text editor tool's "Invalid `view_range`..." and "Parameter
`...` is required...". A prefix list reads all but the line limit, which a prefix cannot tell from "File
created successfully at: ...": `error_pattern` reads that one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

if __package__:
    from .buggy_backends import CarefulMemory
else:  # imported as a top-level module, with this folder on sys.path
    from buggy_backends import CarefulMemory

SIGNALLING = {
    "error_prefix": ["Error:", "The path", "No replacement", "Invalid", "Parameter"],
    "error_pattern": r"File .+ exceeds maximum line limit",
}


class DocFaithfulMemory:
    """Every result a plain string, exactly as the careful backend words it."""

    storage = "filesystem"

    def __init__(self, root: Path) -> None:
        self.backend = CarefulMemory(root)
        self.implementation = dict(self.backend.implementation, name="doc-faithful-plain")

    def execute(self, command: Any) -> str:
        return self.backend.execute(command).output


def make(root: Path) -> DocFaithfulMemory:
    return DocFaithfulMemory(root)
