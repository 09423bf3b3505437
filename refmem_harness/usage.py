"""What one call of a target cost the machine: CPU seconds and peak memory, of whatever does the work.

The stress tier's growth and memory checks (stress.py) and the fuzzer's cost oracle (fuzz/meter.py) measure
here, through the targets' public properties: `Target.pid` (the adapter process of a `cmd:` target, None in
process) and `Target.last_call` (in process: the CPU time of the thread that ran the last call).

Seconds are CPU time, so that another program loading the machine does not add to them: in process, of the
thread that ran the call (the target's worker thread when it has a step timeout; a thread left burning by an
earlier hang does not count), else the smaller of this process's CPU time and the wall time; for an adapter,
its threads' run times from `/proc` (nanoseconds, schedstat; else user and system ticks), of the adapter alone
or of every process of its session. Without `/proc`, wall time stands alone. (User time alone would leave out
the filesystem's share, and Linux splits user from system time by sampling, which is unreliable for calls of a
few milliseconds.)

Memory is the peak growth during the call: `tracemalloc` in process (the Python heap, where file contents,
decoded text and line lists live), and the resident set's high-water mark for an adapter (reset through
`/proc/PID/clear_refs` before the call where the kernel allows it; where it does not, the growth is a lower
bound). tracemalloc slows allocation-heavy code by up to fifteen times: a traced call has no usable time.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import time
import tracemalloc
from typing import Any, Callable, List, Optional, Tuple

CPU = "cpu"
WALL = "wall"
TRACEMALLOC = "tracemalloc-peak"
RSS = "rss-peak"


def target_pid(target: Any) -> Optional[int]:
    """The running adapter process of a `cmd:` target; None for a target in this process."""
    pid = getattr(target, "pid", None)
    return pid if isinstance(pid, int) else None


def processes(pid: int, session: bool) -> List[int]:
    """`pid`, or with `session` every process of the session `pid` leads (the adapter and what it spawned)."""
    return session_of(pid) if session else [pid]


def timed(target: Any, call: Callable[[], Any], session: bool = False) -> Tuple[Any, float, str]:
    """(what `call` returned, its seconds, CPU or WALL): `call` runs one command on `target`; an adapter's time is
    its own, or with `session` its whole session's."""
    pid = target_pid(target)
    before = None if pid is None else processes_cpu(processes(pid, session))
    last_call = getattr(target, "last_call", None)
    cpu, wall = time.process_time(), time.perf_counter()
    result = call()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if pid is None:
        this_call = getattr(target, "last_call", None)
        worker = None if this_call is last_call else getattr(this_call, "seconds", None)
        return result, worker if isinstance(worker, float) else min(cpu, wall), CPU
    after = processes_cpu(processes(pid, session))
    if before is None or after is None:
        return result, wall, WALL
    return result, max(0.0, min(wall, after - before)), CPU


@dataclasses.dataclass(frozen=True)
class Peak:
    """Peak memory growth during one call."""

    bytes: Optional[int]
    """None when it could not be read."""
    method: str
    """TRACEMALLOC or RSS."""
    exact: bool = True
    """False for a resident set whose high-water mark could not be reset: the growth is a lower bound."""


def peak(target: Any, call: Callable[[], Any], session: bool = False, collect: bool = False) -> Tuple[Any, Peak]:
    """(what `call` returned, its peak memory growth); `collect`: a garbage collection first (stress wants the
    heap at rest; the fuzzer, many calls a second, does not)."""
    pid = target_pid(target)
    if pid is None:
        result, traced = traced_peak(call, collect)
        return result, Peak(traced, TRACEMALLOC)
    result, resident, reset = rss_peak(lambda: processes(pid, session), call)
    return result, Peak(resident, RSS, reset)


def traced_peak(call: Callable[[], Any], collect: bool = False) -> Tuple[Any, int]:
    """(result, peak growth of the Python heap during `call`), under tracemalloc (started here if it is off)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        if collect:
            gc.collect()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - base
    finally:
        if started:
            tracemalloc.stop()


def rss_peak(pids: Callable[[], List[int]], call: Callable[[], Any]) -> Tuple[Any, Optional[int], bool]:
    """(result, growth of the processes' resident sets at their peak, whether every peak could be reset); the
    growth is None when no process's status could be read. `pids` is asked before and after (a process may
    start or end during the call)."""
    before_pids = pids()
    reset = all([reset_peak(pid) for pid in before_pids])
    before = {pid: status_bytes(pid, "VmRSS" if reset else "VmHWM") for pid in before_pids}
    result = call()
    after = {pid: status_bytes(pid, "VmHWM") for pid in pids()}
    read = [(high, before.get(pid) or 0) for pid, high in after.items() if high is not None]
    if not read:
        return result, None, reset
    return result, max(0, sum(high - low for high, low in read)), reset


def session_of(leader: int) -> List[int]:
    """The processes of the session `leader` leads (Linux /proc; empty without it)."""
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3 and fields[3] == str(leader).encode():
            found.append(int(entry))
    return found


def processes_cpu(pids: List[int]) -> Optional[float]:
    """CPU seconds of the processes together; None when none of them can be read."""
    seconds = [found for found in map(process_cpu, pids) if found is not None]
    return sum(seconds) if seconds else None


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") and "SC_CLK_TCK" in os.sysconf_names else 100


def process_cpu(pid: int) -> Optional[float]:
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
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14 and 15 of stat)
    except (OSError, ValueError, IndexError):
        return None


def _thread_run_ns(pid: int, thread: str) -> Optional[int]:
    """Nanoseconds a thread has run (the first field of its schedstat); None when unreadable (it ended)."""
    try:
        with open(f"/proc/{pid}/task/{thread}/schedstat", "rb") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def status_bytes(pid: int, key: str) -> Optional[int]:
    """A size field of /proc/PID/status (VmRSS, VmHWM) in bytes; None when unreadable."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(key.encode() + b":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def reset_peak(pid: int) -> bool:
    """Writing 5 to clear_refs resets the peak resident set (VmHWM) to the current one; not every kernel allows
    it."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False
