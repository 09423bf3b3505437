"""What the planted backends (vulnerable_backend, quadratic_backend) share: the result shape and the dispatch.

Each backend is careful everywhere except for its planted bug, so that what the fuzzer reports is that bug and not
noise; the dispatch is part of that care: only the six commands reach a method, and every expected failure becomes
a plain error result.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from refmem.tool import NAMES as COMMANDS


class Result(NamedTuple):
    output: str
    is_error: bool


class Refused(Exception):
    """A refusal whose message is safe to show."""


class PlantedBackend:
    storage = "filesystem"

    def execute(self, command: Any) -> Result:
        if not isinstance(command, dict) or not isinstance(command.get("command"), str):
            return Result("Error: bad input", True)
        if command["command"] not in COMMANDS:
            return Result("Error: unknown command", True)
        method: Callable[[dict], str] = getattr(self, "_" + command["command"])
        try:
            return Result(method(command), False)
        except Refused as exc:
            return Result(f"Error: {exc}", True)
        except (OSError, ValueError, TypeError, KeyError, UnicodeError):
            return Result("Error: the operation failed", True)
