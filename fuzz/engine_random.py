"""The fallback engine: a plain random mutator, for Pythons where atheris cannot be installed.

It has no code coverage. Its only feedback is behavioural: an input whose run shows an outcome not
seen before (a new command/result-kind pair, or a new size class of input or output) joins the
corpus and is mutated further. It starts from a few fixed inputs and one per growth form
(`seeds.py`). Deterministic for a given seed, which is what the tests rely on.
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import List, Optional, Set

from .harness import Harness
from .seeds import growth_seeds

LABEL = "random (plain random mutator, no coverage guidance)"
MAX_INPUT = 512
SEEDS = (b"", b"\x01\x01\x01\x01\x01\x01", bytes(range(64)), b"\xff" * 32)


@dataclasses.dataclass
class Stats:
    runs: int
    seconds: float
    corpus: int


def fuzz(
    harness: Harness,
    max_time: Optional[float],
    max_runs: Optional[int],
    seed: int,
    stop_on_first: bool = False,
    deadline: Optional[float] = None,
) -> Stats:
    """Fuzz until `max_runs` inputs, `max_time` seconds from now, or `deadline` (`time.monotonic()`,
    the whole run's end: the harness stops its own work there too), whichever comes first."""
    rng = random.Random(seed)
    seeds = SEEDS + (growth_seeds() if harness.options.growth else ())
    corpus: List[bytes] = list(seeds)
    seen: Set[object] = set()
    start = time.monotonic()
    ends = [when for when in (None if max_time is None else start + max_time, deadline) if when is not None]
    end = min(ends) if ends else None
    runs = 0
    while True:
        if max_runs is not None and runs >= max_runs:
            break
        if end is not None and time.monotonic() >= end:
            break
        data = seeds[runs] if runs < len(seeds) else _next_input(rng, corpus)
        found = harness.one_input(data)
        runs += 1
        fresh = harness.last_features - seen
        if fresh:
            seen |= fresh
            corpus.append(data)
        if found is not None and stop_on_first:
            break
    return Stats(runs, time.monotonic() - start, len(corpus))


def _next_input(rng: random.Random, corpus: List[bytes]) -> bytes:
    if rng.random() < 0.25:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(MAX_INPUT)))
    data = bytearray(rng.choice(corpus))
    for _ in range(1 + rng.randrange(4)):
        _mutate(rng, data, corpus)
    return bytes(data[:MAX_INPUT])


def _mutate(rng: random.Random, data: bytearray, corpus: List[bytes]) -> None:
    choice = rng.randrange(6)
    if choice == 0 or not data:
        at = rng.randrange(len(data) + 1)
        data[at:at] = bytes(rng.randrange(256) for _ in range(1 + rng.randrange(8)))
    elif choice == 1:
        data[rng.randrange(len(data))] = rng.randrange(256)
    elif choice == 2:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif choice == 3:
        at = rng.randrange(len(data))
        del data[at : at + 1 + rng.randrange(8)]
    elif choice == 4:
        other = rng.choice(corpus)
        if other:
            at, cut = rng.randrange(len(data) + 1), rng.randrange(len(other))
            data[at:] = other[cut:]
    else:
        at = rng.randrange(len(data))
        chunk = data[at : at + 1 + rng.randrange(16)]
        data[at:at] = chunk
