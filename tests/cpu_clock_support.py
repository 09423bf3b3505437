"""Growth judged by work, not by the wall clock: how the tests compare a function's cost at n and at k*n.

- The clock is the CPU time of the thread that runs the call (`time.thread_time`): it does not advance while
  the thread waits for a core another program holds, nor while another thread of this process (a swapper left
  by an earlier test, an abandoned call) burns one. Wall time on a machine at load 5 grows by whatever the
  scheduler felt like; CPU time grows by the work done, plus a little for caches another program emptied.
- Sizes are measured in rounds that go across both sizes (a burst of load slows one round of each rather
  than every run of one size), and each size keeps its least time: interruptions only ever add time.
- The verdict is a ratio within one measurement, never an absolute time, and a ratio over the bound is
  measured again (`ATTEMPTS` in all): linear work that a stall pushed over the bound comes back under it,
  quadratic work never does.
"""

from __future__ import annotations

import gc
import time
from typing import Callable, List, Sequence, Tuple

ATTEMPTS = 3
"""Measurements of a ratio that came out over its bound before it is believed."""


def thread_seconds(call: Callable[[], object]) -> float:
    """CPU seconds the calling thread spent in `call` (garbage collection off, so no earlier garbage is
    collected in the middle of it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        started = time.thread_time()
        call()
        return time.thread_time() - started
    finally:
        if enabled:
            gc.enable()


def least_seconds(calls: Sequence[Callable[[], object]], rounds: int) -> List[float]:
    """The least CPU time of each call over `rounds` rounds, each round running every call once."""
    best = [float("inf")] * len(calls)
    for _ in range(rounds):
        for index, call in enumerate(calls):
            best[index] = min(best[index], thread_seconds(call))
    return [max(seconds, 1e-9) for seconds in best]


def ratio_within(
    measure: Callable[[], Tuple[float, float]], bound: float, attempts: int = ATTEMPTS
) -> Tuple[bool, List[str]]:
    """(whether t_large / t_small < bound in one of `attempts` measurements, what each measurement saw).

    `measure` returns (t_small, t_large) from one interleaved measurement."""
    seen: List[str] = []
    for _ in range(attempts):
        small, large = measure()
        seen.append(f"{small * 1e3:.2f} ms -> {large * 1e3:.2f} ms ({large / small:.1f}x)")
        if large / small < bound:
            return True, seen
    return False, seen


def count_before_each(text: str, marker: str, counted: str) -> int:
    """A planted quadratic for a growth check to catch: for every `marker`, count `counted` in all the text before
    it (the shape of a line recount from the start at each occurrence)."""
    total, at = 0, text.find(marker)
    while at != -1:
        total += text.count(counted, 0, at)
        at = text.find(marker, at + len(marker))
    return total
