"""The nearest chunks in fixed point, over packed columns (refmem/openclaw/cosine.py, D-OPENCLAW-COSINE): the
same chunks in the same order as the float cosine, the score within the stated error, the same answer
when the packed vectors would pass `vector_cache_bytes` (read row by row then), and that bound kept."""

from __future__ import annotations

import array
import math
import random
from typing import List, Tuple

import pytest

from refmem.openclaw import cosine
from refmem.openclaw.index import Index


def _float_cosine(left: List[float], right: List[float]) -> float:
    a = array.array("f", left).tolist()
    b = array.array("f", right).tolist()
    return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def _index(vectors: List[List[float]]) -> Index:
    index = Index.in_memory({"format": "x"}, None)
    index.vec = False
    index.conn.execute("BEGIN")
    for n, vector in enumerate(vectors):
        index.conn.execute(
            "INSERT INTO chunks(path, start_line, end_line, text, length, words, hash, embedding) "
            "VALUES (?, 1, 1, ?, 0, 1, ?, ?)",
            (f"memory/{n}.md", f"t{n}", f"h{n}", array.array("f", vector).tobytes()),
        )
    index.conn.execute("COMMIT")
    return index


@pytest.mark.parametrize("dims", [3, 64, 257])
def test_packed_scores_are_the_cosine_within_the_bound(dims: int) -> None:
    rng = random.Random(dims)
    rows = [(n, [rng.uniform(-1, 1) for _ in range(dims)]) for n in range(300)]
    rows.append((300, [0.0] * dims))  # no direction: left out
    rows.append((301, [1.0] * (dims + 1)))  # another dimension: left out
    columns = cosine.pack(rows, dims)
    assert columns.chunks == list(range(300))
    probe = [rng.uniform(-1, 1) for _ in range(dims)]
    bound = 2 * math.sqrt(dims) / 2**cosine.SCALE_BITS + 1e-6  # + float32 storage of the inputs
    for score, (_, vector) in zip(cosine.scores(columns, probe), rows):
        assert abs(score - _float_cosine(vector, probe)) <= bound
    assert cosine.scores(columns, [0.0] * dims) == []
    assert cosine.scores(columns, probe + [1.0]) == []


def test_fields_never_overflow_at_the_extremes() -> None:
    dims = 1024
    same = [[1.0] * dims, [-1.0] * dims, [1.0] + [0.0] * (dims - 1)]
    columns = cosine.pack(list(enumerate(same)), dims)
    found = cosine.scores(columns, [1.0] * dims)
    assert found[0] == pytest.approx(1.0, abs=1e-6)
    assert found[1] == pytest.approx(-1.0, abs=1e-6)
    assert found[2] == pytest.approx(1 / math.sqrt(dims), abs=1e-6)


def _nearest(index: Index, probe: List[float], limit: int) -> List[Tuple[str, float]]:
    return [(hit.path, round(hit.vector_score, 5)) for hit in index.nearest(probe, limit)]


def test_nearest_packed_and_streamed_agree_and_ties_go_to_the_lower_id() -> None:
    rng = random.Random(7)
    kinds = [[rng.uniform(-1, 1) for _ in range(8)] for _ in range(12)]
    vectors = [list(rng.choice(kinds)) for _ in range(400)]  # copies: ties, to be broken by the lower id
    index = _index(vectors)
    probe = [1.0, 0.5, -1.0, 0.0, 2.0, 1.0, -0.5, 1.0]
    packed = _nearest(index, probe, 50)
    assert index._vectors is not None
    expected = sorted(
        ((f"memory/{n}.md", _float_cosine(vector, probe), n) for n, vector in enumerate(vectors)),
        key=lambda item: (-round(item[1], 6), item[2]),
    )[:50]
    assert [path for path, _ in packed] == [path for path, _, _ in expected]
    index.vector_cache_bytes = 0  # over the bound: nothing kept, each vector read and scored
    index.generation += 1
    assert _nearest(index, probe, 50) == packed
    assert index._vectors is None


def test_the_packed_vectors_stay_within_their_bound() -> None:
    index = _index([[float(n), 1.0, 2.0] for n in range(1, 200)])
    index.nearest([1.0, 1.0, 1.0], 5)
    assert index._vectors is not None
    held = index._vectors[1].nbytes()
    assert held == cosine.packed_bytes(199, 3) and held < index.vector_cache_bytes
    index.vector_cache_bytes = held - 1
    index.generation += 1
    assert len(index.nearest([1.0, 1.0, 1.0], 5)) == 5
    assert index._vectors is None


@pytest.mark.parametrize("dims", [3, 256, 1024])
def test_provider_integer_dots_give_the_packed_scores_bit_for_bit(dims: int) -> None:
    numpy = pytest.importorskip("numpy")
    assert numpy is not None
    from refmem.openclaw.embeddings import NumpyDots

    rng = random.Random(dims + 7)
    rows = [(n, [rng.uniform(-1, 1) for _ in range(dims)]) for n in range(200)]
    rows.append((200, [1.0] * dims))  # the extremes: every product at its largest
    rows.append((201, [-1.0] * dims))
    rows.append((202, [0.0] * dims))  # no direction: left out by both
    packed = cosine.pack(rows, dims)
    dotted = cosine.pack(rows, dims, NumpyDots())
    assert dotted.arithmetic is not None and not dotted.packed
    assert dotted.chunks == packed.chunks
    for probe in ([rng.uniform(-1, 1) for _ in range(dims)], [1.0] * dims, [-1.0] * dims):
        assert cosine.scores(dotted, probe) == cosine.scores(packed, probe)
    assert cosine.scores(dotted, [0.0] * dims) == []


def test_the_index_keeps_columns_per_arithmetic() -> None:
    numpy = pytest.importorskip("numpy")
    assert numpy is not None
    from refmem.openclaw.embeddings import NumpyDots

    rng = random.Random(5)
    vectors = [[rng.uniform(-1, 1) for _ in range(16)] for _ in range(40)]
    index = _index(vectors)
    probe = [rng.uniform(-1, 1) for _ in range(16)]
    plain = [(hit.chunk, hit.vector_score) for hit in index.nearest(probe, 10)]
    dots = NumpyDots()
    assert [(hit.chunk, hit.vector_score) for hit in index.nearest(probe, 10, dots)] == plain
    assert index._vectors is not None and index._vectors[1].arithmetic is dots
    assert [(hit.chunk, hit.vector_score) for hit in index.nearest(probe, 10)] == plain
