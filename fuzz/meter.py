"""What one command cost a target: seconds, output characters and peak memory, as a finding records it.

The measuring is the harness's one meter (refmem_harness/usage.py, shared with the stress tier): CPU seconds of
the thread that ran an in-process call (`Target.last_call`) or of a `cmd:` target's adapter process (`/proc`),
peak growth of the Python heap under tracemalloc in process and of the adapter's resident set. tracemalloc
slows allocation-heavy code by up to fifteen times, so a call measured with it has no usable time figure
(`Cost.timed` is False): in process, time and memory come from different calls. The budgets allow for the
filesystem's share of the time (cost.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional, Tuple

from refmem_harness import usage

CPU, WALL = usage.CPU, usage.WALL
TRACEMALLOC, RSS = usage.TRACEMALLOC, usage.RSS
NONE = ""


@dataclasses.dataclass(frozen=True)
class Cost:
    seconds: float
    """CPU seconds (min(process CPU, wall) where the working thread is not known), or wall seconds when
    `clock` is WALL."""
    output_chars: int
    memory_bytes: Optional[int]
    """Peak growth in bytes during the call; None when not measured."""
    clock: str = CPU
    memory: str = NONE

    @property
    def timed(self) -> bool:
        """False when tracemalloc ran during the call: its time is inflated, and not comparable."""
        return self.memory != TRACEMALLOC

    def to_json(self) -> Dict[str, Any]:
        return {
            "seconds": round(self.seconds, 6),
            "clock": "cpu" if self.clock == CPU else "wall",
            "output_chars": self.output_chars,
            "memory_bytes": self.memory_bytes,
            "memory": self.memory or None,
        }


class Meter:
    """Measures calls to one target. `memory=False`: no memory figures at all; otherwise an
    adapter's is always taken (it is cheap), an in-process one only when a call asks for it."""

    def __init__(self, target: Any, memory: bool = True) -> None:
        self.in_process = not str(getattr(target, "spec", "")).startswith("cmd:")
        self.target = target
        self.memory = memory
        self.pid = None if self.in_process else usage.target_pid(target)

    def refresh(self) -> None:
        """An adapter is restarted after a crash or a hang: follow the new process."""
        if not self.in_process:
            self.pid = usage.target_pid(self.target)

    def measure(self, call: Callable[[], Any], trace: bool = False) -> Tuple[Any, Cost]:
        """One call; `trace`: an in-process call runs under tracemalloc (memory, but no time figure)."""
        self.refresh()

        def timed() -> Tuple[Any, float, str]:
            return usage.timed(self.target, call)

        peak: Optional[int] = None
        memory = NONE
        if self.in_process and trace and self.memory:
            (result, seconds, clock), peak = usage.traced_peak(timed)
            memory = TRACEMALLOC
        elif not self.in_process and self.memory and self.pid is not None:
            pid = self.pid
            (result, seconds, clock), peak, _reset = usage.rss_peak(lambda: [pid], timed)
            memory = RSS if peak is not None else NONE
        else:
            result, seconds, clock = timed()
        return result, Cost(seconds, _output_chars(result), peak, clock, memory)


def _output_chars(result: Any) -> int:
    output = getattr(result, "output", "")
    return len(output) if isinstance(output, str) else 0
