"""The cost oracle: no command may cost more than a budget that grows linearly with the input.

A backend that does quadratic work (a line number recounted from the start of the file for each
occurrence, a list rebuilt per line) or returns an unbounded amplification of what it was sent holds
a CPU core, memory or the model's context for as long as the attacker likes. The fuzzer cannot
prove complexity, but it can catch the symptom: a command whose cost is far above what a linear
implementation spends on an input of that size.

Budgets are `a + b * n`, where `n` is the number of characters the sequence has sent so far (every
byte a handler holds came from the inputs or the small fixture layout, so `n` bounds the state as
well as the command). Time budgets are counted in units of a calibration measured at start-up on
this machine: the CPU seconds per character of a plainly linear Python job (numbering the lines of
a text). So a slower machine gets proportionally larger budgets. The constants leave the reference
about three times its costliest linear path (a str_replace refused for a megabyte of `a\n`
occurrences, about 2.5 units per character); a finding is kept only when every re-run of the
sequence breaks the same budget again (see `harness.SequenceHarness`).

Every figure is CPU time, never the wall clock: the calibration job's on the thread that runs it, a step's
on the thread (or adapter process) that does the work (meter.py, over refmem_harness/usage.py). A machine at
load 5 gives a job as many CPU seconds as an idle one, give or take what other programs do to the caches, so a
verdict holds on both.
What CPU time does not cover (a slower core, a throttled one) the stall check does: before the re-runs
that confirm a finding the calibration job is timed again, and a machine that runs it STALL times slower
judges the re-runs against budgets scaled by that slowdown.

Time is never judged on a call measured under tracemalloc (which slows allocation-heavy code up to
fifteen times, by an amount that depends on the code): in process, one sequence in MEMORY_EVERY is
measured for memory, the others for time.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import time
import tracemalloc
from typing import Any, Dict, List, Optional

from refmem_harness.oracles import Violation

from .meter import WALL, Cost

TIME_BASE_CHARS = 1 << 19
"""The constant part of a time budget, in calibrated characters: a fixed cost per command (imports
on first use, a page of 60,000 numbered characters, a garbage collection) must fit with room to spare."""
FS_BASE_OPS = 1024
"""Folder operations (a mkdir and an rmdir) on the target's filesystem that the constant part of a
time budget also allows for: a folder made costs ten times more CPU on a journalled disk than on
tmpfs, and that is the filesystem's cost, not the implementation's (a 400-deep path is 400 of them)."""
TIME_PER_CHAR = 8.0
"""Calibrated characters of time per character of input: eight times the cost of numbering every line."""
WALL_SLACK = 4.0
"""Wall time (no CPU figure for the target) counts waiting for other programs too."""
OUTPUT_BASE_CHARS = 1 << 17
OUTPUT_PER_CHAR = 16.0
"""An output may be this many times the input: a file of empty lines viewed whole is about four."""
MEMORY_BASE_BYTES = 32 << 20
MEMORY_PER_CHAR = 128.0
"""Peak heap growth per input character: a file of short lines as a list of strings is about 60."""
CONFIRM_RUNS = 2
"""Re-runs a cost finding must survive (each breaking the same budget) before it is reported."""
REPLAY_MARGIN = 2.0
"""A time finding is kept at a size that breaks its budget this many times over. The first input to cross a budget,
and the last size shrinking leaves (halving a text quarters a quadratic step), sit just above it: kept there,
findings were 1.00-1.35 times over, and replayed on the same machine they measured 0.56-0.92 of it one time in
three. So shrinking stops short of this margin, and a finding confirmed below it is grown (every text doubled,
at most GROW_STEPS times) until it is over it. Work that is linear in the input keeps its ratio as it grows, so
only superlinear work gains the margin. Output and memory figures do not depend on the machine's load."""
GROW_STEPS = 2
STALL = 1.5
"""A machine that runs the calibration job this many times slower than it did at calibration is stalled (a busy
neighbour, a throttled CPU): re-runs made then are judged against budgets scaled by that slowdown, since a stall
lasting a few runs would otherwise confirm noise as a finding."""
MEMORY_EVERY = 4
"""In process, every fourth sequence runs under tracemalloc for the memory budget (no time figure)."""
CALIBRATION_CHARS = 1 << 16
CALIBRATION_ROUNDS = 5
BUCKETS = 4
"""Feedback for engines: cost relative to the budget in powers of two, from 1/2**BUCKETS up to it.

The lowest bucket starts at a sixteenth of a budget (about 4 ms of CPU here), above what an ordinary command
costs. A cheap command's CPU time can double on a busy machine (caches emptied by whatever else runs), and with
buckets down to 1/64 that jitter crossed bucket edges: libFuzzer took it for new coverage, kept noise in its corpus
and wandered. The same atheris search from one seed ended at 179 to more than 3,000 runs; with this floor, at 179
to 183 runs in 14 of 14, idle and beside two busy loops. Costly steps, where a gradient leads somewhere, keep
theirs."""


@dataclasses.dataclass(frozen=True)
class Budget:
    unit_seconds: float
    """Calibrated seconds per character of the linear job."""
    factor: float = 1.0
    """Multiplies every budget (`--cost-factor`)."""
    memory_measured: bool = True
    folder_seconds: float = 0.0
    """Calibrated CPU seconds of one folder made and removed on the target's filesystem."""

    def seconds(self, chars: int, clock: str) -> float:
        slack = WALL_SLACK if clock == WALL else 1.0
        python = self.unit_seconds * (TIME_BASE_CHARS + TIME_PER_CHAR * chars)
        return self.factor * slack * (python + FS_BASE_OPS * self.folder_seconds)

    def output_chars(self, chars: int) -> int:
        return int(self.factor * (OUTPUT_BASE_CHARS + OUTPUT_PER_CHAR * chars))

    def memory_bytes(self, chars: int) -> int:
        return int(self.factor * (MEMORY_BASE_BYTES + MEMORY_PER_CHAR * chars))

    def limits(self, chars: int, clock: str) -> Dict[str, Any]:
        return {
            "seconds": round(self.seconds(chars, clock), 6),
            "output_chars": self.output_chars(chars),
            "memory_bytes": self.memory_bytes(chars) if self.memory_measured else None,
        }

    def to_json(self) -> Dict[str, Any]:
        return {
            "unit_seconds_per_char": self.unit_seconds,
            "folder_seconds": self.folder_seconds,
            "factor": self.factor,
            "seconds": f"factor * (unit * ({TIME_BASE_CHARS} + {TIME_PER_CHAR:g} * n) + {FS_BASE_OPS} * folder)"
            + f" (x{WALL_SLACK:g} on wall time)",
            "output_chars": f"factor * ({OUTPUT_BASE_CHARS} + {OUTPUT_PER_CHAR:g} * n)",
            "memory_bytes": f"factor * ({MEMORY_BASE_BYTES} + {MEMORY_PER_CHAR:g} * n)",
        }


def check(index: int, command: Any, cost: Cost, budget: Budget, chars: int) -> List[Violation]:
    """The budgets one measured step broke, as `cost:time|output|memory:COMMAND` violations."""
    label = _label(command)
    found = []
    allowed = budget.seconds(chars, cost.clock)
    if cost.timed and cost.seconds > allowed:
        what = "CPU" if cost.clock != WALL else "wall"
        found.append(Violation(f"cost:time:{label}", index,
                               f"{cost.seconds:.3f} s {what} for {chars:,} input characters; budget {allowed:.3f} s"))
    allowed_chars = budget.output_chars(chars)
    if cost.output_chars > allowed_chars:
        found.append(Violation(f"cost:output:{label}", index, f"{cost.output_chars:,} output characters for "
                               f"{chars:,} input characters; budget {allowed_chars:,}"))
    if cost.memory_bytes is not None and budget.memory_measured:
        allowed_bytes = budget.memory_bytes(chars)
        if cost.memory_bytes > allowed_bytes:
            found.append(Violation(f"cost:memory:{label}", index, f"{cost.memory_bytes:,} bytes peak ({cost.memory}) "
                                   f"for {chars:,} input characters; budget {allowed_bytes:,}"))
    return found


def bucket(cost: Cost, budget: Budget, chars: int) -> int:
    """How close a step came to its time budget: 0 (under 1/2**BUCKETS of it, or not timed) to BUCKETS."""
    if not cost.timed:
        return 0
    ratio = cost.seconds / budget.seconds(chars, cost.clock)
    if ratio <= 0:
        return 0
    return max(0, min(BUCKETS, BUCKETS + int(math.floor(math.log2(ratio))) + 1))


def cost_ladder(level: int) -> int:
    """One branch per bucket. Under `atheris.instrument_func` reaching a new bucket is new coverage,
    so libFuzzer keeps inputs that come closer to a budget: PerfFuzz's feedback, through coverage."""
    if level >= 6:
        return 6
    if level == 5:
        return 5
    if level == 4:
        return 4
    if level == 3:
        return 3
    if level == 2:
        return 2
    if level == 1:
        return 1
    return 0


def input_chars(value: Any) -> int:
    """Characters in a tool input as sent: string lengths, plus a little per number and container.

    Iterative, so a deeply nested parameter is measured without recursion.
    """
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2
            for key, inner in item.items():
                stack.append(key)
                stack.append(inner)
        elif isinstance(item, (list, tuple)):
            total += 2
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            total += max(8, item.bit_length() * 30103 // 100000 + 2)  # its decimal digits
        else:
            total += 8
    return total


def layout_chars(fixtures: List[Any]) -> int:
    return len(json.dumps(fixtures))


_CALIBRATED: List[float] = []


def calibrate() -> float:
    """CPU seconds per character of numbering the lines of a text, on this machine, in CPU time of the
    thread that runs it (as steps are measured). The least of a few rounds (noise only ever adds
    time); once per process. While tracemalloc traces, the job runs about 7 times slower: such a
    figure is measured for the caller (whose steps are traced too) and never kept, so a later
    untraced budget is not 7 times too lenient."""
    if tracemalloc.is_tracing():
        return _job_seconds_per_char(CALIBRATION_ROUNDS)
    if not _CALIBRATED:
        _CALIBRATED.append(_job_seconds_per_char(CALIBRATION_ROUNDS))
    return _CALIBRATED[0]


def slowdown() -> float:
    """How many times slower the calibration job runs now than at calibration (the least of two rounds)."""
    return _job_seconds_per_char(2) / calibrate()


def _job_seconds_per_char(rounds: int) -> float:
    text = "ab\n" * (CALIBRATION_CHARS // 3)
    best = math.inf
    for _ in range(rounds):
        started = time.thread_time()
        _linear_job(text)
        best = min(best, time.thread_time() - started)
    return max(best, 1e-9) / len(text)


_FOLDER_SECONDS: Dict[int, float] = {}


def calibrate_folders(directory: pathlib.Path) -> float:
    """CPU seconds (this thread's) to make and remove one folder in `directory`'s filesystem (a chain of
    32, the least of three rounds); once per filesystem."""
    device = os.stat(directory).st_dev
    if device not in _FOLDER_SECONDS:
        best = math.inf
        for round_ in range(3):
            top = directory / f".refmem-fuzz-calibration-{os.getpid()}-{round_}"
            chain = [top.joinpath(*["d"] * depth) for depth in range(32)]
            started = time.thread_time()
            for folder in chain:
                os.mkdir(folder)
            for folder in reversed(chain):
                os.rmdir(folder)
            best = min(best, time.thread_time() - started)
        _FOLDER_SECONDS[device] = best / len(chain)
    return _FOLDER_SECONDS[device]


def _linear_job(text: str) -> str:
    return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(text.split("\n"), 1))


def make_budget(memory: bool, factor: float = 1.0, unit_seconds: Optional[float] = None,
                folders_in: Optional[pathlib.Path] = None) -> Budget:
    """A budget calibrated on this machine, and on the filesystem of `folders_in` (the target's)."""
    unit = calibrate() if unit_seconds is None else unit_seconds
    folder = calibrate_folders(folders_in) if folders_in is not None else 0.0
    return Budget(unit, factor, memory, folder)


def _label(command: Any) -> str:
    name = command.get("command") if isinstance(command, dict) else None
    return name if isinstance(name, str) and name.isidentifier() else "input"
