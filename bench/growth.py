"""Growth rows: each command's time as its input doubles, and the growth exponent measured from it.

For every command the input that drives its cost doubles four times (file size, occurrences of
`old_str`, entries in a folder, files in a tree). Times are medians per call as in the other rows,
refmem beside the SDK's local memory tool and the `os` floor on the same trees. The exponent is the
slope of log2(time) against log2(size), a least-squares fit over all sizes: about 1 for linear
work, 2 for quadratic, 0 for a cost that does not depend on the size (a page, a cap). The
per-doubling figures, log2(t(2n)/t(n)), show where a curve bends.

refmem runs with `view_cache_bytes=0` here, so every view pays for reading its file (a repeated view
of an unchanged file is cheaper; the main table shows that).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import impls

MakeInput = Callable[[int], dict]


@dataclasses.dataclass
class Series:
    command: str
    grows_with: str
    sizes: List[int]
    times: Dict[str, List[Optional[float]]]

    def exponent(self, name: str) -> Optional[float]:
        points = [(math.log2(n), math.log2(t)) for n, t in zip(self.sizes, self.times[name]) if t]
        if len(points) < 2 or len(points) < len(self.sizes):
            return None
        mean_x = sum(x for x, _ in points) / len(points)
        mean_y = sum(y for _, y in points) / len(points)
        spread = sum((x - mean_x) ** 2 for x, _ in points)
        return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread

    def steps(self, name: str) -> List[Optional[float]]:
        times = self.times[name]
        return [
            math.log2(b / a) / math.log2(m / n) if a and b else None
            for (n, a), (m, b) in zip(zip(self.sizes, times), zip(self.sizes[1:], times[1:]))
        ]


def numbered_lines(size: int) -> str:
    """About `size` characters of 80-character lines, with a unique marker line in the middle.

    A sixty-fourth short of `size`, so that the largest (1 MiB) stays under the file limit after the
    insert row's inserts."""
    count = max(2, (size - size // 64) // 80)
    rows = [f"{i:010d} " + "x" * 68 for i in range(count)]
    rows[count // 2] = "MARKER " + "y" * 72
    return "\n".join(rows) + "\n"


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)


def tree(folder: str, files: int, per_folder: int = 16) -> None:
    for i in range(files):
        write(os.path.join(folder, f"d{i // per_folder:03d}", f"f{i:05d}.md"), "x\n")


def is_error(output: object) -> bool:
    if hasattr(output, "is_error"):
        return bool(output.is_error)
    return isinstance(output, str) and output.startswith("error:")


def timed(runners: Dict[str, impls.Impl], make_input: MakeInput, calls: int, rounds: int,
          prepare: Optional[Callable[[int], None]] = None, expect_error: bool = False) -> Dict[str, Optional[float]]:
    """Median seconds per call; None for an implementation whose first result is not of the kind
    expected (an error where success is expected, or the reverse: it did other work).

    Calls are numbered across implementations; `prepare(number)` runs before a call, outside the
    timing (a fresh tree to delete). With an even number of calls per turn, inputs that alternate
    (A to B, B to A) leave every implementation's turn where it started. The implementations take
    turns within each round, as in the main table.
    """
    samples: Dict[str, List[float]] = {name: [] for name in runners}
    wrong: Dict[str, str] = {}
    order = list(runners)
    number = 0
    for round_ in range(rounds):
        shift = round_ % len(order)
        for name in order[shift:] + order[:shift]:
            impl = runners[name]
            spent = 0.0
            gc.collect()
            for _ in range(calls):
                if prepare is not None:
                    prepare(number)
                tool_input = make_input(number)
                number += 1
                started = time.perf_counter()
                out = impl.execute(tool_input)
                spent += time.perf_counter() - started
                if round_ == 0 and is_error(out) != expect_error:
                    wrong.setdefault(name, str(getattr(out, "output", out))[:160])
            samples[name].append(spent / calls)
    for name, text in wrong.items():
        print(f"  ! {name}: unexpected {'success' if expect_error else 'error'}: {text}", file=sys.stderr)
    return {name: None if name in wrong else sorted(values)[len(values) // 2] for name, values in samples.items()}


class Growth:
    """Builds each command's trees in `base` and measures every implementation on them."""

    def __init__(self, base: str, names: Sequence[str], quick: bool) -> None:
        self.base = base
        self.names = list(names)
        self.quick = quick
        self.rounds = 3

    def root(self, label: str) -> str:
        return os.path.join(self.base, label, "memories")

    def runners(self, root: str) -> Dict[str, impls.Impl]:
        return {name: impls.make(name, root, view_cache_bytes=0) for name in self.names}

    def scale(self, full: Sequence[int], quick: Sequence[int]) -> List[int]:
        return list(quick if self.quick else full)

    def series(self, command: str, grows_with: str, sizes: List[int],
               one: Callable[[int], Tuple[Dict[str, impls.Impl], MakeInput, int, Optional[Callable[[int], None]]]],
               ) -> Series:
        times: Dict[str, List[Optional[float]]] = {name: [] for name in self.names}
        expect_error = "(error)" in command
        for size in sizes:
            runners, make_input, calls, prepare = one(size)
            if expect_error:  # the floor has no error path: it would edit the file the others refuse to
                runners.pop("floor", None)
            values = timed(runners, make_input, calls, self.rounds, prepare, expect_error)
            for name in self.names:
                times[name].append(values.get(name))
        return Series(command, grows_with, sizes, times)

    # --- one builder per command: (runners, input for call i, calls per round, preparation) ---

    def file_case(self, label: str, size: int, text: str) -> Tuple[str, Dict[str, impls.Impl]]:
        root = self.root(f"{label}-{size}")
        write(os.path.join(root, "f.md"), text)
        return root, self.runners(root)

    def all(self) -> List[Series]:
        """Every command's series. What the interpreter holds now (the SDK's many classes) is frozen
        out of the collector meanwhile, so the collection before each turn takes microseconds."""
        gc.collect()
        gc.freeze()
        try:
            return self._all()
        finally:
            gc.unfreeze()

    def _all(self) -> List[Series]:
        file_sizes = self.scale([2**16, 2**17, 2**18, 2**19, 2**20], [2**14, 2**15, 2**16])
        calls = 4 if not self.quick else 2
        out = []

        def view_whole(size: int) -> tuple:
            _, runners = self.file_case("view", size, numbered_lines(size))
            return runners, lambda i: {"command": "view", "path": "/memories/f.md"}, calls, None

        def view_range(size: int) -> tuple:
            _, runners = self.file_case("range", size, numbered_lines(size))
            middle = size // 160
            return runners, lambda i: {"command": "view", "path": "/memories/f.md",
                                       "view_range": [middle, middle + 9]}, calls, None

        def listing(count: int) -> tuple:
            root = self.root(f"listing-{count}")
            tree(os.path.join(root, "t"), count)
            return self.runners(root), lambda i: {"command": "view", "path": "/memories/t"}, calls, None

        def create(size: int) -> tuple:
            root = self.root(f"create-{size}")
            os.makedirs(root, exist_ok=True)
            text = numbered_lines(size)
            return self.runners(root), lambda i: {"command": "create", "path": f"/memories/n{i:04d}-{size}.md",
                                                  "file_text": text}, calls, None

        def replace_once(size: int) -> tuple:
            _, runners = self.file_case("replace", size, numbered_lines(size))
            pair = ("MARKER ", "CHANGE ")
            return runners, lambda i: {"command": "str_replace", "path": "/memories/f.md",
                                       "old_str": pair[i % 2], "new_str": pair[1 - i % 2]}, calls, None

        def replace_many(count: int) -> tuple:
            _, runners = self.file_case("many", count, "a\n" * count)
            return runners, lambda i: {"command": "str_replace", "path": "/memories/f.md",
                                       "old_str": "a", "new_str": "b"}, 1, None  # a quadratic sdk takes seconds

        def replace_overlapping(count: int) -> tuple:
            _, runners = self.file_case("overlap", count, "a\n" * count)
            old = "a\n" * (count // 2)
            return runners, lambda i: {"command": "str_replace", "path": "/memories/f.md",
                                       "old_str": old, "new_str": "b"}, 1, None

        def insert(size: int) -> tuple:
            _, runners = self.file_case("insert", size, numbered_lines(size))
            return runners, lambda i: {"command": "insert", "path": "/memories/f.md", "insert_line": 1,
                                       "insert_text": "inserted"}, calls, None

        def delete(count: int) -> tuple:
            root = self.root(f"delete-{count}")
            os.makedirs(root, exist_ok=True)
            return (self.runners(root), lambda i: {"command": "delete", "path": f"/memories/t{i}"}, 1,
                    lambda i: tree(os.path.join(root, f"t{i}"), count))

        def rename(count: int) -> tuple:
            root = self.root(f"rename-{count}")
            tree(os.path.join(root, "a"), count)
            names = ("/memories/a", "/memories/b/a")
            return self.runners(root), lambda i: {"command": "rename", "old_path": names[i % 2],
                                                  "new_path": names[1 - i % 2]}, 2 * (calls // 2), None

        counts = self.scale([125, 250, 500, 1000, 2000], [32, 64, 128])
        occurrences = self.scale([2**13, 2**14, 2**15, 2**16, 2**17], [2**11, 2**12, 2**13])
        tree_sizes = self.scale([64, 128, 256, 512, 1024], [16, 32, 64])
        overlap_lines = self.scale([2**11, 2**12, 2**13, 2**14, 2**15], [2**10, 2**11, 2**12])
        out.append(self.series("view of a whole file", "file size (bytes)", file_sizes, view_whole))
        out.append(self.series("view_range of 10 lines (middle)", "file size (bytes)", file_sizes, view_range))
        out.append(self.series("listing of a folder", "files below it", counts, listing))
        out.append(self.series("create", "file_text size (bytes)", file_sizes, create))
        out.append(self.series("str_replace, one occurrence", "file size (bytes)", file_sizes, replace_once))
        out.append(self.series("str_replace, many occurrences (error)", "occurrences", occurrences, replace_many))
        out.append(self.series("str_replace, old_str = half the file (error)", "lines of `a\\n`", overlap_lines,
                               replace_overlapping))
        out.append(self.series("insert at line 1", "file size (bytes)", file_sizes, insert))
        out.append(self.series("delete of a folder tree", "files in the tree", tree_sizes, delete))
        out.append(self.series("rename of a folder tree", "files in the tree", tree_sizes, rename))
        return out


def size_label(size: int, grows_with: str) -> str:
    if "bytes" in grows_with:
        return f"{size // 1024:,} KB"
    return f"{size:,}"


def tables(series: List[Series], names: Sequence[str], fmt: Callable[[Optional[float], str], str]) -> str:
    """A summary (the exponent of every command and implementation), then the times per size."""
    out = ["Growth exponent per command: slope of log2(time) over log2(size), fitted over "
           f"{len(series[0].sizes) if series else 0} sizes, each twice the last (1 = linear, 2 = quadratic, "
           "0 = independent of the size):\n"]
    out.append("| command | grows with | sizes | " + " | ".join(names) + " |")
    out.append("|---|---|---|" + "---|" * len(names))
    for item in series:
        sizes = f"{size_label(item.sizes[0], item.grows_with)} to {size_label(item.sizes[-1], item.grows_with)}"
        cells = []
        for name in names:
            value = item.exponent(name)
            cells.append("-" if value is None else f"{value:.2f}")
        out.append(f"| {item.command} | {item.grows_with} | {sizes} | " + " | ".join(cells) + " |")
    out.append("\nTimes per call as the input doubles, with log2(t(2n)/t(n)) for each doubling in brackets:\n")
    out.append("| command | size | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    for item in series:
        steps = {name: [None] + item.steps(name) for name in names}
        for index, size in enumerate(item.sizes):
            cells = []
            for name in names:
                step = steps[name][index]
                cells.append(fmt(item.times[name][index], "s/call") + ("" if step is None else f" ({step:.2f})"))
            out.append(f"| {item.command} | {size_label(size, item.grows_with)} | " + " | ".join(cells) + " |")
    return "\n".join(out)
