"""The filesystem store's CPU per operation against the bare durable operation (issue 27): `python -m bench --only cpu`.

The machine is shared, so wall time says more about the neighbours than about us: each operation is timed in CPU
time (`time.process_time`, this process only, user and system), one operation at a time, refmem and its floor taking
turns (the order swapped every repetition), and the median of many repetitions is read. The floor is the bare durable
operation, by descriptor on a folder held open: `rename` (or `unlink`) then the folder's `fsync`; for a view, the
bench's `os` floor (open, read, close of the file one folder down). Both on tmpfs (`/dev/shm`) and on disk (the
system's temp folder), since an fsync costs CPU on a disk and nothing on tmpfs.

refmem is the handler as an application makes it (`MemoryHandler(root)`: the tracked directory with its access
records), and the same with its change journal made (what OpenClaw's index reads through `changes_since`). With
`--baseline DIR` (an earlier commit's `refmem/`), that copy takes its turns too, in columns of its own, so before and
after are read side by side from one run.
"""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import tempfile
import time
from typing import Callable, Dict, List, Optional, Tuple

from . import impls

Op = Callable[[int], object]
# After the warm-up, a pause longer than D-STORE-CHANGES-FS-ABSENT's two seconds: a long-lived handler's `.refmem` has
# settled, so "no journal" is remembered (one `stat`), as it is in an application's steady state.
SETTLE_SECONDS = 2.1
TARGETS = {"rename": (40e-6, 1.3), "delete": (40e-6, 1.3), "nested view": (None, 1.4)}


def _folder_with(root: str, count: int, prefix: str) -> str:
    folder = os.path.join(root, "d")
    os.makedirs(folder, exist_ok=True)
    for i in range(count):
        with open(os.path.join(folder, f"{prefix}{i:05d}.md"), "wb") as out:
            out.write(b"a small memory\n" * 5)
    return folder


def _refmem(root: str, journal: bool, baseline: bool = False) -> impls.Impl:
    """refmem as an application makes it (`MemoryHandler(root)`), or the baseline copy (`--baseline`) made alike."""
    made: impls.Impl = impls.Baseline(root) if baseline else impls.Refmem(root)
    if journal:
        made.handler.store.changes_since(0)  # type: ignore[attr-defined]
    return made


def _with_baseline() -> bool:
    """Whether `--baseline DIR` named an earlier copy of refmem to measure beside this one."""
    return impls.Baseline.source is not None


Ops = Dict[str, Tuple[Op, Op, Callable[[int], None], Optional[Op]]]


def _ops(base: str, reps: int, journal: bool) -> Ops:
    """For each operation: (refmem's, the floor's, what prepares repetition i for both, untimed, the baseline's or
    None)."""
    ops: Ops = {}
    # rename back and forth within one folder
    rroot, froot, broot = (tempfile.mkdtemp(dir=base) for _ in range(3))
    _folder_with(rroot, 1, "a")
    _folder_with(broot, 1, "a")
    ffolder = _folder_with(froot, 1, "a")
    refmem = _refmem(rroot, journal)
    before = _refmem(broot, journal, baseline=True) if _with_baseline() else None
    fd = os.open(ffolder, os.O_RDONLY | os.O_DIRECTORY)
    renames = [{"command": "rename", "old_path": f"/memories/d/{old}00000.md", "new_path": f"/memories/d/{new}00000.md"}
               for old, new in (("a", "b"), ("b", "a"))]

    def refmem_rename(i: int) -> object:
        return refmem.execute(renames[i % 2])

    def baseline_rename(i: int) -> object:
        return before.execute(renames[i % 2])  # type: ignore[union-attr]

    def floor_rename(i: int) -> object:
        old, new = ("a", "b") if i % 2 == 0 else ("b", "a")
        os.rename(f"{old}00000.md", f"{new}00000.md", src_dir_fd=fd, dst_dir_fd=fd)
        os.fsync(fd)
        return None

    ops["rename"] = (refmem_rename, floor_rename, lambda i: None, baseline_rename if before else None)
    # delete of a file made (untimed) just before
    droot, dfroot, dbroot = (tempfile.mkdtemp(dir=base) for _ in range(3))
    dfolder = _folder_with(droot, 0, "x")
    dffolder = _folder_with(dfroot, 0, "x")
    dbfolder = _folder_with(dbroot, 0, "x")
    drefmem = _refmem(droot, journal)
    dbefore = _refmem(dbroot, journal, baseline=True) if _with_baseline() else None
    dfd = os.open(dffolder, os.O_RDONLY | os.O_DIRECTORY)
    delete = {"command": "delete", "path": "/memories/d/gone.md"}

    def prepare_delete(i: int) -> None:
        for folder in (dfolder, dffolder, dbfolder):
            with open(os.path.join(folder, "gone.md"), "wb") as out:
                out.write(b"a small memory\n")

    def refmem_delete(i: int) -> object:
        return drefmem.execute(delete)

    def baseline_delete(i: int) -> object:
        return dbefore.execute(delete)  # type: ignore[union-attr]

    def floor_delete(i: int) -> object:
        os.unlink("gone.md", dir_fd=dfd)
        os.fsync(dfd)
        return None

    ops["delete"] = (refmem_delete, floor_delete, prepare_delete, baseline_delete if dbefore else None)
    # a view of a small file one folder down
    vroot = tempfile.mkdtemp(dir=base)
    os.makedirs(os.path.join(vroot, "notes"))
    with open(os.path.join(vroot, "notes", "today.md"), "w") as out:
        out.write("".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(20)))
    vrefmem, vfloor = _refmem(vroot, journal), impls.Floor(vroot)
    vbefore = _refmem(vroot, journal, baseline=True) if _with_baseline() else None
    view = {"command": "view", "path": "/memories/notes/today.md"}
    ops["nested view"] = (lambda i: vrefmem.execute(view), lambda i: vfloor.execute(view), lambda i: None,
                          (lambda i: vbefore.execute(view)) if vbefore else None)  # type: ignore[union-attr]
    return ops


def measure(base: str, reps: int, journal: bool) -> Dict[str, Tuple[float, float, Optional[float]]]:
    """(refmem's median CPU seconds, the floor's, the baseline's or None) for each operation, taking turns (the
    order rotating every repetition)."""
    found: Dict[str, Tuple[float, float, Optional[float]]] = {}
    clock = time.process_time
    for name, (mine, floor, prepare, before) in _ops(base, reps, journal).items():
        ways = [("refmem", mine), ("floor", floor)] + ([("baseline", before)] if before is not None else [])
        for i in range(20):  # warm up: caches made, the journal and the records folder opened
            prepare(i)
            for _label, op in ways:
                op(i)
        time.sleep(SETTLE_SECONDS if reps >= 100 else 0)
        samples: Dict[str, List[float]] = {label: [] for label, _op in ways}
        gc.collect()
        gc.disable()
        try:
            for i in range(reps):
                prepare(i)
                turn = ways[i % len(ways):] + ways[: i % len(ways)]
                for label, op in turn:
                    started = clock()
                    op(i)
                    samples[label].append(clock() - started)
        finally:
            gc.enable()
        found[name] = (statistics.median(samples["refmem"]), statistics.median(samples["floor"]),
                       statistics.median(samples["baseline"]) if before is not None else None)
    return found


def _renamer(root: str, how: str) -> Op:
    """A rename back and forth of d/a00000.md in `root`, made `how`: by the bare store alone, by the handler over it,
    by the handler as an application makes it (access records), and that with the change journal made."""
    from refmem import MemoryHandler
    from refmem.directory import Directory
    from refmem.paths import parse_path

    _folder_with(root, 1, "a")
    if how == "store":
        store = Directory(root)
        names = [parse_path(f"/memories/d/{stem}00000.md") for stem in ("a", "b")]
        return lambda i: store.rename(names[i % 2], names[1 - i % 2])
    handler = MemoryHandler(Directory(root)) if how == "handler, bare store" else MemoryHandler(root)
    if how == "handler, journal made":
        handler.store.changes_since(0)  # type: ignore[attr-defined]
    inputs = [{"command": "rename", "old_path": f"/memories/d/{old}00000.md", "new_path": f"/memories/d/{new}00000.md"}
              for old, new in (("a", "b"), ("b", "a"))]
    return lambda i: handler.execute(inputs[i % 2])


LAYERS = ("store", "handler, bare store", "handler, access records", "handler, journal made")
LABELS = {
    "store": "the bare store (`Directory.rename`)",
    "handler, bare store": "the handler over the bare store",
    "handler, access records": "the handler as made (access records; no journal yet)",
    "handler, journal made": "the same with the journal made",
}


def breakdown(base: str, reps: int) -> Dict[str, float]:
    """Median CPU seconds of a rename made each way of LAYERS, and of the floor, all taking turns: what each layer
    adds is the difference between neighbours."""
    ways: Dict[str, Op] = {how: _renamer(tempfile.mkdtemp(dir=base), how) for how in LAYERS}
    froot = tempfile.mkdtemp(dir=base)
    fd = os.open(_folder_with(froot, 1, "a"), os.O_RDONLY | os.O_DIRECTORY)

    def floor(i: int) -> object:
        old, new = ("a", "b") if i % 2 == 0 else ("b", "a")
        os.rename(f"{old}00000.md", f"{new}00000.md", src_dir_fd=fd, dst_dir_fd=fd)
        os.fsync(fd)
        return None

    ways["floor"] = floor
    order = list(ways)
    samples: Dict[str, List[float]] = {name: [] for name in order}
    clock = time.process_time
    for i in range(20):
        for op in ways.values():
            op(i)
    time.sleep(SETTLE_SECONDS if reps >= 100 else 0)
    gc.collect()
    gc.disable()
    try:
        for i in range(20, 20 + reps):
            turn = order[i % len(order):] + order[: i % len(order)]
            for name in turn:
                started = clock()
                ways[name](i)
                samples[name].append(clock() - started)
    finally:
        gc.enable()
        os.close(fd)
    return {name: statistics.median(values) for name, values in samples.items()}


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def main_section(base: str, quick: bool, disk: Optional[str] = None, reps: Optional[int] = None) -> str:
    """The table (markdown) of one run: every operation, on tmpfs and on disk, both configurations."""
    reps = reps or (600 if quick else 6000)
    places = []
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        places.append(("tmpfs", tempfile.mkdtemp(prefix="refmem-cpu-", dir="/dev/shm")))
    places.append(("disk", tempfile.mkdtemp(prefix="refmem-cpu-", dir=disk or base)))
    lines = [
        f"CPU time per operation (`time.process_time`), median of {reps:,} turns each, refmem and the floor "
        "alternating. Targets: rename and delete at most 40 µs over the floor on tmpfs and at most 1.3x on disk; "
        "a nested view at most 1.4x.",
        "",
        "| operation | where | refmem | journal | floor | difference | ratio | target | met |"
        + (" baseline | baseline's difference | baseline's ratio |" if _with_baseline() else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if _with_baseline() else ""),
    ]
    try:
        for where, folder in places:
            for journal in (False, True):
                for name, (mine, floor, before) in measure(folder, reps, journal).items():
                    over, limit = TARGETS[name]
                    if where == "tmpfs" and over is not None:
                        target, met = f"+{over * 1e6:.0f} µs", mine - floor <= over
                    else:
                        target, met = f"{limit}x", mine <= limit * floor
                    lines.append(f"| {name} | {where} | {_us(mine)} | {'made' if journal else 'none'} | "
                                 f"{_us(floor)} | {_us(mine - floor)} | {mine / floor:.2f}x | {target} | "
                                 f"{'yes' if met else 'no'} |"
                                 + ("" if before is None else
                                    f" {_us(before)} | {_us(before - floor)} | {before / floor:.2f}x |"))
        lines += ["", f"Where a rename's CPU goes, on {places[0][0]}: each way of making it, all taking turns "
                  f"(median of {reps:,}); a row's cost over the row above is what its layer adds.", "",
                  "| made by | CPU a rename | over the row above | over the floor |", "|---|---|---|---|"]
        layers = breakdown(places[0][1], reps)
        previous = layers["floor"]
        lines.append(f"| the floor (renameat, fsync) | {_us(previous)} | | |")
        for how in LAYERS:
            lines.append(f"| {LABELS[how]} | {_us(layers[how])} | {_us(layers[how] - previous)} | "
                         f"{_us(layers[how] - layers['floor'])} |")
            previous = layers[how]
    finally:
        for _where, folder in places:
            shutil.rmtree(folder, ignore_errors=True)
    return "\n".join(lines)
