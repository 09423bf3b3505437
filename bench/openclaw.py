"""Benchmark of OpenClaw-style memory search: refmem side by side with OpenClaw 2026.9.6, in one run.

    python -m bench.openclaw                       # refmem alone, 1,000 and 10,000 files
    python -m bench.openclaw --openclaw            # and OpenClaw, alternately, at both sizes
    python -m bench.openclaw --files 1000 --large 0 --openclaw --recall

Both sides are measured the same way: each is a separate process speaking the adapter protocol
(`python -m refmem.serve`, and OpenClaw's own tools through conformance/adapters/openclaw), timed by
the wall clock around each request, the two asked alternately query by query on the same workspace
(`bench/openclaw_workspace.py`: daily logs, people, projects, meetings, inbox notes; realistic and
conversational queries), so that a neighbour's load falls on both. Each request's CPU time is the
server process's own (every thread's run time from /proc/PID/task/*/schedstat, in nanoseconds), which
a busy neighbour does not inflate the way it inflates the wall clock; the load average is printed
beside each table. Reported: time until the first search answers (the index build), search median,
95th percentile and maximum (wall and CPU), memory_get, peak resident
memory, whether a note written through the tool is found by the next search, and how long an edit
made in place by another program takes to be found. `--recall` adds the retrieval evaluation: 100
questions worded unlike their note (`paraphrase_set`), recall@5 of keyword-only search against
hybrid search with the offline model (`refmem[semantic]`). `--differential` compares the top hits of
both on the 125 queries (overlap@5, same top hit). Nothing here is a pass/fail threshold.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from bench.openclaw_workspace import Workspace, agreement, generate, paraphrase_set, sized, write


def percentile(values: List[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _usable(reply: Any) -> bool:
    result = getattr(reply, "result", None)
    return isinstance(result, dict) and isinstance(result.get("results"), list) and not result.get("unavailable")


def cpu_seconds(pid: Optional[int]) -> float:
    """CPU time the process `pid` has run so far, every thread, from the scheduler's own count (ns); NaN where
    /proc does not offer it (then the bench reports wall time only)."""
    if not pid:
        return float("nan")
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as stat:
                    total += int(stat.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue  # a thread that ended between the listing and the read
    except OSError:
        return float("nan")
    return total / 1e9


def _peak_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class Side:
    """One implementation behind the adapter protocol, with what was measured of it."""

    def __init__(self, name: str, spec: str, tools: Tuple[str, ...]) -> None:
        self.name = name
        self.spec = spec
        self.tools = tools
        self.target: Any = None
        self.latencies: List[float] = []
        self.cpu: List[float] = []
        self.by_query: Dict[str, List[float]] = {}
        self.numbers: Dict[str, Any] = {}

    def timed(self, tool: str, tool_input: Dict[str, Any]) -> Tuple[float, Any]:
        started = time.perf_counter()
        reply = self.target.execute(tool_input, tool)
        return time.perf_counter() - started, reply

    def timed_cpu(self, tool: str, tool_input: Dict[str, Any]) -> Tuple[float, float, Any]:
        """Wall time and the server's CPU time of one request."""
        pid = getattr(self.target, "pid", None)
        before = cpu_seconds(pid)
        took, reply = self.timed(tool, tool_input)
        return took, cpu_seconds(pid) - before, reply

    def first_answer(self, folder: pathlib.Path, query: str, timeout: float) -> None:
        """Start the side on `folder` (the shared apparatus's target) and wait for its first usable search."""
        from refmem_harness.targets import open_target

        started = time.perf_counter()
        self.target = open_target(self.spec, folder, timeout, tools=self.tools)
        while not _usable(self.target.execute({"query": query}, "memory_search")):
            if time.perf_counter() - started > timeout:
                raise SystemExit(f"{self.name}: search never answered within {timeout:g} s")
            time.sleep(1)
        self.numbers["first search answered (index build), s"] = time.perf_counter() - started

    def found(self, query: str, path: str) -> bool:
        reply = self.target.execute({"query": query, "minScore": 0}, "memory_search")
        return _usable(reply) and path in [hit.get("path") for hit in reply.result["results"]]

    def wait_found(self, query: str, path: str, limit: float) -> float:
        started = time.perf_counter()
        while not self.found(query, path):
            if time.perf_counter() - started > limit:
                return float("inf")
            time.sleep(0.05)
        return time.perf_counter() - started


def open_sides(openclaw: bool, timeout: float) -> List[Side]:
    """The sides, each a separate process behind the adapter protocol (started on their workspace later)."""
    from refmem_conformance.openclaw.runner import TOOLS, target_spec

    sides = [Side("refmem", f"cmd:{sys.executable} -m refmem serve", ("memory",) + TOOLS)]
    if openclaw:
        sides.append(Side("openclaw", target_spec("openclaw"), TOOLS))
    return sides


def speed(files: int, openclaw: bool, timeout: float) -> List[Side]:
    """The side-by-side run on a workspace of about `files` memory files."""
    workspace = sized(files, files * 2_100)  # >= 2 MB at 1,000 files, >= 20 MB at 10,000
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-bench-openclaw-"))
    sides = open_sides(openclaw, timeout)
    try:
        folder = base / "memories"
        folder.mkdir()
        size = write(folder, workspace)
        print(f"{len(workspace.files)} files, {size / 1e6:.1f} MB, {len(workspace.queries)} queries", flush=True)
        for side in sides:
            side.first_answer(folder, workspace.queries[0], timeout)
        gets: Dict[str, List[float]] = {side.name: [] for side in sides}
        for round_number in range(2):
            for query in workspace.queries:
                for side in sides if round_number % 2 == 0 else sides[::-1]:  # alternately, both orders
                    took, cpu, reply = side.timed_cpu("memory_search", {"query": query})
                    if _usable(reply):
                        side.latencies.append(took)
                        side.cpu.append(cpu)
                        side.by_query.setdefault(query, []).append(took)
        names = sorted(path for path in workspace.files if path.startswith("memory/people/"))[:20]
        for name in names:
            for side in sides:
                gets[side.name].append(side.timed("memory_get", {"path": name})[0])
        for side in sides:
            slowest = sorted(side.by_query.items(), key=lambda item: -statistics.median(item[1]))[:3]
            side.numbers["slowest queries (median ms)"] = "; ".join(
                f"{query} ({statistics.median(times) * 1000:.1f})" for query, times in slowest
            )
            side.numbers["searches timed"] = len(side.latencies)
            side.numbers["search median, ms"] = statistics.median(side.latencies) * 1000
            side.numbers["search p95, ms"] = percentile(side.latencies, 0.95) * 1000
            side.numbers["search max, ms"] = max(side.latencies) * 1000
            side.numbers["search CPU median, ms"] = statistics.median(side.cpu) * 1000
            side.numbers["search CPU p95, ms"] = percentile(side.cpu, 0.95) * 1000
            side.numbers["search CPU max, ms"] = max(side.cpu) * 1000
            side.numbers["memory_get median, ms"] = statistics.median(gets[side.name]) * 1000
        # A note written through refmem: found by the next search? (OpenClaw has no write tool: its
        # agent writes the file itself, which here is an outside write for it.)
        for number, side in enumerate(sides):
            word = f"zebrafinch{number}"
            path = f"memory/inbox/new-{number}.md"
            if side.name == "refmem":
                side.target.execute({"command": "create", "path": f"/memories/{path}", "file_text": word}, "memory")
            else:
                (folder / path).write_text(word + "\n", encoding="utf-8")
            side.numbers["a new note found by the next search"] = "yes" if side.found(word, path) else "no"
            side.numbers["a new note found after, s"] = side.wait_found(word, path, 30)
        for number, side in enumerate(sides):  # an edit in place by another program
            word = f"kingfisher{number}"
            target = folder / names[number]
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(f"- {word}\n")
            side.numbers["an outside edit in place found after, s"] = side.wait_found(word, names[number], 30)
        for side in sides:
            pid = getattr(side.target, "pid", None)
            side.numbers["peak resident memory, MB"] = _peak_rss_mb(pid) if pid else float("nan")
    finally:
        for side in sides:
            if side.target is not None:
                side.target.close()
        shutil.rmtree(base, ignore_errors=True)
    return sides


def recall(min_scores: Tuple[Optional[float], ...] = (None, 0.0)) -> Dict[str, float]:
    """recall@5 on 100 questions worded unlike their notes, keyword-only against hybrid (offline model)."""
    from refmem.openclaw import OpenClawMemory
    from refmem.openclaw.embeddings import WordLlamaEmbeddings

    base = generate()
    notes, questions = paraphrase_set()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="refmem-bench-recall-")) / "memories"
    folder.mkdir()
    found: Dict[str, float] = {}
    try:
        write(folder, Workspace({**base.files, **notes}, [], []))
        for label, embed in (("keyword-only", None), ("hybrid (wordllama)", WordLlamaEmbeddings())):
            memory = OpenClawMemory(folder, embed=embed, index="memory")
            for min_score in min_scores:
                hits = 0
                for question, path in questions:
                    result = memory.memory_search(question, max_results=5, min_score=min_score)
                    hits += path in [hit["path"] for hit in result["results"]]
                found[f"{label}, minScore {'default 0.35' if min_score is None else min_score}"] = hits / len(questions)
            memory.close()
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)
    return found


def differential(timeout: float) -> Dict[str, float]:
    """Agreement of the top hits of refmem and OpenClaw (live) on the 125 generated queries."""
    workspace = generate()
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-bench-diff-"))
    sides = open_sides(True, timeout)
    results: Dict[str, List[List[Tuple[str, int]]]] = {}
    try:
        folder = base / "memories"
        folder.mkdir()
        write(folder, workspace)
        for side in sides:
            side.first_answer(folder, workspace.queries[0], timeout)
            results[side.name] = []
            for query in workspace.queries:
                reply = side.target.execute({"query": query}, "memory_search")
                results[side.name].append([(hit["path"], hit["startLine"]) for hit in reply.result["results"]])
    finally:
        for side in sides:
            if side.target is not None:
                side.target.close()
        shutil.rmtree(base, ignore_errors=True)
    found = agreement(results["refmem"], results["openclaw"])
    return {"overlap@5": found.overlap, "same top hit": found.same_top, "identical top 5": found.identical}


def _show(value: Any) -> str:
    if isinstance(value, float):
        return "never (30 s)" if value == float("inf") else f"{value:.2f}"
    return str(value)


def table(title: str, sides: List[Side]) -> str:
    keys = list(dict.fromkeys(key for side in sides for key in side.numbers))
    lines = [f"### {title}", "", "| | " + " | ".join(side.name for side in sides) + " |"]
    lines.append("|---|" + "---|" * len(sides))
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(_show(side.numbers.get(key, "")) for side in sides) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.openclaw", description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10000, help="a second, larger workspace; 0: none")
    parser.add_argument("--openclaw", action="store_true", help="also OpenClaw, alternately (install.sh first)")
    parser.add_argument("--recall", action="store_true", help="the retrieval evaluation (refmem[semantic])")
    parser.add_argument("--differential", action="store_true", help="top-hit agreement with OpenClaw, live")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    report: List[str] = []
    run: List[Tuple[str, Callable[[], Any]]] = [
        (f"{args.files} files", lambda: speed(args.files, args.openclaw, args.timeout))
    ]
    if args.large:
        run.append((f"{args.large} files", lambda: speed(args.large, args.openclaw, args.timeout)))
    for title, action in run:
        before = os.getloadavg()[0]
        sides = action()
        report.append(table(f"{title} (load average {before:.1f} before, {os.getloadavg()[0]:.1f} after)", sides))
        print("\n" + report[-1], flush=True)  # each table as soon as it is measured
    if args.recall:
        report.append("### recall@5, 100 questions worded unlike their notes\n")
        report += [f"- {label}: {value:.2f}" for label, value in recall().items()]
    if args.differential:
        report.append("\n### top hits against OpenClaw, 125 queries\n")
        report += [f"- {label}: {value:.3f}" for label, value in differential(args.timeout).items()]
    print("\n" + "\n".join(report[len(run) :]))
    print(f"\ncpu count {os.cpu_count()}; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
