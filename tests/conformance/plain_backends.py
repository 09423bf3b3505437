"""The backends of `buggy_backends` in the plain-string convention: an error is text starting with "Error: ".

`SIGNALLING` tells the runner how this module's backends signal an error; the raising-convention
factories live in `buggy_backends`, which holds the shared implementation.
"""

from __future__ import annotations

from typing import Any

if __package__:
    from .buggy_backends import Convention, factories
else:  # imported as a top-level module, with this folder on sys.path
    from buggy_backends import Convention, factories

SIGNALLING = {"error_prefix": "Error:"}


class PlainMemory(Convention):
    """Returns every result as a string; an error's text always starts with "Error: "."""

    def execute(self, command: Any) -> str:
        result = self.backend.execute(command)
        if result.is_error and not result.output.startswith("Error:"):
            return "Error: " + result.output
        return result.output


globals().update(factories(PlainMemory))  # make_clean, make_<bug> per buggy_backends.BUGS
