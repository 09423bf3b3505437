"""Benchmark of OpenClaw-style memory search: the reference's index, side by side with OpenClaw's own.

    python -m bench.openclaw                    # 1,000 files (~5 MB) and 2,000 files, the reference
    python -m bench.openclaw --openclaw         # and OpenClaw's memory_search through its adapter
    python -m bench.openclaw --files 500 --queries 20

A workspace of daily logs and notes (`memory/*.md`, ~5 KB each, words drawn from a Zipf-like
vocabulary, seeded) is built in a temporary folder. Reported, for each size: the first index
build, a refresh with nothing changed (the scan), a refresh after one file changed (and how many
files it read), search latency (median and 95th percentile over the queries, each including its
refresh), and memory_get. The doubled size gives the growth ratio. The reference's figures are CPU
time of this process (it runs here; on a shared machine wall-clock time would measure the
neighbours), OpenClaw's are wall-clock through its adapter; all are compared within one run, never
against fixed thresholds.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable, Dict, List, Sequence, Tuple

from refmem.openclaw import OpenClawMemory, fts5_available
from refmem.openclaw.disk import Disk


def vocabulary(rng: random.Random, size: int = 5000) -> List[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def build(folder: pathlib.Path, files: int, seed: int = 7) -> Tuple[List[str], int]:
    """The workspace; returns the vocabulary and the bytes written."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    (folder / "memory").mkdir(parents=True)
    total = 0
    for n in range(files):
        name = f"memory/2026-{1 + n % 12:02d}-{1 + n % 28:02d}-{n}.md" if n % 2 else f"memory/notes/topic-{n}.md"
        lines = []
        for _ in range(60):
            lines.append("- " + " ".join(rng.choices(words, weights, k=rng.randint(8, 16))))
        text = "\n".join(lines) + "\n"
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        total += len(text)
    (folder / "MEMORY.md").write_text("# Curated\n" + "".join(f"- fact {w}\n" for w in words[:200]))
    return words, total


def timed(action: Callable[[], Any], clock: Callable[[], float] = time.perf_counter) -> Tuple[float, Any]:
    started = clock()
    value = action()
    return clock() - started, value


def cpu(action: Callable[[], Any]) -> Tuple[float, Any]:
    """CPU time of this process: the reference runs in it, and the machine may be shared (wall-clock
    time then measures the neighbours)."""
    return timed(action, time.process_time)


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class CountingDisk(Disk):
    reads = 0

    def read_file(self, parts: Any, limit: int) -> Any:
        CountingDisk.reads += 1
        return super().read_file(parts, limit)


def measure_reference(folder: pathlib.Path, queries: List[str]) -> Dict[str, float]:
    memory = OpenClawMemory(folder)
    memory.disk = CountingDisk(memory.root)
    first, _ = cpu(memory.refresh)
    unchanged, _ = cpu(memory.refresh)
    target = sorted((folder / "memory" / "notes").iterdir())[0]
    with open(target, "a", encoding="utf-8") as handle:  # the benchmark's own fixture, not a memory read
        handle.write("- appended line\n")
    CountingDisk.reads = 0
    one_changed, _ = cpu(memory.refresh)
    reads = CountingDisk.reads
    latencies = [cpu(lambda q=query: memory.memory_search(q))[0] for query in queries]
    gets = [cpu(lambda n=n: memory.memory_get(f"memory/notes/topic-{n * 2}.md"))[0] for n in range(20)]
    files, chunks = memory.counts()
    memory.close()
    return {
        "files": files,
        "chunks": chunks,
        "index_build_cpu_s": first,
        "refresh_unchanged_cpu_ms": unchanged * 1000,
        "refresh_one_changed_cpu_ms": one_changed * 1000,
        "files_read_for_one_change": reads,
        "search_median_cpu_ms": statistics.median(latencies) * 1000,
        "search_p95_cpu_ms": percentile(latencies, 0.95) * 1000,
        "get_median_cpu_ms": statistics.median(gets) * 1000,
    }


def _usable(reply: Any) -> bool:
    """A search that ran (OpenClaw answers `unavailable` while its index is building or cooling down)."""
    result = reply.result
    return isinstance(result, dict) and isinstance(result.get("results"), list) and not result.get("unavailable")


def measure_openclaw(folder: pathlib.Path, queries: List[str], timeout: float) -> Dict[str, float]:
    """OpenClaw through its adapter: time until a search first answers (its index build, with the
    retries its 30 s search deadline and 60 s cool-down force), then latency of searches that ran."""
    from refmem_conformance.openclaw.runner import open_target

    target = open_target("openclaw", timeout)
    try:
        target.reset(folder)
        started = time.perf_counter()
        attempts = 0
        while True:
            attempts += 1
            if _usable(target.execute("memory_search", {"query": queries[0]})):
                break
            if time.perf_counter() - started > timeout:
                raise SystemExit("OpenClaw's search never answered within the timeout")
            time.sleep(5)
        first = time.perf_counter() - started
        latencies: List[float] = []
        unusable = 0
        for query in queries:
            took, reply = timed(lambda q=query: target.execute("memory_search", {"query": q}))
            if _usable(reply):
                latencies.append(took)
            else:
                unusable += 1
        gets = [
            timed(lambda n=n: target.execute("memory_get", {"path": f"memory/notes/topic-{n * 2}.md"}))[0]
            for n in range(20)
        ]
    finally:
        target.close()
    return {
        "time_to_first_answer_s": first,
        "search_attempts_until_then": attempts,
        "searches_unavailable_after": unusable,
        "search_median_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "search_p95_ms": percentile(latencies, 0.95) * 1000 if latencies else float("nan"),
        "get_median_ms (adapter round trip)": statistics.median(gets) * 1000,
    }


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.openclaw", description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--openclaw", action="store_true", help="also time OpenClaw's memory_search (adapter)")
    parser.add_argument("--only-openclaw", action="store_true", help="time OpenClaw alone (no CPU shared with ours)")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    rng = random.Random(11)
    rows: List[Tuple[str, Dict[str, float]]] = []
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-bench-openclaw-"))
    try:
        for files in (args.files, args.files * 2):
            folder = base / f"w{files}"
            words, size = build(folder, files)
            queries = [" ".join(rng.sample(words[:2000], rng.randint(1, 3))) for _ in range(args.queries)]
            print(f"{files} files, {size / 1e6:.1f} MB", flush=True)
            if not args.only_openclaw:
                rows.append((f"refmem, {files} files ({size / 1e6:.1f} MB)", measure_reference(folder, queries)))
            if args.openclaw or args.only_openclaw:
                rows.append((f"openclaw, {files} files", measure_openclaw(folder, queries, args.timeout)))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print()
    for label, numbers in rows:
        print(f"## {label}")
        for key, value in numbers.items():
            print(f"- {key}: {value:.2f}" if isinstance(value, float) else f"- {key}: {value}")
    reference = [numbers for label, numbers in rows if label.startswith("refmem")]
    if len(reference) == 2:
        small, large = reference
        print("\n## growth (doubled workspace / workspace)")
        keys = ("index_build_cpu_s", "refresh_unchanged_cpu_ms", "refresh_one_changed_cpu_ms", "search_median_cpu_ms")
        for key in keys:
            print(f"- {key}: x{large[key] / small[key]:.2f}")
    print(f"\ncpu count {os.cpu_count()}; SQLite FTS5 {'yes' if fts5_available() else 'no (pure-Python BM25)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
