"""Delta debugging over a failing command list, then simpler texts inside the commands that remain.

`still_fails(commands)` re-runs a candidate from a fresh layout and says whether it breaks the same
oracle. Each call costs one whole sequence, so the number of calls is bounded, and none is made after
the run's deadline (what has been shrunk by then is the result).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any, Callable, List, Optional, Tuple

Predicate = Callable[[List[Any]], bool]

TEXT_FIELDS = ("file_text", "old_str", "new_str", "insert_text")
OPTIONAL_FIELDS = ("view_range",)
PATH_FIELDS = ("path", "old_path", "new_path")


@dataclasses.dataclass(frozen=True)
class Fields:
    """Which parameters of a command the minimiser simplifies: the memory tool's unless a plug-in says others."""

    optional: Tuple[str, ...] = OPTIONAL_FIELDS
    """Dropped when the command still fails without them."""
    texts: Tuple[str, ...] = TEXT_FIELDS
    """Cut to one character, or to half, when it still fails."""
    paths: Tuple[str, ...] = PATH_FIELDS
    """Shortened by one `/`-separated name at a time."""
    kept_names: int = 2
    """Leading parts of a path never dropped: `""` and `memories` of `/memories/...`; a path keeps one more."""


MEMORY_TOOL = Fields()


class _Budget:
    def __init__(self, predicate: Predicate, limit: int, deadline: Optional[float] = None) -> None:
        self._predicate = predicate
        self.left = limit
        self.deadline = deadline

    def __call__(self, candidate: List[Any]) -> bool:
        if self.left <= 0 or (self.deadline is not None and time.monotonic() >= self.deadline):
            return False
        self.left -= 1
        return self._predicate(candidate)


def ddmin(items: List[Any], still_fails: Predicate) -> List[Any]:
    """The classic ddmin: try removing chunks, then complements, at finer and finer granularity."""
    current = list(items)
    granularity = 2
    while len(current) >= 2:
        size = max(1, len(current) // granularity)
        chunks = [current[start : start + size] for start in range(0, len(current), size)]
        reduced = False
        for chunk in chunks:
            if len(chunk) < len(current) and still_fails(chunk):
                current, granularity, reduced = chunk, 2, True
                break
        if reduced:
            continue
        for index in range(len(chunks)):
            complement = [item for i, chunk in enumerate(chunks) if i != index for item in chunk]
            if complement and still_fails(complement):
                current = complement
                granularity = max(granularity - 1, 2)
                reduced = True
                break
        if not reduced:
            if granularity >= len(current):
                break
            granularity = min(granularity * 2, len(current))
    return current


_DROP = object()
"""A trial value meaning: remove the field."""


def _try(current: List[Any], index: int, field: str, value: Any, still_fails: Predicate) -> Tuple[List[Any], bool]:
    """`current` with command `index`'s `field` set to `value` (or removed, for _DROP) when that still fails, and
    whether it does; else `current` unchanged."""
    trial = copy.deepcopy(current)
    if value is _DROP:
        del trial[index][field]
    else:
        trial[index][field] = value
    return (trial, True) if still_fails(trial) else (current, False)


def _objects(commands: List[Any]) -> List[int]:
    """The indexes of the commands that are objects (the others have no fields to simplify)."""
    return [index for index, command in enumerate(commands) if isinstance(command, dict)]


def simplify_texts(commands: List[Any], still_fails: Predicate, fields: Fields = MEMORY_TOOL) -> List[Any]:
    """Drop optional fields, then try one character, then halves, for every text field, keeping what still fails."""
    current = copy.deepcopy(commands)
    for index in _objects(current):
        for field in fields.optional:
            if field in current[index]:
                current, _ = _try(current, index, field, _DROP, still_fails)
        for field in fields.texts:
            value = current[index].get(field)
            if not isinstance(value, str) or len(value) <= 1:
                continue
            for candidate in (value[:1], value[: len(value) // 2]):
                current, kept = _try(current, index, field, candidate, still_fails)
                if kept:
                    break
    return current


def grow_texts(commands: List[Any], fields: Fields = MEMORY_TOOL) -> List[Any]:
    """The commands with every text field doubled: the inverse of halving, for a cost finding too close to its budget
    to replay (fuzz/cost.py, REPLAY_MARGIN)."""
    grown = copy.deepcopy(commands)
    for index in _objects(grown):
        for field in fields.texts:
            value = grown[index].get(field)
            if isinstance(value, str):
                grown[index][field] = value + value
    return grown


def simplify_paths(commands: List[Any], still_fails: Predicate, fields: Fields = MEMORY_TOOL) -> List[Any]:
    """Drop one name at a time from every path (never the leading `/memories`-like part)."""
    current = copy.deepcopy(commands)
    for index in _objects(current):
        for field in fields.paths:
            position = fields.kept_names
            while True:
                value = current[index].get(field)
                if not isinstance(value, str):
                    break
                parts = value.split("/")
                if position >= len(parts) or len(parts) <= fields.kept_names + 1:
                    break
                shorter = "/".join(parts[:position] + parts[position + 1 :])
                current, kept = _try(current, index, field, shorter, still_fails)
                if not kept:
                    position += 1
    return current


def minimise(
    commands: List[Any],
    still_fails: Predicate,
    budget: int = 200,
    deadline: Optional[float] = None,
    fields: Fields = MEMORY_TOOL,
) -> List[Any]:
    """The smallest failing sequence found in `budget` calls of `still_fails`, none after `deadline`
    (a `time.monotonic()` value), simplifying the parameters `fields` names."""
    counted = _Budget(still_fails, budget, deadline)
    smaller = ddmin(commands, counted)
    smaller = simplify_paths(smaller, counted, fields)
    return simplify_texts(smaller, counted, fields)
