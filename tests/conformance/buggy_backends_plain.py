"""The backends of `buggy_backends` in the plain-string convention: an error is text starting with "Error: ".

`SIGNALLING` tells the runner how this module's backends signal an error; the raising-convention
factories live in `buggy_backends`, which holds the shared implementation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

if __package__:
    from .buggy_backends import CarefulMemory
else:  # imported as a top-level module, with this folder on sys.path
    from buggy_backends import CarefulMemory

SIGNALLING = {"error_prefix": "Error:"}


class PlainMemory:
    """Returns every result as a string; an error's text always starts with "Error: "."""

    storage = "filesystem"

    def __init__(self, backend: CarefulMemory) -> None:
        self.backend = backend
        self.implementation = backend.implementation

    def execute(self, command: Any) -> str:
        result = self.backend.execute(command)
        if result.is_error and not result.output.startswith("Error:"):
            return "Error: " + result.output
        return result.output


def _factory(bug: Optional[str]) -> Callable[[Path], PlainMemory]:
    def make(root: Path) -> PlainMemory:
        return PlainMemory(CarefulMemory(root, bug))

    make.__name__ = f"make_{bug or 'clean'}"
    return make


make_clean = _factory(None)
make_prefix_no_separator = _factory("prefix_no_separator")
make_decode_after_dotdot_check = _factory("decode_after_dotdot_check")
make_backslash_after_check = _factory("backslash_after_check")
make_nfkc_after_check = _factory("nfkc_after_check")
make_follows_symlink = _factory("follows_symlink")
make_fifo_blocking_open = _factory("fifo_blocking_open")
make_host_path_in_errors = _factory("host_path_in_errors")
make_rename_overwrites = _factory("rename_overwrites")
make_delete_root_wipes = _factory("delete_root_wipes")
make_delete_follows_link = _factory("delete_follows_link")
make_listing_follows_links = _factory("listing_follows_links")
make_edits_in_place = _factory("edits_in_place")
