"""The stress tier (opt-in): memory, growth and a folder-for-link race, run against one target.

    findings = run_stress(lambda root: open_target(spec, root), workdir, quick=True)

Cases show what an implementation does with one input; this tier shows what it costs as inputs grow and
what it does while the tree changes under it. Every check runs in its own case directory under `workdir`
(the layout of CASE-FORMAT.md: the root beside the canary tree `outside/` and the sibling `memories_evil/`)
with a fresh target, and each result is screened as a case's would be.

A finding is `{"class": CLASS, "check": ID, "detail": LINE}`; no list entry means clean. The class is the one
conformance/effects.py gives the finding's effect (`class_of`; cost for unbounded cost, safety for the others):
this module names effects, never classes.

| check | effect | flagged when |
|---|---|---|
| `memory-view-range` | unbounded cost | a 10-line `view_range` at a 100 MB file's end (quick: 20 MB) peaks too high |
| `memory-listing` | unbounded cost | a listing of a 10,000-entry folder peaks over the bound |
| `growth-str-replace-size` | unbounded cost | str_replace of one occurrence: time grows clearly faster than the file |
| `growth-str-replace-occurrences` | unbounded cost | str_replace of a repeated old_str: time outgrows the count |
| `growth-view-size` | unbounded cost | a 10-line view_range at a file's end: time grows clearly faster than the file |
| `growth-listing` | unbounded cost | a listing: time grows clearly faster than the folder |
| `output-size` | unbounded cost | any single result is longer than OUTPUT_BOUND characters |
| `race-symlink-swap` | outside content shown, outside file changed | see below |
| (any check) | as screened | canary, host path or traceback in a result; a hang; a crash; a change outside the root |

The race: a separate process swaps a folder of the root with a link to `outside/` (renameat2
RENAME_EXCHANGE on Linux, renames elsewhere) while every command kind runs through the folder; canary
text in a result or any change outside the root is a finding. A race is found by chance: a clean result
says that no escape happened in that many swaps and commands (the figures give both). So the race lasts
until both counts are reached (Plan.race_swaps, race_commands) and at least race_seconds have passed: a busy
machine makes it longer, never thinner. Only a race that reaches RACE_TIME_LIMIT times race_seconds first
stops short, with a note.

Peak memory and CPU time are measured by the harness's one meter (usage.py): with tracemalloc for in-process
targets (Python allocations only), and as the resident-set growth of the adapter's session (Linux /proc: VmHWM
after resetting the peak) for `cmd:` targets; where neither works the memory checks are skipped with a note.
The view bound is TRACED_BOUND traced, or half the file (at least RSS_BOUND) resident; the listing bound
TRACED_BOUND or RSS_BOUND.

"Clearly faster" is a ratio, not a time. Each input size is timed in rounds that go across all sizes
(so a burst of load elsewhere slows one round, not one size), by the implementation's CPU time where it
can be read (the thread that runs an in-process call, the adapter session's threads; else the wall clock), and
each size keeps its best. The median of t(2n)/t(n) over the doublings above GROWTH_RATIO (linear is 2,
quadratic 4) is a finding once as many rounds again confirm it. Files are written straight into the
root, so the memory, view and listing checks and the race need `storage: filesystem`; a target with its
own storage gets only the str_replace growth checks (files made with `create`) and notes for the rest.
Exceptions: `TargetError` from opening or resetting a target, ValueError for an unknown check name.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import pathlib
import secrets
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from refmem_harness import hosttree, usage
from refmem_harness.layout import CaseDir, make_case_dir, outside_snapshot
from refmem_harness.layout import remove as remove_case_dir
from refmem_harness.targets import InProcessTarget, StepResult, Target

from .effects import OUTSIDE_CHANGED, UNBOUNDED_COST, class_of
from .screen import ScreenedRun

OUTPUT_BOUND = 100_000
"""Most characters one result may hold: more is not something a model's context should receive."""

GROWTH_RATIO = 3.0
"""Median time ratio per doubling above which growth counts as clearly worse than linear."""

TIMING_FLOOR = 0.001
"""Seconds: a series whose largest input takes less than this is too fast to judge (timer and scheduling noise)."""

TRACED_BOUND = 8_000_000
"""Peak Python allocations allowed for one 10-line view or one listing, whatever the file or folder size."""

RSS_BOUND = 16_000_000
"""Resident-set growth allowed for one listing, and the least allowed for a view (which may use half the file)."""

LINE = ("stress line " + "x" * 186 + "\n").encode("ascii")
"""200 bytes: a 100 MB file has 500,000 lines, well under the documented 999,999."""

CHECKS = (
    "memory-view-range",
    "memory-listing",
    "growth-str-replace-size",
    "growth-str-replace-occurrences",
    "growth-view-size",
    "growth-listing",
    "race-symlink-swap",
)

GROUPS = {
    "memory": CHECKS[0:2],
    "growth": CHECKS[2:6],
    "race": CHECKS[6:7],
}
"""Names a caller may pass to `stress_report(checks=...)` besides single check IDs."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """The sizes one run uses. The growth series double at each step."""

    view_file_bytes: int
    listing_entries: int
    edit_sizes: Tuple[int, ...]
    occurrence_counts: Tuple[int, ...]
    view_sizes: Tuple[int, ...]
    listing_sizes: Tuple[int, ...]
    repeats: int
    race_seconds: float
    race_swaps: int
    race_commands: int


FULL = Plan(
    view_file_bytes=100_000_000,
    listing_entries=10_000,
    edit_sizes=(32_768, 65_536, 131_072, 262_144, 524_288),
    occurrence_counts=(2_048, 4_096, 8_192, 16_384, 32_768),
    view_sizes=(1_000_000, 2_000_000, 4_000_000, 8_000_000, 16_000_000),
    listing_sizes=(1_000, 2_000, 4_000, 8_000, 16_000),
    repeats=5,
    race_seconds=10.0,
    race_swaps=20_000,
    race_commands=20_000,
)

QUICK = Plan(
    view_file_bytes=20_000_000,
    listing_entries=10_000,
    edit_sizes=(65_536, 131_072, 262_144, 524_288),
    occurrence_counts=(2_048, 4_096, 8_192, 16_384),
    view_sizes=(1_000_000, 2_000_000, 4_000_000, 8_000_000),
    listing_sizes=(500, 1_000, 2_000, 4_000),
    repeats=3,
    race_seconds=2.0,
    race_swaps=5_000,
    race_commands=5_000,
)


@dataclasses.dataclass
class StressReport:
    """What a stress run found (`run_stress` returns only `findings`)."""

    findings: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    notes: List[str] = dataclasses.field(default_factory=list)
    """Checks skipped or left undecided, and why (never a finding)."""
    figures: Dict[str, Dict[str, Any]] = dataclasses.field(default_factory=dict)
    """What each check measured, by check ID: peaks, times, ratios, swaps."""

    def add(self, kind: str, check: str, detail: str) -> None:
        finding = {"class": kind, "check": check, "detail": detail}
        if finding not in self.findings:
            self.findings.append(finding)


class _Skip(Exception):
    """The check cannot run against this target; the message is the note."""


# --- one check's directory, target and screening -----------------------------------------------


class _Run(ScreenedRun):
    """A fresh case directory and target for one check; every result goes through `execute`."""

    def __init__(self, check: str, case: CaseDir, target: Target, canary: str, report: StressReport) -> None:
        super().__init__(check, case, canary)
        self.target = target
        self.report = report

    @property
    def filesystem(self) -> bool:
        return self.target.storage == "filesystem"

    def execute(self, command: Dict[str, Any]) -> StepResult:
        result = self.target.execute(command)
        self.screen(command, result)
        return result

    def screen(self, command: Dict[str, Any], result: StepResult) -> None:
        name = str(command.get("command"))
        for effect, problem in self.effects(name, result):
            self.report.add(class_of(effect), self.check, problem)
        output = result.output
        if len(output) > OUTPUT_BOUND:
            self.report.add(
                class_of(UNBOUNDED_COST),
                "output-size",
                f"{self.check}: a {name} result of {len(output):,} characters (bound {OUTPUT_BOUND:,})",
            )

    def put(self, relative: str, data: bytes) -> None:
        """A file in the root: written directly, or with `create` for a target with its own storage."""
        if self.filesystem:
            path = self.case.root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            return
        self.execute({"command": "delete", "path": f"/memories/{relative}"})  # a reset may have kept it
        result = self.execute({"command": "create", "path": f"/memories/{relative}", "file_text": data.decode()})
        if result.is_error:
            raise _Skip(f"{self.check}: the target refused to create a {len(data):,}-byte file")

    def fresh(self) -> None:
        """A new handler on the same root (caches dropped), warmed up by one small view."""
        self.target.reset(self.case.root)
        if not self.filesystem:
            self.put("warm.txt", b"warm\n")
        self.execute({"command": "view", "path": "/memories/warm.txt"})


def _changed(before: hosttree.Tree, after: hosttree.Tree) -> List[str]:
    """The names (relative to the case directory) that appeared, went or changed beside the root
    (layout.outside_snapshot), a folder's modification time included (a name made and removed again leaves only
    that)."""
    return [
        path
        for path in sorted(set(before) | set(after))
        if not hosttree.same(before.get(path), after.get(path))
        or (before[path].kind == hosttree.DIR and before[path].mtime_ns != after[path].mtime_ns)
    ]


# --- peak memory -------------------------------------------------------------------------------


def _peak(run: _Run, command: Dict[str, Any], rss_bound: int) -> Optional[Tuple[StepResult, int, int, str]]:
    """(result, peak bytes, bound, how measured), or None (noted) when this target cannot be measured."""
    leader = usage.target_pid(run.target)
    if not isinstance(run.target, InProcessTarget) and (leader is None or not os.path.exists(f"/proc/{leader}")):
        run.report.notes.append(f"{run.check}: skipped, the implementation's memory cannot be measured here")
        return None
    result, peak = usage.peak(run.target, lambda: run.execute(command), session=True, collect=True)
    if peak.method == usage.TRACEMALLOC:
        return result, peak.bytes or 0, TRACED_BOUND, "Python allocations traced"
    how = "resident-set growth of the adapter" + ("" if peak.exact else " (a lower bound: its peak could not be reset)")
    return result, peak.bytes or 0, rss_bound, how


def _mb(size: int) -> str:
    return f"{size / 1_000_000:,.1f} MB"


def _judge_peak(run: _Run, what: str, measured: Optional[Tuple[StepResult, int, int, str]]) -> None:
    if measured is None:
        return
    result, peak, bound, how = measured
    run.report.figures[run.check] = {"peak_bytes": peak, "bound_bytes": bound, "method": how}
    if result.is_error and not result.misbehaved:
        run.report.notes.append(f"{run.check}: the target refused the command (its peak was still measured)")
    if peak > bound:
        run.report.add(class_of(UNBOUNDED_COST), run.check, f"{what} peaked at {_mb(peak)} ({how}; bound {_mb(bound)})")


def _big_file(path: pathlib.Path, size: int) -> int:
    """A file of `size` bytes (rounded down to whole lines); returns its number of lines."""
    block = LINE * 5_000
    with open(path, "wb") as handle:
        for _ in range(size // len(block)):
            handle.write(block)
        handle.write(LINE * ((size % len(block)) // len(LINE)))
    return size // len(LINE)


def _memory_view_range(run: _Run, plan: Plan) -> None:
    if not run.filesystem:
        raise _Skip(f"{run.check}: skipped, the target keeps its own storage (the file is written into the root)")
    lines = _big_file(run.case.root / "big.txt", plan.view_file_bytes)
    command = {"command": "view", "path": "/memories/big.txt", "view_range": [lines - 9, lines]}
    run.fresh()
    rss_bound = max(RSS_BOUND, plan.view_file_bytes // 2)
    what = f"a 10-line view_range at the end of a {_mb(plan.view_file_bytes)} file"
    _judge_peak(run, what, _peak(run, command, rss_bound))


def _folder(root: pathlib.Path, name: str, entries: int) -> None:
    folder = root / name
    folder.mkdir()
    for index in range(entries):
        with open(folder / f"entry-{index:06d}-{'n' * 24}.txt", "wb") as handle:
            handle.write(b"x\n")


def _memory_listing(run: _Run, plan: Plan) -> None:
    if not run.filesystem:
        raise _Skip(f"{run.check}: skipped, the target keeps its own storage (the folder is made in the root)")
    _folder(run.case.root, "big", plan.listing_entries)
    run.fresh()
    what = f"a listing of a {plan.listing_entries:,}-entry folder"
    _judge_peak(run, what, _peak(run, {"command": "view", "path": "/memories/big"}, RSS_BOUND))


# --- growth ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Series:
    """One input that doubles: `prepare(run, n, repeat)` makes the input and returns the command to time."""

    what: str
    """What was timed, with {low} and {high} for the first and last size."""
    sizes: Callable[[Plan], Tuple[int, ...]]
    prepare: Callable[[_Run, int, int], Dict[str, Any]]
    needs_filesystem: bool


def _edit_input(run: _Run, size: int, repeat: int) -> Dict[str, Any]:
    name = f"edit-{size}-{repeat}.txt"
    run.put(name, (b"y" * 63 + b"\n") * (size // 64 - 1) + b"unique-old\n")
    return {"command": "str_replace", "path": f"/memories/{name}", "old_str": "unique-old", "new_str": "unique-new"}


def _occurrences_input(run: _Run, count: int, repeat: int) -> Dict[str, Any]:
    name = f"occurrences-{count}.txt"
    if repeat == 0 or not run.filesystem:
        run.put(name, b"needle\n" * count)
    return {"command": "str_replace", "path": f"/memories/{name}", "old_str": "needle", "new_str": "pin"}


def _view_input(run: _Run, size: int, repeat: int) -> Dict[str, Any]:
    name = f"view-{size}.txt"
    lines = size // len(LINE)
    if repeat == 0:
        _big_file(run.case.root / name, size)
    return {"command": "view", "path": f"/memories/{name}", "view_range": [lines - 9, lines]}


def _listing_input(run: _Run, entries: int, repeat: int) -> Dict[str, Any]:
    name = f"folder-{entries}"
    if repeat == 0:
        _folder(run.case.root, name, entries)
    return {"command": "view", "path": f"/memories/{name}"}


SERIES = {
    "growth-str-replace-size": _Series(
        "str_replace of one occurrence in files of {low} to {high} bytes", lambda p: p.edit_sizes, _edit_input, False
    ),
    "growth-str-replace-occurrences": _Series(
        "str_replace of an old_str occurring {low} to {high} times",
        lambda p: p.occurrence_counts,
        _occurrences_input,
        False,
    ),
    "growth-view-size": _Series(
        "a 10-line view_range at the end of files of {low} to {high} bytes", lambda p: p.view_sizes, _view_input, True
    ),
    "growth-listing": _Series(
        "a listing of folders of {low} to {high} entries", lambda p: p.listing_sizes, _listing_input, True
    ),
}


def _clock_name(target: Target) -> str:
    """What growth is timed with: the implementation's CPU time where it can be read, else the wall clock.

    CPU time, because on a shared machine a command of a few milliseconds is often descheduled part-way,
    and more often the longer it runs: wall-clock times then grow faster than the work does.
    """
    if isinstance(target, InProcessTarget):
        return "CPU time of the thread that runs the command"
    leader = usage.target_pid(target)
    if leader is not None and os.path.exists(f"/proc/{leader}/task"):
        return "CPU time of the adapter's processes"
    return "wall-clock time"


def _timed(run: _Run, command: Dict[str, Any]) -> float:
    gc.collect()
    return usage.timed(run.target, lambda: run.execute(command), session=True)[1]


def median_ratio(seconds: Sequence[float]) -> Tuple[Optional[float], List[float]]:
    """(the median of t(2n)/t(n) over the doublings, or None when the series is too fast to judge; the ratios).

    The median, so that one doubling that crosses a threshold of the machine (a cache, an allocator's
    switch to fresh pages) does not decide; a fixed cost per command pulls every ratio towards 1.
    """
    ratios = [later / earlier for earlier, later in zip(seconds, seconds[1:]) if earlier > 0]
    judged = len(ratios) >= 2 and max(seconds) >= TIMING_FLOOR
    return (statistics.median(ratios) if judged else None), ratios


def _rounds(run: _Run, series: _Series, sizes: Sequence[int], rounds: range, best: Dict[int, float]) -> bool:
    """Time every size once per round, keeping each size's best; False when the target hung or crashed.

    Rounds go across the sizes, so that a burst of load from elsewhere slows one round of every size
    rather than every run of one size.
    """
    for repeat in rounds:
        for size in sizes:
            run.fresh()  # before the input is made: a reset empties a target's own storage
            command = series.prepare(run, size, repeat)
            best[size] = min(best.get(size, float("inf")), _timed(run, command))
            if run.failed:
                return False
    return True


def _growth(run: _Run, plan: Plan) -> None:
    series = SERIES[run.check]
    if series.needs_filesystem and not run.filesystem:
        raise _Skip(f"{run.check}: skipped, the target keeps its own storage (inputs are written into the root)")
    sizes = series.sizes(plan)
    best: Dict[int, float] = {}
    clock_name = _clock_name(run.target)
    if not _rounds(run, series, sizes, range(plan.repeats), best):
        return
    median, ratios = median_ratio([best[size] for size in sizes])
    rounds = plan.repeats
    if median is not None and median > GROWTH_RATIO:  # confirmed by as many rounds again before it is said
        if not _rounds(run, series, sizes, range(plan.repeats, 2 * plan.repeats), best):
            return
        median, ratios = median_ratio([best[size] for size in sizes])
        rounds *= 2
    seconds = [best[size] for size in sizes]
    run.report.figures[run.check] = {
        "sizes": list(sizes),
        "seconds": seconds,
        "ratios": ratios,
        "median_ratio": median,
        "rounds": rounds,
        "clock": clock_name,
    }
    if median is None:
        run.report.notes.append(f"{run.check}: too fast to judge (under {TIMING_FLOOR * 1000:g} ms at every size)")
    elif median > GROWTH_RATIO:
        shown = ", ".join(f"{ratio:.1f}" for ratio in ratios)
        run.report.add(
            class_of(UNBOUNDED_COST),
            run.check,
            series.what.format(low=f"{sizes[0]:,}", high=f"{sizes[-1]:,}") + f": time ratio per doubling {shown} "
            f"(median {median:.1f}, over {GROWTH_RATIO:g}; linear is 2)",
        )


# --- the race ----------------------------------------------------------------------------------

SWAPPER_SOURCE = r"""
import ctypes, errno, os, random, select, sys, time

root, seconds, least_swaps, limit = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
folder, link, away = (os.path.join(root, name) for name in ("d", "d_link", "d_away"))
exchange = None
if sys.platform.startswith("linux"):
    try:
        exchange = ctypes.CDLL(None, use_errno=True).renameat2
        exchange.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        exchange.restype = ctypes.c_int
    except (OSError, AttributeError):
        exchange = None
swaps, problem, first, second = 0, "", os.fsencode(folder), os.fsencode(link)
print("ready", flush=True)
started, enough = time.monotonic(), False
try:
    while True:
        if swaps % 64 == 0:
            if select.select([0], [], [], 0)[0]:
                if not os.read(0, 1):
                    break  # the caller has stopped the race
                enough = True  # the caller's commands are done
            elapsed = time.monotonic() - started
            if elapsed >= limit or (enough and swaps >= least_swaps and elapsed >= seconds):
                break
        if exchange is not None:
            if exchange(-100, first, -100, second, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
                code = ctypes.get_errno()
                if code not in (errno.EINVAL, errno.ENOSYS):
                    raise OSError(code, os.strerror(code))
                exchange = None  # this filesystem cannot exchange: rename instead
                continue
        elif swaps % 2 == 0:  # no exchange: the folder moved away and a link put in its place, then back
            os.rename(folder, away)
            os.symlink("../outside", folder)
        else:
            os.unlink(folder)
            os.rename(away, folder)
        swaps += 1
        if random.random() < 0.5:  # short sleeps: waking up, the swapper preempts the target anywhere
            time.sleep(random.random() * 0.0002)
except OSError as error:
    problem = error.strerror or "the swap failed"
print(swaps, int(exchange is not None), problem, flush=True)
"""
"""Swaps `root/d` (a folder) and `root/d_link` (a link to ../outside) until it has swapped `least_swaps` times,
for at least `seconds`, and its caller has written to its standard input (the caller's commands are done), or
until `limit` seconds, or until its caller closes its standard input; then prints how many swaps it made,
whether they were atomic exchanges, and what stopped it early (if anything).

Half the swaps are followed by a sleep of up to 0.2 ms: on a busy machine the swapper and the target
may share one core, where a swapper that never sleeps only runs between the target's time slices and
so never inside a check-then-use window; one that wakes up often preempts the target at random points."""

SWAPPER_GRACE = 10.0
"""Seconds the swapping process may take to start, or to finish after its time is up."""

RACE_TIME_LIMIT = 30
"""A race that has not reached its counts after this many times Plan.race_seconds stops (a hang guard)."""


class _Swapper:
    """The swapping as a separate process: no interpreter lock shared with an in-process target, so the
    swaps land between any two of its instructions, as another program's would."""

    def __init__(self, root: pathlib.Path, seconds: float, least_swaps: int) -> None:
        self.swaps, self.exchange, self.problem = 0, False, ""
        self.started = time.monotonic()
        limit = RACE_TIME_LIMIT * seconds
        self.process = subprocess.Popen(
            [sys.executable, "-c", SWAPPER_SOURCE, str(root), repr(seconds), str(least_swaps), repr(limit)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            self.problem = "the swapping process did not start"

    @property
    def running(self) -> bool:
        return not self.problem and self.process.poll() is None

    def enough(self) -> None:
        """The caller's commands are done: the swapper stops once its own counts are reached too."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write("e")
            self.process.stdin.flush()
        except OSError:
            pass

    def finish(self) -> None:
        """Stop the swapping now (communicate() closes its standard input), and read what it did."""
        try:
            out, _ = self.process.communicate(timeout=SWAPPER_GRACE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            self.problem = self.problem or "the swapping process did not stop"
            return
        fields = out.split(None, 2)
        if len(fields) < 2 or not fields[0].isdigit():
            self.problem = self.problem or "the swapping process failed"
            return
        self.swaps, self.exchange = int(fields[0]), fields[1] == "1"
        self.problem = self.problem or (fields[2].strip() if len(fields) > 2 else "")


RACE_COMMANDS: Tuple[Dict[str, Any], ...] = (
    {"command": "view", "path": "/memories/d/dir/inner.txt"},
    {"command": "str_replace", "path": "/memories/d/secret.txt", "old_str": "secret", "new_str": "SECRET"},
    {"command": "view", "path": "/memories/d/secret.txt"},
    {"command": "str_replace", "path": "/memories/d/secret.txt", "old_str": "SECRET", "new_str": "secret"},
    {"command": "view", "path": "/memories/d/dir"},
    {"command": "insert", "path": "/memories/d/dir/inner.txt", "insert_line": 0, "insert_text": "top"},
    {"command": "view", "path": "/memories/d/dir/inner.txt"},
    {"command": "create", "path": "/memories/d/dir/new.txt", "file_text": "planted\n"},
    {"command": "view", "path": "/memories/d/secret.txt"},
    {"command": "delete", "path": "/memories/d/dir/new.txt"},
)
"""Every writing command kind through the swapped folder, a read between writes; run round and round.

Nothing here deletes or rewrites a file of the canary tree beyond recognition, so a read that escapes late
in the run still finds the canary text; the tree's folders' modification times catch a create and a delete
that both escaped."""


def _race(run: _Run, plan: Plan) -> None:
    if os.name != "posix":
        raise _Skip(f"{run.check}: skipped, the race needs POSIX symbolic links and renames")
    if not run.filesystem:
        raise _Skip(f"{run.check}: skipped, the target keeps its own storage (the folder is swapped in the root)")
    root = run.case.root
    (root / "d" / "dir").mkdir(parents=True)
    (root / "d" / "secret.txt").write_bytes(b"inside secret\n")
    (root / "d" / "dir" / "inner.txt").write_bytes(b"inside inner\n")
    os.symlink("../outside", root / "d_link")
    run.fresh()
    commands, succeeded = 0, 0
    swapper = _Swapper(root, plan.race_seconds, plan.race_swaps)
    try:
        while swapper.running and not run.failed:
            result = run.execute(dict(RACE_COMMANDS[commands % len(RACE_COMMANDS)]))
            commands += 1
            succeeded += not result.is_error
            if commands == plan.race_commands:
                swapper.enough()
    finally:
        swapper.finish()
    run.report.figures[run.check] = {
        "swaps": swapper.swaps,
        "commands": commands,
        "succeeded": succeeded,
        "refused": commands - succeeded,
        "seconds": round(time.monotonic() - swapper.started, 1),
        "exchange": swapper.exchange,
    }
    if swapper.problem:
        run.report.notes.append(f"{run.check}: the swapping stopped early: {swapper.problem}")
    elif not run.failed and (swapper.swaps < plan.race_swaps or commands < plan.race_commands):
        run.report.notes.append(
            f"{run.check}: the race reached its time limit ({RACE_TIME_LIMIT * plan.race_seconds:g} s) with "
            f"{swapper.swaps:,} swaps and {commands:,} commands, fewer than the {plan.race_swaps:,} and "
            f"{plan.race_commands:,} planned"
        )


# --- running -----------------------------------------------------------------------------------

_CHECK_FUNCTIONS: Dict[str, Callable[[_Run, Plan], None]] = {
    "memory-view-range": _memory_view_range,
    "memory-listing": _memory_listing,
    "growth-str-replace-size": _growth,
    "growth-str-replace-occurrences": _growth,
    "growth-view-size": _growth,
    "growth-listing": _growth,
    "race-symlink-swap": _race,
}


def _selected(checks: Optional[Sequence[str]]) -> Iterator[str]:
    for name in checks if checks is not None else CHECKS:
        if name in GROUPS:
            yield from GROUPS[name]
        elif name in _CHECK_FUNCTIONS:
            yield name
        else:
            raise ValueError(f"unknown stress check {name!r}: use one of {', '.join(CHECKS + tuple(GROUPS))}")


def _run_check(
    check: str, open_target: Callable[[pathlib.Path], Target], workdir: pathlib.Path, plan: Plan, report: StressReport
) -> None:
    canary = f"CANARY-stress-{secrets.token_hex(8)}"
    case = make_case_dir(workdir / f"stress-{check}-{secrets.token_hex(4)}", canary)
    try:
        before = outside_snapshot(case)
        target = open_target(case.root)
        try:
            run = _Run(check, case, target, canary, report)
            try:
                run.put("warm.txt", b"warm\n")
                _CHECK_FUNCTIONS[check](run, plan)
            except _Skip as skip:
                report.notes.append(str(skip))
        finally:
            target.close()
        changed = _changed(before, outside_snapshot(case))
        if changed:
            shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
            report.add(class_of(OUTSIDE_CHANGED), check, f"the tree outside the root changed: {shown}")
    finally:
        remove_case_dir(case.path)


def stress_report(
    open_target: Callable[[pathlib.Path], Target],
    workdir: pathlib.Path,
    *,
    quick: bool = False,
    checks: Optional[Sequence[str]] = None,
) -> StressReport:
    """Run the chosen checks (IDs from CHECKS or names from GROUPS; all by default): findings, notes, figures."""
    plan = QUICK if quick else FULL
    report = StressReport()
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for check in _selected(checks):
        _run_check(check, open_target, workdir, plan, report)
    return report


def run_stress(
    open_target: Callable[[pathlib.Path], Target], workdir: pathlib.Path, *, quick: bool = False
) -> List[Dict[str, Any]]:
    """Every stress check against the target `open_target(root)` opens: the findings (empty: clean)."""
    return stress_report(open_target, workdir, quick=quick).findings


def summary_lines(report: StressReport) -> List[str]:
    """The report as a CLI would show it: one line per finding, then the notes and the figures."""
    lines = [f"{finding['class'].upper()} {finding['check']}: {finding['detail']}" for finding in report.findings]
    lines += [f"note: {note}" for note in report.notes]
    for check, figures in report.figures.items():
        shown = ", ".join(f"{name}={_figure(value)}" for name, value in figures.items())
        lines.append(f"{check}: {shown}")
    return lines or ["stress: nothing to report"]


def _figure(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return "[" + ", ".join(_figure(item) for item in value) + "]"
    return str(value)
