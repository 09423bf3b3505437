"""Planted targets for the case-state tests (restart and error): never use them as backends.

- `reset_fails`: fake_backends' Tiny, except that building it on a case's root whose folder name holds
  "reset-fails" raises, so the runner cannot reset the target for that case (the `error` state).
- `Restarting`: wraps a real target and counts a restart after a call on a path holding "restart", as the
  adapter client counts one when an adapter stopped between calls and was started again inside the case (the
  `restart` state); everything else is the wrapped target's.
"""

from __future__ import annotations

import pathlib
from typing import Any

from fake_backends import Tiny


def reset_fails(root: pathlib.Path) -> Tiny:
    if "reset-fails" in str(root):
        raise OSError("the planted backend cannot be built on this root")
    return Tiny(root)


class Restarting:
    def __init__(self, target: Any) -> None:
        self._target = target
        self.restarts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)

    def execute(self, input: Any, *args: Any, **kwargs: Any) -> Any:
        result = self._target.execute(input, *args, **kwargs)
        if isinstance(input, dict) and "restart" in str(input.get("path", "")):
            self.restarts += 1
        return result
