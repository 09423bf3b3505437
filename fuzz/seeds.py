"""Seed inputs for the engines: short byte strings that decode to each growth form (grow.py).

Both engines start from almost nothing: libFuzzer begins with empty inputs and lengthens them
slowly, and the random engine from a handful of fixed strings. Either may take thousands of runs to
reach a decision sequence such as "create a file with a repeated text, then str_replace its unit".
Rather than hand-encode such bytes (the decoder's layout would then be written down twice), a fixed
pseudo-random search keeps the first short input that decodes to each shape; the result depends only
on the decoder, so it is the same on every machine.
"""

from __future__ import annotations

import functools
import random
from typing import Any, Callable, Dict, List, Tuple

from refmem_harness.decode import decode

TRIES = 20_000
SEED = 818


def _grown_then_used(commands: List[Any]) -> bool:
    for index, command in enumerate(commands):
        text = command.get("file_text") if isinstance(command, dict) else None
        if command_is(command, "create") and isinstance(text, str) and 2_000 <= len(text) <= 40_000:
            later = commands[index + 1 :]
            if any(isinstance(c, dict) and c.get("path") == command.get("path") for c in later):
                return True
    return False


def _many_files(commands: List[Any]) -> bool:
    return sum(command_is(c, "create") for c in commands) >= 16


def _rename_chain(commands: List[Any]) -> bool:
    return sum(command_is(c, "rename") for c in commands) >= 3


def _deep_path(commands: List[Any]) -> bool:
    return any(isinstance(c, dict) and str(c.get("path", "")).count("/") >= 15 for c in commands)


def _huge_number(commands: List[Any]) -> bool:
    for command in commands:
        if not isinstance(command, dict):
            continue
        values = list(command.get("view_range") or []) if isinstance(command.get("view_range"), list) else []
        values.append(command.get("insert_line"))
        if any(isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**31 for v in values):
            return True
    return False


def _nested(commands: List[Any]) -> bool:
    for command in commands:
        for value in command.values() if isinstance(command, dict) else ():
            depth = 0
            while isinstance(value, (list, dict)) and value and depth < 8:
                value = value[0] if isinstance(value, list) else next(iter(value.values()))
                depth += 1
            if depth >= 8:
                return True
    return False


SHAPES: Dict[str, Callable[[List[Any]], bool]] = {
    "grown-then-used": _grown_then_used,
    "many-files": _many_files,
    "rename-chain": _rename_chain,
    "deep-path": _deep_path,
    "huge-number": _huge_number,
    "nested": _nested,
}


def command_is(command: Any, name: str) -> bool:
    return isinstance(command, dict) and command.get("command") == name


@functools.lru_cache(maxsize=1)
def growth_seeds() -> Tuple[bytes, ...]:
    """One input per shape in SHAPES (those found within TRIES), in the order of SHAPES."""
    rng = random.Random(SEED)
    found: Dict[str, bytes] = {}
    for _ in range(TRIES):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(8, 48)))
        commands = decode(data)
        for name, matches in SHAPES.items():
            if name not in found and matches(commands):
                found[name] = data
        if len(found) == len(SHAPES):
            break
    return tuple(found[name] for name in SHAPES if name in found)
