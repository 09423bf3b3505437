"""Hybrid memory_search with the packaged offline model (`refmem[semantic]`, wordllama): recall@5 on the
labelled paraphrase set (`bench/paraphrases.py`) beside keyword-only, the calibration sweep behind the
model's defaults, and the time of a hybrid search against a keyword search, side by side in one run.

    python -m bench.hybrid              # recall at the defaults, and the timing at 1,000 files
    python -m bench.hybrid --sweep      # recall over minScore x vector weight (the calibration)

The paraphrase notes are hidden among the files of a generated workspace (`bench.openclaw_workspace`);
each question must find its note in the first 5 results. A control set asks for each note with two of
its own words, so that a calibration that finds paraphrases does not lose plain keyword questions.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import statistics
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from bench.openclaw_workspace import generate, write
from bench.paraphrases import PARAPHRASES
from refmem.openclaw import OpenClawMemory
from refmem.openclaw.embeddings import WordLlamaEmbeddings

K = 5


def workspace(folder: pathlib.Path, files: int, queries: Optional[List[str]] = None) -> int:
    """The generated workspace of about `files` files, with the paraphrase notes among them; `queries`
    gets the generated workspace's own queries (names, topics, tools, dates, conversational questions)."""
    generated = generate(days=max(10, files - 192 - len(PARAPHRASES)))
    if queries is not None:
        queries.extend(generated.queries)
    total = write(folder, generated)
    for item in PARAPHRASES:
        target = folder / item.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(item.note, encoding="utf-8")
        total += len(item.note.encode("utf-8"))
    return total


def control_queries() -> List[Tuple[str, str]]:
    """(two of a note's own words, its path): the longest words of its fact."""
    queries = []
    for item in PARAPHRASES:
        fact = item.note.split("- ", 1)[1]
        words = sorted(set(re.findall(r"[A-Za-z]{4,}", fact)), key=lambda word: (-len(word), word))[:2]
        queries.append((" ".join(words), item.path))
    return queries


def recall(memory: OpenClawMemory, queries: Sequence[Tuple[str, str]], min_score: Optional[float]) -> float:
    found = 0
    for question, path in queries:
        request: Dict[str, Any] = {"query": question, "maxResults": K}
        if min_score is not None:
            request["minScore"] = min_score
        result = memory.search(request)
        found += path in [hit["path"] for hit in result["results"]]
    return found / len(queries)


def timed(
    memory: OpenClawMemory, queries: Sequence[str], rounds: int, cpu: Optional[List[float]] = None
) -> List[float]:
    """Wall milliseconds per search; `cpu` gets this process's CPU milliseconds per search (what a busy
    neighbour does not inflate)."""
    times = []
    for _ in range(rounds):
        for query in queries:
            began, began_cpu = time.perf_counter(), time.process_time()
            memory.memory_search(query)
            times.append((time.perf_counter() - began) * 1000)
            if cpu is not None:
                cpu.append((time.process_time() - began_cpu) * 1000)
    return times


def breakdown(memory: OpenClawMemory, queries: Sequence[str]) -> Dict[str, float]:
    """Median time per search in the query's embedding, the nearest chunks, and the ranking with MMR."""
    from refmem.openclaw import rank, search
    from refmem.openclaw.index import Index

    spent: Dict[str, List[float]] = {"embedding": [], "nearest": [], "ranking and MMR": []}
    originals = (Index.nearest, rank.hybrid, memory.embed)

    def timing(name: str, call: Any) -> Any:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                spent[name][-1] += (time.perf_counter() - began) * 1000

        return timed_call

    Index.nearest = timing("nearest", originals[0])  # type: ignore[method-assign]
    search.rank.hybrid = timing("ranking and MMR", originals[1])  # type: ignore[attr-defined]
    memory.embed = timing("embedding", originals[2])
    try:
        for query in queries:
            for values in spent.values():
                values.append(0.0)
            memory.memory_search(query)
    finally:
        Index.nearest = originals[0]  # type: ignore[method-assign]
        search.rank.hybrid = originals[1]  # type: ignore[attr-defined]
        memory.embed = originals[2]
    return {name: statistics.median(values) for name, values in spent.items()}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hybrid", description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--sweep", action="store_true", help="recall over minScore x vector weight")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    paraphrases = [(item.question, item.path) for item in PARAPHRASES]
    controls = control_queries()
    model = WordLlamaEmbeddings()
    with tempfile.TemporaryDirectory(prefix="refmem-bench-hybrid-") as temp:
        folder = pathlib.Path(temp) / "memories"
        folder.mkdir()
        typed: List[str] = []
        size = workspace(folder, args.files, typed)
        files = sum(1 for _ in folder.rglob("*.md"))
        print(
            f"workspace: {files} files, {size / 1e6:.2f} MB; {len(paraphrases)} paraphrase questions, "
            f"{len(controls)} control questions; recall@{K}; load average {os.getloadavg()[0]:.1f}"
        )
        keyword = OpenClawMemory(folder, index="memory")
        hybrid = OpenClawMemory(folder, embed=model, index="memory")
        hybrid.memory_search("warm up")  # embeds every chunk once
        if args.sweep:
            calibrated = (model.min_score, model.vector_weight)
            print("| vector weight | minScore | paraphrases | controls |")
            print("|---|---|---|---|")
            for weight in (0.6, 0.7, 0.8, 0.9):
                model.vector_weight = weight
                for min_score in (0.0, 0.05, 0.1, 0.15, 0.2):
                    print(
                        f"| {weight} | {min_score} | {recall(hybrid, paraphrases, min_score):.2f} "
                        f"| {recall(hybrid, controls, min_score):.2f} |"
                    )
            model.min_score, model.vector_weight = calibrated
        rows = [
            ("keyword-only, defaults", keyword, None),
            (f"hybrid, defaults (minScore {model.min_score}, vector weight {model.vector_weight})", hybrid, None),
            ("hybrid, minScore 0.35", hybrid, 0.35),
        ]
        print("| search | paraphrases | controls |")
        print("|---|---|---|")
        for label, memory, min_score in rows:
            found = recall(memory, paraphrases, min_score), recall(memory, controls, min_score)
            print(f"| {label} | {found[0]:.2f} | {found[1]:.2f} |")
        queries = typed + [question for question, _ in paraphrases] + [query for query, _ in controls]
        keyword_cpu: List[float] = []
        hybrid_cpu: List[float] = []
        keyword_ms: List[float] = []
        hybrid_ms: List[float] = []
        for number in range(args.rounds * len(queries)):  # alternately, query by query, both orders
            sides = [(keyword, keyword_ms, keyword_cpu), (hybrid, hybrid_ms, hybrid_cpu)]
            for memory, wall, cpu in sides if number % 2 == 0 else sides[::-1]:
                wall.extend(timed(memory, [queries[number % len(queries)]], 1, cpu))
        parts = breakdown(hybrid, queries)
        k_med, h_med = statistics.median(keyword_ms), statistics.median(hybrid_ms)
        print(
            f"timing over {len(queries)} queries x {args.rounds}: keyword median {k_med:.1f} ms, "
            f"hybrid median {h_med:.1f} ms, ratio {h_med / k_med:.2f}; hybrid p95 "
            f"{statistics.quantiles(hybrid_ms, n=20)[-1]:.1f} ms, keyword p95 "
            f"{statistics.quantiles(keyword_ms, n=20)[-1]:.1f} ms"
        )
        k_cpu, h_cpu = statistics.median(keyword_cpu), statistics.median(hybrid_cpu)
        print(
            f"CPU per search: keyword median {k_cpu:.2f} ms (mean {statistics.mean(keyword_cpu):.2f}), hybrid median "
            f"{h_cpu:.2f} ms (mean {statistics.mean(hybrid_cpu):.2f}); ratio of medians {h_cpu / k_cpu:.2f}, of means "
            f"{statistics.mean(hybrid_cpu) / statistics.mean(keyword_cpu):.2f}"
        )
        print(f"load average {os.getloadavg()[0]:.1f}")
        print("hybrid, median ms per search: " + ", ".join(f"{name} {ms:.1f}" for name, ms in parts.items()))
        keyword.close()
        hybrid.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
