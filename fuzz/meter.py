"""What one command cost a target: seconds, output characters and peak memory.

Seconds are CPU time, of whatever does the work and nothing else. For an in-process target it is the
CPU time of the thread that runs the call (the conformance target's worker thread when it has a step
timeout, else the fuzzer's own): another program loading the machine does not add to it, and neither
does a thread of this process left burning by an earlier hang. For a target that does not expose the
call it runs, the smaller of the process's CPU time and the wall time stands in. For a `cmd:` target it
is the adapter process's, read from `/proc` (Linux: every thread's run time in nanoseconds, else the
process's user and system ticks). Where no CPU figure is available, wall time stands alone. (User time
alone would leave out the filesystem's share, but Linux splits user from system time by sampling, which
makes it unreliable for calls of a few milliseconds; the budgets allow for the filesystem instead, see
cost.py.)

Memory is the peak growth during the call: `tracemalloc` for an in-process target (the Python heap,
where file contents, decoded text and line lists live), and the adapter's peak resident set for a
`cmd:` target (reset through `/proc/PID/clear_refs` before each call, where the kernel allows it).
tracemalloc slows allocation-heavy code by up to fifteen times, so a call measured with it has no
usable time figure (`Cost.timed` is False): in process, time and memory come from different calls.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import time
import tracemalloc
from typing import Any, Callable, Dict, Optional, Tuple

from .suite import targets

settle: Callable[[Any], Any] = importlib.import_module(targets.__package__ + ".signalling").settle

CPU = "cpu"
WALL = "wall"
TRACEMALLOC = "tracemalloc-peak"
RSS = "rss-peak"
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
        worker = _WorkerClock(self.target)
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            with worker:
                result = call()
        finally:
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            peak = tracemalloc.get_traced_memory()[1] - base if trace else None
            if started_here:
                tracemalloc.stop()
        seconds = worker.seconds if worker.seconds is not None else min(cpu, wall)
        return result, Cost(seconds, _output_chars(result), peak, CPU, TRACEMALLOC if trace else NONE)

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
            seconds, clock = max(0.0, min(wall, cpu_after - cpu_before)), CPU
        peak = None
        if rss_before is not None and pid is not None:
            high = _status_kib(pid, "VmHWM")
            peak = None if high is None else max(0, high - rss_before) * 1024
        return result, Cost(seconds, _output_chars(result), peak, clock, RSS if peak is not None else NONE)


class _WorkerClock:
    """The CPU time of the thread that runs one call of an in-process target (`seconds`, None when unknown).

    The conformance runner's InProcessTarget keeps the bound method it runs in `_call`, and runs it on a
    worker thread when it has a step timeout. For one call that method is wrapped so that it times itself,
    on whichever thread runs it, with `time.thread_time()`; an awaitable it returns is settled inside, as
    the target would settle it, so that the work is timed. A target without `_call` is left alone."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.seconds: Optional[float] = None
        self._inner: Optional[Callable[[Any], Any]] = None

    def __enter__(self) -> _WorkerClock:
        inner = getattr(self.target, "_call", None)
        if not callable(inner):
            return self

        def timed(command: Any) -> Any:
            started = time.thread_time()
            try:
                return settle(inner(command))
            finally:
                self.seconds = time.thread_time() - started

        try:
            self.target._call = timed
        except (AttributeError, TypeError):
            return self
        self._inner = inner
        return self

    def __exit__(self, *exc: object) -> None:
        if self._inner is not None:
            self.target._call = self._inner


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
    """CPU seconds of a process (Linux /proc): its threads' run times in nanoseconds (schedstat), else its user
    and system time in clock ticks (stat; a hundredth of a second); None without /proc."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        threads = []
    run_ns = [ns for ns in (_thread_run_ns(pid, thread) for thread in threads) if ns is not None]
    if run_ns:  # a thread that ended between the listing and the read no longer counts
        return sum(run_ns) / 1e9
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    try:
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14 and 15 of stat)
    except (ValueError, IndexError):
        return None


def _thread_run_ns(pid: int, thread: str) -> Optional[int]:
    """Nanoseconds a thread has run (the first field of its schedstat); None when unreadable (it ended)."""
    try:
        with open(f"/proc/{pid}/task/{thread}/schedstat", "rb") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
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
