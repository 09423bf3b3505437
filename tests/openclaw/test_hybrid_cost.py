"""What a hybrid search does beside the keyword search, counted (D-OPENCLAW-COSINE-TOP): the nearest chunks
chosen where the provider's arithmetic computes them (the same chunks, scores and order as sorting every
score in Python, ties at the cut included), vector candidates made from the places kept with the vectors
(no row read), and only the texts the search looks at read, a batch at a time; the answers the same as when
every text is read."""

from __future__ import annotations

import hashlib
import pathlib
import random
from typing import Any, Dict, List, Sequence, Tuple

import pytest

from refmem.openclaw import OpenClawMemory, cosine, rank
from refmem.openclaw import index as index_module
from refmem.openclaw.rank import Hit

NOW = 1_795_628_376.0
DIMS = 24


class HashEmbed:
    """A deterministic embedding: each word adds a fixed pseudo-random direction (texts sharing words are
    near), with numpy's integer dot products when numpy is there (as the offline model brings them)."""

    def __init__(self, arithmetic: Any = None) -> None:
        self.arithmetic = arithmetic

    def __call__(self, texts: List[str]) -> List[List[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * DIMS
            for word in text.lower().split():
                digest = hashlib.sha256(word.encode()).digest()
                for d in range(DIMS):
                    vector[d] += digest[d] - 127.5
            vectors.append(vector if any(vector) else [1.0] * DIMS)
        return vectors


def _numpy_dots() -> Any:
    pytest.importorskip("numpy")
    from refmem.openclaw.embeddings import NumpyDots

    return NumpyDots()


@pytest.mark.parametrize("limit", [1, 7, 50, 120, 200])
def test_provider_top_is_pythons_order_ties_at_the_cut_included(limit: int) -> None:
    dots = _numpy_dots()
    rng = random.Random(limit)
    kinds = [[rng.uniform(-1, 1) for _ in range(16)] for _ in range(9)]
    rows = [(n * 3 + 1, list(rng.choice(kinds))) for n in range(150)]  # copies: many equal scores
    packed = cosine.pack(rows, 16)
    dotted = cosine.pack(rows, 16, dots)
    for probe in (kinds[0], [rng.uniform(-1, 1) for _ in range(16)]):
        expected = cosine.best(packed, probe, limit)  # every score sorted in Python
        assert cosine.best(dotted, probe, limit) == expected
        assert len(expected) == min(limit, len(rows))
        for (high, high_chunk), (low, low_chunk) in zip(expected, expected[1:]):
            assert high > low or (high == low and high_chunk < low_chunk)
    assert cosine.best(dotted, [0.0] * 16, limit) == []
    assert cosine.best(dotted, [1.0] * 15, limit) == []


def _workspace(folder: pathlib.Path) -> List[str]:
    rng = random.Random(11)
    topics = ["billing", "gateway", "postgres", "kafka", "onboarding", "audit", "search", "mobile", "caching"]
    people = ["alice", "bruno", "chen", "dara", "emil", "fatima"]
    memory = folder / "memory"
    memory.mkdir(parents=True)
    for day in range(1, 29):
        lines = []
        for _ in range(100):
            lines.append(
                f"- {rng.choice(people).title()} talked about {rng.choice(topics)} and {rng.choice(topics)}; "
                f"decided to revisit {rng.choice(topics)} after the {rng.choice(topics)} review."
            )
        (memory / f"2026-11-{day:02d}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for person in people:
        note = f"# {person.title()}\n\nWorks on {rng.choice(topics)}.\n"
        (memory / f"{person}.md").write_text(note, encoding="utf-8")
    return [f"{person} {topic}" for person, topic in zip(people, topics)] + ["what happened with the audit", "zebra"]


def _answers(folder: pathlib.Path, queries: Sequence[str], arithmetic: Any) -> Tuple[List[Any], List[Tuple[int, int]]]:
    memory = OpenClawMemory(folder, embed=HashEmbed(arithmetic), index="memory", clock=lambda: NOW)
    counted: List[Tuple[int, int]] = []
    made: List[index_module.Texts] = []
    original = index_module.Texts.__init__

    def keep(self: index_module.Texts, index: Any) -> None:
        original(self, index)
        made.append(self)

    index_module.Texts.__init__ = keep  # type: ignore[method-assign]
    try:
        answers = []
        for query in queries:
            for request in ({"query": query}, {"query": query, "maxResults": 20, "minScore": 0.0}):
                del made[:]
                answers.append(memory.search(request))
                assert len(made) == 1 and len(made[0].hits) == 200
                counted.append((made[0].reads, made[0].read))
    finally:
        index_module.Texts.__init__ = original  # type: ignore[method-assign]
        memory.close()
    return answers, counted


def test_a_hybrid_search_reads_few_candidate_texts_and_answers_the_same(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "memories"
    queries = _workspace(folder)
    lazy, counted = _answers(folder, queries, None)
    batch = index_module.TEXT_BATCH
    monkeypatch.setattr(index_module, "TEXT_BATCH", 10_000)  # every text read at the first asked for
    eager, every = _answers(folder, queries, None)
    assert lazy == eager
    assert all(reads <= 1 for reads, _ in every), str(every)  # the texts no keyword hit gave, all at once
    # 6 results: the first batch serves MMR's first picks; 20 results at minScore 0: a few batches more.
    assert max(read for reads, read in counted[0::2]) <= 2 * batch, counted
    # Before, every search read the rows of its 200 vector candidates, texts included.
    assert sum(read for _, read in counted) <= sum(read for _, read in every) < 0.25 * 200 * len(counted), counted
    assert max(reads for reads, _ in counted) <= 200 // batch + 1


def test_numpy_arithmetic_answers_as_the_packed_columns(tmp_path: pathlib.Path) -> None:
    dots = _numpy_dots()
    folder = tmp_path / "memories"
    queries = _workspace(folder)
    assert _answers(folder, queries, dots)[0] == _answers(folder, queries, None)[0]


def test_the_hybrid_order_sorts_paths_only_among_equal_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    hits = []
    for n in range(400):
        hit = Hit(n, f"memory/{rng.choice('abcAB_-1')}{rng.randint(0, 9)}.md", rng.randint(1, 5), 9, "")
        hit.score = rng.choice([0.5, 0.25, rng.random()])
        hit.ranking, hit.lexical = hit.score, rng.choice([0.0, 0.1])
        hits.append(hit)
    expected = sorted(hits, key=rank._hybrid_key)
    keys: Dict[int, int] = {}
    whole = rank._hybrid_key

    def counting(hit: Hit) -> Tuple[Any, ...]:
        keys[hit.chunk] = keys.get(hit.chunk, 0) + 1
        return whole(hit)

    assert rank.sort_ties(hits, rank._hybrid_scores, counting) == expected
    ties = sum(1 for hit in hits if sum(rank._hybrid_scores(other) == rank._hybrid_scores(hit) for other in hits) > 1)
    assert sum(keys.values()) == ties < len(hits)


def test_the_kept_places_count_within_the_vector_bound() -> None:
    from .test_cosine import _index

    index = _index([[float(n), 1.0, 2.0] for n in range(1, 200)])
    vectors_alone = cosine.packed_bytes(199, 3)
    paths = sum(len(f"memory/{n}.md") for n in range(199))
    index.vector_cache_bytes = vectors_alone + index_module.PLACE_BYTES * 199 + paths
    kept = [(hit.chunk, hit.vector_score) for hit in index.nearest([1.0, 1.0, 1.0], 5)]
    assert index._vectors is not None and len(index._vectors[2]) == 199 and len(kept) == 5
    index.vector_cache_bytes -= 1  # the vectors would fit, their places no longer: nothing kept
    index.generation += 1
    streamed = [(hit.chunk, hit.vector_score) for hit in index.nearest([1.0, 1.0, 1.0], 5)]
    assert index._vectors is None
    assert [chunk for chunk, _ in streamed] == [chunk for chunk, _ in kept]
