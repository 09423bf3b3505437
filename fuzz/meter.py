"""What one command cost a target: seconds, output characters and peak memory.

Seconds are the smaller of CPU time and wall time. For an in-process target the CPU time is the
fuzzer process's (`time.process_time`: the fuzzer's own thread waits while the target works); for a
`cmd:` target it is the adapter process's, read from `/proc` (Linux). CPU time does not grow when
other programs load the machine, and wall time does not grow when a thread left behind by an earlier
hang burns CPU, so the smaller of the two is the steadier figure. Where no CPU figure is available,
wall time stands alone. (User time alone would leave out the filesystem's share, but Linux splits
user from system time by sampling, which makes it unreliable for calls of a few milliseconds; the
budgets allow for the filesystem instead, see cost.py.)

Memory is the peak growth during the call: `tracemalloc` for an in-process target (the Python heap,
where file contents, decoded text and line lists live), and the adapter's peak resident set for a
`cmd:` target (reset through `/proc/PID/clear_refs` before each call, where the kernel allows it).
tracemalloc slows allocation-heavy code by up to fifteen times, so a call measured with it has no
usable time figure (`Cost.timed` is False): in process, time and memory come from different calls.
"""

from __future__ import annotations

import dataclasses
import os
import time
import tracemalloc
from typing import Any, Callable, Dict, Optional, Tuple

CPU = "cpu"
WALL = "wall"
TRACEMALLOC = "tracemalloc-peak"
RSS = "rss-peak"
NONE = ""


@dataclasses.dataclass(frozen=True)
class Cost:
    seconds: float
    """min(CPU, wall) seconds, or wall seconds when `clock` is WALL."""
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
            "clock": "min(cpu, wall)" if self.clock == CPU else "wall",
            "output_chars": self.output_chars,
            "memory_bytes": self.memory_bytes,
            "memory": self.memory or None,
        }


class Meter:
    """Measures calls to one target. `memory=False`: no memory figures at all; otherwise an
    adapter's is always taken (it is cheap), an in-process one only when a call asks for it."""

    def __init__(self, target: Any, memory: bool = True) -> None:
        self.in_process = not str(getattr(target, "spec", "")).startswith("cmd:")
        self.pid = None if self.in_process else adapter_pid(target)
        self.memory = memory
        self.target = target

    def refresh(self) -> None:
        """An adapter is restarted after a crash or a hang: follow the new process."""
        if not self.in_process:
            self.pid = adapter_pid(self.target)

    def measure(self, call: Callable[[], Any], trace: bool = False) -> Tuple[Any, Cost]:
        """One call; `trace`: an in-process call runs under tracemalloc (memory, but no time figure)."""
        if self.in_process:
            return self._in_process(call, trace and self.memory)
        return self._adapter(call)

    def _in_process(self, call: Callable[[], Any], trace: bool) -> Tuple[Any, Cost]:
        started_here = trace and not tracemalloc.is_tracing()
        if started_here:
            tracemalloc.start()
        elif trace:
            tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0] if trace else 0
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            result = call()
        finally:
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            peak = tracemalloc.get_traced_memory()[1] - base if trace else None
            if started_here:
                tracemalloc.stop()
        return result, Cost(min(cpu, wall), _output_chars(result), peak, CPU, TRACEMALLOC if trace else NONE)

    def _adapter(self, call: Callable[[], Any]) -> Tuple[Any, Cost]:
        self.refresh()
        pid = self.pid
        rss_before = None
        if self.memory and pid is not None:
            _reset_peak_rss(pid)
            rss_before = _status_kib(pid, "VmRSS")
        cpu_before = _process_cpu(pid) if pid is not None else None
        wall = time.perf_counter()
        result = call()
        wall = time.perf_counter() - wall
        cpu_after = _process_cpu(pid) if pid is not None else None
        seconds, clock = wall, WALL
        if cpu_before is not None and cpu_after is not None:
            seconds, clock = min(wall, cpu_after - cpu_before), CPU
        peak = None
        if rss_before is not None and pid is not None:
            high = _status_kib(pid, "VmHWM")
            peak = None if high is None else max(0, high - rss_before) * 1024
        return result, Cost(seconds, _output_chars(result), peak, clock, RSS if peak is not None else NONE)


def adapter_pid(target: Any) -> Optional[int]:
    """The process id of a `cmd:` target's adapter, when it is running (None for in-process targets)."""
    pid = getattr(target, "pid", None)
    if isinstance(pid, int):
        return pid
    child = getattr(target, "_child", None)
    process = getattr(child, "process", None)
    found = getattr(process, "pid", None)
    return found if isinstance(found, int) else None


def _output_chars(result: Any) -> int:
    output = getattr(result, "output", "")
    return len(output) if isinstance(output, str) else 0


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") and "SC_CLK_TCK" in os.sysconf_names else 100


def _process_cpu(pid: int) -> Optional[float]:
    """User + system CPU seconds of a process (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    try:
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14 and 15 of stat)
    except (ValueError, IndexError):
        return None


def _status_kib(pid: int, key: str) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(key.encode() + b":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_peak_rss(pid: int) -> None:
    """Writing 5 to clear_refs resets the peak resident set (VmHWM); not every kernel allows it."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        pass
