"""Side-by-side benchmarks: refmem, the SDK's local memory tool, and the raw `os` floor.

Run ``python -m bench`` (full, a few minutes) or ``python -m bench --quick`` (CI, well under 30 s).
It prints one table; a full run also writes ``bench/results.md`` (a quick run, or one of some scenarios
with ``--only``, writes nothing unless ``--out`` says where, so it never replaces the committed full-run
figures). ``--only stores`` runs the stores under concurrent clients (bench/stores.py), and ``--only cpu`` the
filesystem store's CPU per operation against the bare durable operation (bench/cpu.py); the default run leaves
both out.

Method
------
* One run, one machine, the same trees: every implementation reads the same files; writes that
  change state either undo themselves (str_replace alternates A->B, B->A) or run on identical copies
  (the mixed workload).
* Times are per call, the median of several rounds; within a round the implementations take turns
  (refmem, sdk, floor, then rotated), so background load hits them alike. Ratios matter, not the
  absolute numbers: the machine is shared.
* Peak memory is measured with ``tracemalloc`` around one call: the growth of the Python heap's
  peak over what was allocated before. File contents, decoded text and line lists all live on that
  heap, so it is where reading a whole file shows; it leaves out the interpreter's own baseline and
  C-library buffers, which are the same for every implementation and do not grow with the file.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import cpu, impls, stores
from . import growth as scaling

NAMES = ("refmem", "sdk", "floor")
FIRST_VIEW = "refmem, first view"
COUNTED_FLOOR = impls.CountedFloor.name
BASELINE_FIRST_VIEW = "baseline, first view"


# --- building trees ---------------------------------------------------------------------------


def small_text(lines: int = 20) -> str:
    return "".join(f"line {i}: the quick brown fox jumps over the lazy dog {i * 7}\n" for i in range(lines))


def make_tree(root: str, files: int, per_folder: int = 20, body: str = "") -> None:
    """`files` files, `per_folder` per folder, folders directly below the root (2 levels)."""
    os.makedirs(root, exist_ok=True)
    data = (body or small_text(5)).encode()
    for i in range(files):
        folder = os.path.join(root, f"d{i // per_folder:03d}")
        if i % per_folder == 0:
            os.makedirs(folder, exist_ok=True)
        write_bytes(os.path.join(folder, f"f{i:05d}.md"), data)


def write_bytes(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def make_file(path: str, size: int, line: int = 200) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    row = ("x" * (line - 12))
    with open(path, "w") as out:
        written = 0
        i = 0
        chunk: List[str] = []
        while written < size:
            text = f"{i:010d} {row}\n"
            chunk.append(text)
            written += len(text)
            i += 1
            if len(chunk) == 10000:
                out.write("".join(chunk))
                chunk = []
        out.write("".join(chunk))


# --- measuring --------------------------------------------------------------------------------


def is_error(output: object) -> bool:
    if hasattr(output, "is_error"):
        return bool(output.is_error)  # type: ignore[attr-defined]
    return isinstance(output, str) and output.startswith("error:")


def timed(
    runners: Dict[str, impls.Impl], make_input: Callable[[int], dict], calls: int, rounds: int
) -> Dict[str, Optional[float]]:
    """Median seconds per call for each implementation; None when a call returned an error."""
    samples: Dict[str, List[float]] = {name: [] for name in runners}
    failed: Dict[str, str] = {}
    order = list(runners)
    for round_ in range(rounds):
        rotated = order[round_ % len(order):] + order[: round_ % len(order)]
        for name in rotated:
            impl = runners[name]
            gc.collect()
            started = time.perf_counter()
            for i in range(calls):
                out = impl.execute(make_input(i))
                if round_ == 0 and i < 2 and is_error(out):
                    failed[name] = str(getattr(out, "output", out))[:200]
            samples[name].append((time.perf_counter() - started) / calls)
    result: Dict[str, Optional[float]] = {}
    for name in runners:
        result[name] = None if name in failed else statistics.median(samples[name])
        if name in failed:
            print(f"  ! {name} failed: {failed[name]}", file=sys.stderr)
    return result


def peak_memory(impl: impls.Impl, tool_input: dict) -> Tuple[float, float]:
    """(peak heap growth in bytes, seconds) for one call."""
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        started = time.perf_counter()
        out = impl.execute(tool_input)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if is_error(out):
        print(f"  ! {impl.name} failed: {str(getattr(out, 'output', out))[:200]}", file=sys.stderr)
    del out
    return float(peak - before), elapsed


# --- scenarios --------------------------------------------------------------------------------


def both(values: Dict[str, Optional[float]]) -> Optional[bool]:
    """None (no verdict) unless refmem and the sdk both have a figure."""
    return None if values.get("sdk") is None or values.get("refmem") is None else True


class Row:
    def __init__(self, scenario: str, values: Dict[str, Optional[float]], unit: str, target: str = "",
                 met: Optional[bool] = None, note: str = "") -> None:
        self.scenario, self.values, self.unit = scenario, values, unit
        self.target, self.met, self.note = target, met, note


def fmt(value: Optional[float], unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s/call":
        if value < 1e-3:
            return f"{value * 1e6:.1f} µs"
        if value < 1:
            return f"{value * 1e3:.2f} ms"
        return f"{value:.2f} s"
    if unit == "bytes":
        return f"{value / 2**20:.1f} MB"
    if unit == "cmd/s":
        return f"{value:,.0f}/s"
    return f"{value:g}"


def ratio(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.1f}x"


class Bench:
    def __init__(self, base: str, quick: bool, names: Sequence[str]) -> None:
        self.base = base
        self.quick = quick
        self.names = list(names)
        self.rows: List[Row] = []
        self.growth_file: List[Tuple[int, Dict[str, Optional[float]]]] = []
        self.growth_tree: List[Tuple[int, Dict[str, Optional[float]]]] = []
        self.extra: List[str] = []
        self.mixed_breakdown: List[Tuple[str, int, Dict[str, Optional[float]]]] = []
        self.scaling: List[scaling.Series] = []

    def tree(self, label: str) -> str:
        return os.path.join(self.base, label, "memories")

    def runners(self, root: str, **refmem_options: object) -> Dict[str, impls.Impl]:
        return {name: impls.make(name, root, **refmem_options) for name in self.names}

    def scale(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    # each scenario adds rows

    def view_small(self) -> None:
        root = self.tree("small")
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "small.md"), "w") as out:
            out.write(small_text(20))
        runners = self.runners(root)
        values = timed(runners, lambda i: {"command": "view", "path": "/memories/small.md"},
                       self.scale(300, 100), self.scale(9, 3))
        met = both(values) and values["sdk"] >= 10 * values["refmem"]
        self.rows.append(Row("view of a small file (1.3 KB, 20 lines)", values, "s/call",
                             "refmem >= 10x faster than sdk", met,
                             "refmem reads and checks the file on every call and reuses the numbered page it "
                             "made from the same bytes; the next row shows the cost without that"))

    def view_nested(self) -> None:
        """The common case for agents that organise their memories: a small file one folder down."""
        root = self.tree("nested")
        os.makedirs(os.path.join(root, "notes"), exist_ok=True)
        with open(os.path.join(root, "notes", "today.md"), "w") as out:
            out.write(small_text(20))
        values = timed(self.runners(root), lambda i: {"command": "view", "path": "/memories/notes/today.md"},
                       self.scale(300, 100), self.scale(9, 3))
        met = both(values) and values["sdk"] >= 10 * values["refmem"]
        self.rows.append(Row("view of a small file one folder down (/memories/notes/today.md)", values, "s/call",
                             "refmem >= 10x faster than sdk", met,
                             "the folder is entered with one openat of its single name from the root's "
                             "descriptor (O_NOFOLLOW | O_DIRECTORY); deeper folders in one openat2(RESOLVE_BENEATH) "
                             "call where Linux has it"))

    def view_small_first(self) -> None:
        """Every call views a file not viewed before: no implementation can reuse anything."""
        root = self.tree("small-first")
        calls, rounds = self.scale(300, 100), self.scale(9, 3)
        count = calls * rounds * len(self.names)
        folder = os.path.join(root, "many")
        os.makedirs(folder, exist_ok=True)
        for i in range(count):
            write_bytes(os.path.join(folder, f"n{i:06d}.md"), (f"file {i}\n" + small_text(19)).encode())
        serial = iter(range(count))
        values = timed(self.runners(root, view_cache_bytes=0),
                       lambda i: {"command": "view", "path": f"/memories/many/n{next(serial):06d}.md"},
                       calls, rounds)
        self.rows.append(Row("view of a small file seen for the first time (1.3 KB, 20 lines)", values, "s/call",
                             "reported", None,
                             "each call views another file, and refmem runs with view_cache_bytes=0"))

    def str_replace(self) -> None:
        root = self.tree("small")
        path = "/memories/small.md"

        def make_input(i: int) -> dict:
            a, b = "line 7: the quick", "line 7: THE QUICK"
            return {"command": "str_replace", "path": path,
                    "old_str": a if i % 2 == 0 else b, "new_str": b if i % 2 == 0 else a}

        values = timed(self.runners(root), make_input, self.scale(40, 6), self.scale(7, 3))
        met = both(values) and values["refmem"] <= values["sdk"]
        self.rows.append(Row("durable str_replace (file + folder fsync)", values, "s/call",
                             "refmem no slower than sdk", met,
                             "the sdk fsyncs the file but not the folder; refmem and floor fsync both"))

    def rename_delete(self) -> None:
        """Renames and deletes of small files, each call on a file not touched before: the floors are the
        bare calls with the same fsyncs (a rename fsyncs the folder it lands in, and the folder it left
        when that is another; a delete fsyncs its folder)."""
        files = self.scale(600, 120)
        folders = 20
        kinds = [
            ("rename of a file into another folder", lambda i: {
                "command": "rename", "old_path": f"/memories/d{i % folders:03d}/f{i:05d}.md",
                "new_path": f"/memories/d{(i + 1) % folders:03d}/moved{i:05d}.md"}),
            ("rename of a file within its folder", lambda i: {
                "command": "rename", "old_path": f"/memories/d{i % folders:03d}/f{i:05d}.md",
                "new_path": f"/memories/d{i % folders:03d}/renamed{i:05d}.md"}),
            ("delete of a file", lambda i: {"command": "delete", "path": f"/memories/d{i % folders:03d}/f{i:05d}.md"}),
        ]
        for label, make_input in kinds:
            runners: Dict[str, impls.Impl] = {}
            for name in self.names:
                root = self.tree(f"rd-{len(self.rows)}-{name}")
                make_tree_spread(root, files, folders)
                runners[name] = impls.make(name, root)
            values = turns(runners, make_input, files, chunk=20)
            met = None
            if values.get("refmem") is not None and values.get("floor") is not None:
                met = values["refmem"] <= 1.2 * values["floor"]
                if values.get("sdk") is not None:
                    met = met and values["refmem"] <= values["sdk"]
            self.rows.append(Row(label, values, "s/call", "refmem <= 1.2x floor and no slower than sdk", met))

    def listing(self) -> None:
        root = self.tree("tree200")
        make_tree(root, 200)
        values = timed(self.runners(root), lambda i: {"command": "view", "path": "/memories"},
                       self.scale(20, 3), self.scale(7, 3))
        met = both(values) and values["sdk"] >= 10 * values["refmem"]
        self.rows.append(Row("view of the root of a 200-file tree (10 folders)", values, "s/call",
                             "refmem >= 10x faster than sdk", met))

    def listing_10k(self) -> None:
        root = self.tree("flat10k")
        folder = os.path.join(root, "big")
        os.makedirs(folder, exist_ok=True)
        for i in range(10_000):
            write_bytes(os.path.join(folder, f"n{i:05d}.md"), b"x\n")
        runners = self.runners(root)
        values = timed(runners, lambda i: {"command": "view", "path": "/memories/big"},
                       self.scale(5, 1), self.scale(5, 1))
        out = runners["refmem"].execute({"command": "view", "path": "/memories/big"}) if "refmem" in runners else None
        lines = len(str(getattr(out, "output", "")).split("\n"))
        capped = out is not None and "[Listing truncated at" in getattr(out, "output", "")
        self.rows.append(Row("view of a 10,000-entry folder", values, "s/call",
                             "listed within the cap (1,000 entries)", capped if out is not None else None,
                             f"refmem returned {lines} lines{' ending with the truncation note' if capped else ''}"))

    def huge_view_range(self) -> None:
        size = self.scale(100 * 2**20, 10 * 2**20)
        root = self.tree("huge")
        make_file(os.path.join(root, "huge.md"), size)
        lines = size // 200
        start = lines // 2
        tool_input = {"command": "view", "path": "/memories/huge.md", "view_range": [start, start + 9]}
        mems: Dict[str, Optional[float]] = {}
        times: Dict[str, Optional[float]] = {}
        for name in self.names:
            impl = impls.make(name, root)
            mem, elapsed = peak_memory(impl, tool_input)
            mems[name] = mem
            times[name] = elapsed
        label = f"{size // 2**20} MB"
        met = None if mems.get("refmem") is None else mems["refmem"] <= 16 * 2**20
        self.rows.append(Row(f"10-line view_range of a {label} file: peak heap growth", mems, "bytes",
                             "refmem <= 16 MB", met))
        self.rows.append(Row(f"10-line view_range of a {label} file: time (one call)", times, "s/call"))

    def mixed(self) -> None:
        files = self.scale(1000, 100)
        commands = self.scale(10_000, 400)
        sequence = mixed_sequence(files, commands, seed=818)
        runners: Dict[str, impls.Impl] = {}
        for name in self.names:
            root = self.tree(f"mixed-{name}")
            make_tree(root, files, body="rev: 0\n" + small_text(10))
            runners[name] = impls.make(name, root)
        totals = {name: 0.0 for name in self.names}
        errors = {name: 0 for name in self.names}
        per_command: Dict[str, Dict[str, List[float]]] = {name: {} for name in self.names}
        chunk = 100  # the implementations take turns every 100 commands, so load hits them alike
        for number, first in enumerate(range(0, commands, chunk)):
            part = sequence[first:first + chunk]
            order = self.names[number % len(self.names):] + self.names[: number % len(self.names)]
            for name in order:
                impl = runners[name]
                for tool_input in part:
                    started = time.perf_counter()
                    out = impl.execute(tool_input)
                    spent = time.perf_counter() - started
                    totals[name] += spent
                    per_command[name].setdefault(tool_input["command"], []).append(spent)
                    if is_error(out):
                        errors[name] += 1
        values: Dict[str, Optional[float]] = {name: commands / totals[name] for name in self.names}
        self.rows.append(Row(f"mixed workload: {commands:,} commands over {files:,} files (throughput)",
                             values, "cmd/s", "reported against sdk and floor", None,
                             "error results: " + ", ".join(f"{k} {v}" for k, v in errors.items())))
        kinds = sorted({k for d in per_command.values() for k in d})
        self.mixed_breakdown = [
            (kind, len(per_command[self.names[0]].get(kind, [])),
             {name: statistics.median(per_command[name][kind]) if per_command[name].get(kind) else None
              for name in self.names})
            for kind in kinds
        ]

    def growth(self) -> None:
        sizes = [2**10, 2**14, 2**17, 2**20] if not self.quick else [2**10, 2**17]
        for size in sizes:
            root = self.tree(f"file{size}")
            make_file(os.path.join(root, "f.md"), size, line=80)
            runners = self.runners(root)
            if "refmem" in runners:
                runners[FIRST_VIEW] = impls.make("refmem", root, view_cache_bytes=0)
                if "baseline" in runners:
                    runners[BASELINE_FIRST_VIEW] = impls.make("baseline", root, view_cache_bytes=0)
                runners[COUNTED_FLOOR] = impls.make(COUNTED_FLOOR, root)
            values = timed(runners, lambda i: {"command": "view", "path": "/memories/f.md"},
                           self.scale(20, 5) if size > 2**16 else self.scale(100, 20), self.scale(5, 3))
            self.growth_file.append((size, values))
        trees = [10, 100, 1000, 10_000] if not self.quick else [10, 200]
        for count in trees:
            root = self.tree(f"grow{count}")
            make_tree(root, count, per_folder=max(10, count // 50))
            values = timed(self.runners(root), lambda i: {"command": "view", "path": "/memories"},
                           self.scale(10, 2) if count >= 500 else self.scale(50, 10), self.scale(5, 2))
            self.growth_tree.append((count, values))

    def command_growth(self) -> None:
        """Every command as its input doubles, with the growth exponent (bench/growth.py)."""
        self.scaling = scaling.Growth(os.path.join(self.base, "scaling"), self.names, self.quick).all()

    def stores(self) -> None:
        """The filesystem, SQLite and PostgreSQL stores at 1, 4 and 16 client processes, each against its floor
        (bench/stores.py); only with `--only stores`."""
        self.extra.append(stores.main_section(self.base, self.quick))

    def cpu(self) -> None:
        """The filesystem store's CPU per rename, delete and nested view against the bare durable operation, on
        tmpfs and on disk (bench/cpu.py); only with `--only cpu`."""
        self.extra.append(cpu.main_section(self.base, self.quick))


def make_tree_spread(root: str, files: int, folders: int) -> None:
    """`files` small files f00000.md... spread over `folders` folders d000... (file i in folder i % folders)."""
    for folder in range(folders):
        os.makedirs(os.path.join(root, f"d{folder:03d}"), exist_ok=True)
    data = small_text(5).encode()
    for i in range(files):
        write_bytes(os.path.join(root, f"d{i % folders:03d}", f"f{i:05d}.md"), data)


def turns(runners: Dict[str, impls.Impl], make_input: Callable[[int], dict], calls: int,
          chunk: int) -> Dict[str, Optional[float]]:
    """Median seconds per call of `calls` calls each, the implementations taking turns every `chunk` calls
    (on their own trees: call i changes file i); None when a call returned an error."""
    samples: Dict[str, List[float]] = {name: [] for name in runners}
    failed: Dict[str, str] = {}
    names = list(runners)
    for number, first in enumerate(range(0, calls, chunk)):
        order = names[number % len(names):] + names[: number % len(names)]
        for name in order:
            impl = runners[name]
            gc.collect()
            for i in range(first, min(first + chunk, calls)):
                tool_input = make_input(i)
                started = time.perf_counter()
                out = impl.execute(tool_input)
                samples[name].append(time.perf_counter() - started)
                if is_error(out) and name not in failed:
                    failed[name] = str(getattr(out, "output", out))[:200]
    for name, why in failed.items():
        print(f"  ! {name} failed: {why}", file=sys.stderr)
    return {name: None if name in failed else statistics.median(samples[name]) for name in runners}


def mixed_sequence(files: int, commands: int, seed: int) -> List[dict]:
    """A valid command sequence over `make_tree(root, files)` with `rev: 0` files."""
    rng = random.Random(seed)
    per_folder = 20
    revs: Dict[str, int] = {
        f"/memories/d{i // per_folder:03d}/f{i:05d}.md": 0 for i in range(files)
    }
    paths = list(revs)
    serial = 0
    out: List[dict] = []
    while len(out) < commands:
        roll = rng.random()
        serial += 1
        if roll < 0.08 or not paths:
            path = f"/memories/d{rng.randrange(max(1, files // per_folder)):03d}/new{serial}.md"
            revs[path] = 0
            paths.append(path)
            out.append({"command": "create", "path": path, "file_text": "rev: 0\n" + small_text(10)})
            continue
        index = rng.randrange(len(paths))
        path = paths[index]
        if roll < 0.58:
            out.append({"command": "view", "path": path})
        elif roll < 0.78:
            rev = revs[path]
            revs[path] = rev + 1
            out.append({"command": "str_replace", "path": path,
                        "old_str": f"rev: {rev}\n", "new_str": f"rev: {rev + 1}\n"})
        elif roll < 0.88:
            out.append({"command": "insert", "path": path, "insert_line": 1, "insert_text": f"note {serial}"})
        elif roll < 0.94:
            new = f"/memories/d{rng.randrange(max(1, files // per_folder)):03d}/moved{serial}.md"
            revs[new] = revs.pop(path)
            paths[index] = new
            out.append({"command": "rename", "old_path": path, "new_path": new})
        else:
            revs.pop(path)
            paths[index] = paths[-1]
            paths.pop()
            out.append({"command": "delete", "path": path})
    return out


# --- output -----------------------------------------------------------------------------------


def table(bench: Bench) -> str:
    names = bench.names
    before = ["baseline ÷ floor"] if "baseline" in names else []
    head = (["scenario"] + names + (["sdk ÷ refmem"] if "sdk" in names else []) + ["refmem ÷ floor"] + before
            + ["target", "met"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in bench.rows:
        cells = [row.scenario] + [fmt(row.values.get(n), row.unit) for n in names]
        if row.unit == "cmd/s":  # higher is better: show speedups the same way round
            if "sdk" in names:
                cells.append(ratio(row.values.get("refmem"), row.values.get("sdk")))
            cells.append(ratio(row.values.get("floor"), row.values.get("refmem")))
            if before:
                cells.append(ratio(row.values.get("floor"), row.values.get("baseline")))
        else:
            if "sdk" in names:
                cells.append(ratio(row.values.get("sdk"), row.values.get("refmem")))
            floor = row.values.get("floor")
            for name in ["refmem"] + (["baseline"] if before else []):
                if row.unit == "bytes" and floor is not None and floor < 2**20:
                    cells.append("-")  # the floor allocates next to nothing: a ratio would say nothing
                else:
                    cells.append(ratio(row.values.get(name), floor))
        cells += [row.target, {True: "yes", False: "**no**", None: ""}[row.met]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def growth_tables(bench: Bench) -> str:
    out = []
    if bench.mixed_breakdown:
        out.append("Mixed workload, median time per command by kind:\n")
        out.append("| command | count | " + " | ".join(bench.names) + " |")
        out.append("|---|---|" + "---|" * len(bench.names))
        for kind, count, values in bench.mixed_breakdown:
            cells = " | ".join(fmt(values.get(n), "s/call") for n in bench.names)
            out.append(f"| {kind} | {count:,} | {cells} |")
        out.append("")
    if bench.growth_file:
        firsts = [FIRST_VIEW] + ([BASELINE_FIRST_VIEW] if "baseline" in bench.names else [])
        columns = bench.names + (firsts + [COUNTED_FLOOR] if "refmem" in bench.names else [])
        ratios = [(first, floor) for first in firsts for floor in ("floor", COUNTED_FLOOR)]
        if "refmem" not in bench.names:
            ratios = []
        out.append("View of a whole file, by file size (refmem pages at 60,000 characters; the sdk and "
                   f"the floor return everything; `{FIRST_VIEW}` is refmem with view_cache_bytes=0, the cost of "
                   f"a file's first view; `{COUNTED_FLOOR}` is the floor that also decodes the bytes and counts "
                   "their lines, the work a first view cannot skip):\n")
        out.append("| file size | " + " | ".join(columns + [f"{a} ÷ {b}" for a, b in ratios]) + " |")
        out.append("|---|" + "---|" * (len(columns) + len(ratios)))
        for size, values in bench.growth_file:
            cells = " | ".join([fmt(values.get(n), "s/call") for n in columns]
                               + [ratio(values.get(a), values.get(b)) for a, b in ratios])
            out.append(f"| {size // 1024:,} KB | {cells} |")
    if bench.growth_tree:
        out.append("\nView of the root, by number of files in the tree (2 levels; refmem stops at 1,000 "
                   "entries):\n")
        out.append("| files | " + " | ".join(bench.names) + " |")
        out.append("|---|" + "---|" * len(bench.names))
        for count, values in bench.growth_tree:
            out.append(f"| {count:,} | " + " | ".join(fmt(values.get(n), "s/call") for n in bench.names) + " |")
    if bench.scaling:
        out.append("\n### Growth of every command\n")
        out.append(scaling.__doc__.split("\n\n", 1)[1].strip() + "\n")
        out.append(scaling.tables(bench.scaling, bench.names, fmt))
    return "\n".join(out)


def machine() -> str:
    try:
        load = os.getloadavg()
        load_text = f", load average {load[0]:.2f}"
    except OSError:
        load_text = ""
    return (f"Python {platform.python_version()} on {platform.system()} {platform.release()}, "
            f"{os.cpu_count()} CPUs{load_text}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few rounds (CI, < 30 s)")
    parser.add_argument("--dir", help="where to build the trees (default: the system temp folder)")
    parser.add_argument("--out", default=None,
                        help="markdown report (default: bench/results.md for a full run, none for --quick); "
                             "'-' for none")
    parser.add_argument("--only", help="comma-separated scenarios: " + ", ".join(SCENARIOS)
                        + f" (the default: all but {', '.join(OPT_IN)})")
    parser.add_argument("--no-sdk", action="store_true", help="leave the sdk column out")
    parser.add_argument("--baseline", metavar="DIR",
                        help="also measure the refmem package in DIR (e.g. an earlier commit's refmem/, from "
                             "`git archive`), as the `baseline` column")
    parser.add_argument("--baseline-label", default="an earlier copy of refmem",
                        help="what the baseline is, for the report (e.g. a commit); never a host path")
    args = parser.parse_args(argv)
    if args.out is None:  # a quick or partial run never replaces the committed full-run results
        args.out = "-" if args.quick or args.only else os.path.join(os.path.dirname(__file__), "results.md")

    names = list(NAMES)
    if args.baseline:
        impls.Baseline.source = os.path.abspath(args.baseline)
        impls.load_baseline(impls.Baseline.source)
        names.insert(1, "baseline")
    why = "left out (--no-sdk)" if args.no_sdk else impls.sdk_available()
    if why is not None:
        names.remove("sdk")
        print(f"sdk column skipped: {why}", file=sys.stderr)
    base = tempfile.mkdtemp(prefix="refmem-bench-", dir=args.dir)
    bench = Bench(base, args.quick, names)
    chosen = args.only.split(",") if args.only else [key for key in SCENARIOS if key not in OPT_IN]
    unknown = [key for key in chosen if key not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}: choose from {', '.join(SCENARIOS)}")
    started = time.perf_counter()
    try:
        for key in chosen:
            began = time.perf_counter()
            getattr(bench, SCENARIOS[key])()
            print(f"- {key}: {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    elapsed = time.perf_counter() - started
    body = table(bench) if bench.rows else ""
    growth = growth_tables(bench)
    if body:
        print(body)
    if growth:
        print()
        print(growth)
    for section in bench.extra:
        print()
        print(section)
    print(f"\n{machine()}; {'quick' if args.quick else 'full'} run took {elapsed:.1f} s", file=sys.stderr)
    if args.out != "-":
        with open(args.out, "w", encoding="utf-8") as out:
            out.write("# Benchmarks: refmem, the SDK's local memory tool, and the `os` floor\n\n")
            mode = " --quick" if args.quick else ""
            out.write(f"{'Quick' if args.quick else 'Full'} run of `python -m bench{mode}`, "
                      f"{time.strftime('%Y-%m-%d')}; {machine()}; {elapsed:.0f} s.\n\n")
            out.write("Times are medians per call. `sdk ÷ refmem` is how many times faster refmem is than the "
                      "sdk (below 1: slower); `refmem ÷ floor` is how many times slower refmem is than the floor, "
                      "the same work with plain `os` calls and no validation or formatting (for the throughput "
                      "row both are computed from throughput, with the same meaning).\n\n")
            if "baseline" in names:
                out.write(f"`baseline` is {args.baseline_label}, measured in the same run, taking turns with the "
                          "others; `baseline ÷ floor` is its ratio to the same floor.\n\n")
            out.write(body + "\n\n")
            for row in bench.rows:
                if row.note:
                    out.write(f"- {row.scenario}: {row.note}\n")
            if growth:
                out.write("\n## Breakdown and growth\n\n" + growth + "\n")
            for section in bench.extra:
                out.write("\n" + section + "\n")
            out.write("\n## Method\n" + __doc__.split("Method\n------", 1)[1])
    return 0


SCENARIOS = {
    "view": "view_small",
    "view-nested": "view_nested",
    "view-first": "view_small_first",
    "str_replace": "str_replace",
    "rename-delete": "rename_delete",
    "listing": "listing",
    "listing10k": "listing_10k",
    "huge": "huge_view_range",
    "mixed": "mixed",
    "growth": "growth",
    "command-growth": "command_growth",
    "stores": "stores",
    "cpu": "cpu",
}
OPT_IN = ("stores", "cpu")
"""Scenarios a run makes only when `--only` names them: the stores start processes and a PostgreSQL cluster."""
