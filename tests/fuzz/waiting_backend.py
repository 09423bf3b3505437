"""A backend that does almost nothing while another thread of the process burns a CPU: the meter must charge it
its own thread's time, not the process's (tests/fuzz/test_cost.py).

`execute` waits, sleeping, until the spinner thread started by `make` has used SPIN_SECONDS of CPU time, so the
process's CPU time over the call is at least that much however busy the machine is, while the call's own thread
uses a few milliseconds of wake-ups.
"""

from __future__ import annotations

import pathlib
import threading
import time
from typing import Any, NamedTuple

SPIN_SECONDS = 0.3


class Result(NamedTuple):
    output: str
    is_error: bool


class Spinner:
    """A thread that burns CPU until stopped; `cpu` is the CPU time it has used."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._spin, name="waiting-backend-spinner", daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        started = time.thread_time()
        while not self.stop.is_set():
            sum(range(10_000))
            self.cpu = time.thread_time() - started


class WaitingMemory:
    storage = "filesystem"

    def __init__(self, root: pathlib.Path, spinner: Spinner) -> None:
        self.root = root
        self.spinner = spinner

    def execute(self, command: Any) -> Result:
        reached = self.spinner.cpu + SPIN_SECONDS
        while self.spinner.cpu < reached:
            time.sleep(0.01)
        return Result("waited", False)


SPINNERS = []


def make(root: pathlib.Path) -> WaitingMemory:
    if not SPINNERS:
        SPINNERS.append(Spinner())
    return WaitingMemory(root, SPINNERS[0])


def stop() -> None:
    while SPINNERS:
        spinner = SPINNERS.pop()
        spinner.stop.set()
        spinner.thread.join()
