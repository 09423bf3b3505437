"""Cosine similarity of one query vector against every chunk vector, in fixed point, in whole columns.

Python has no vector arithmetic in its standard library, and a loop over the components of every chunk
(`sum(map(operator.mul, ...))`, about 15 us for 256 components) made the nearest-chunk step of a hybrid
search cost more than the keyword search itself (D-OPENCLAW-COSINE). Here each vector is normalised once,
each component is rounded to an integer of `SCALE_BITS` bits, and component d of every chunk is packed
into ONE integer (`Columns.packed[d]`: chunk n's value in the field of bits [n*width, (n+1)*width)). The
dot products of all chunks are then `sum(column_d * q_d)` over the query's components: one multiplication
of a long integer by a small one per component, done in C. Fields never overflow into each other:
components are offset to be non-negative (the offsets are removed per chunk afterwards) and `width` has
room for the largest possible sum.

The result is the cosine within 2 * sqrt(dims) / 2**SCALE_BITS (2.4e-7 at 256 components): the rounding
of float32 storage is of the same order. Ties are broken by the chunk's id, as before.

An embedding provider that already carries vector arithmetic (the offline model brings numpy) may offer
it as `IntegerDots`: the same rounded integers, multiplied and summed in C with no rounding of its own,
so the scores are bit for bit those of the packed columns, for a quarter of the time (D-OPENCLAW-COSINE-DOTS).
refmem itself imports nothing for it.
"""

from __future__ import annotations

import array
import math
from typing import Any, List, NamedTuple, Optional, Protocol, Sequence, Tuple

SCALE_BITS = 26
"""Bits of a normalised component after rounding: |u| <= 1 becomes an integer in [-2**26, 2**26]."""

_OFFSET = 1 << SCALE_BITS


class IntegerDots(Protocol):
    """Exact integer dot products done elsewhere (in C): `prepare` takes the rounded vectors (one list of
    ints per chunk), `dots` gives each one's exact dot product with the rounded query, in order. Every
    product fits 2 * SCALE_BITS + 1 bits and a sum of up to `max_dims` of them must not overflow."""

    max_dims: int

    def prepare(self, rows: List[List[int]]) -> Any: ...

    def dots(self, prepared: Any, query: List[int]) -> Sequence[int]: ...


class IntegerTop(Protocol):
    """What an `IntegerDots` may add: the `limit` best of the dot products divided by `scale`, chosen where
    they are computed, as (positions, scores) best first, equal scores in ascending position (the order
    `best` computes in Python, so that 1,000 scores need not become Python floats to choose 200)."""

    def top(self, prepared: Any, query: List[int], limit: int, scale: float) -> Tuple[List[int], List[float]]: ...


class Columns(NamedTuple):
    """Every chunk vector of one dimension, normalised, rounded and packed by component (or prepared
    by an `IntegerDots`, then `packed` and `offsets` are empty)."""

    chunks: List[int]  # chunk ids, ascending
    dims: int
    width: int  # bits per chunk in a packed column
    packed: List[int]  # one integer per component
    offsets: List[int]  # per chunk: OFFSET * the sum of its rounded components (removed after the sum)
    prepared: Any = None  # the rounded vectors as `arithmetic` keeps them
    arithmetic: Optional[IntegerDots] = None

    def nbytes(self) -> int:
        return len(self.chunks) * self.width // 8 * self.dims + 16 * len(self.chunks)


def packed_bytes(count: int, dims: int) -> int:
    """What `Columns` for `count` vectors of `dims` components holds, about (for the cache's bound)."""
    return count * _width(dims) // 8 * dims + 16 * count


def _width(dims: int) -> int:
    # A field holds sum over dims of (c + OFFSET) * (q + OFFSET) <= dims * (2 * OFFSET) ** 2.
    bits = (2 * (SCALE_BITS + 1)) + max(1, dims).bit_length() + 1
    return (bits + 7) // 8 * 8


def rounded(vector: Sequence[float]) -> List[int]:
    """The vector normalised and rounded to fixed point; empty when its norm is 0 or not finite."""
    norm = math.sqrt(math.fsum(value * value for value in vector))
    if norm == 0 or not math.isfinite(norm):
        return []
    return [round(value / norm * _OFFSET) for value in vector]


def pack(
    rows: Sequence[Tuple[int, Sequence[float]]], dims: int, arithmetic: Optional[IntegerDots] = None
) -> Columns:
    """Columns of the rows (chunk id, vector) with `dims` components and a non-zero norm, by ascending id;
    kept by `arithmetic` instead when it is given and can hold `dims` components."""
    width = _width(dims)
    if arithmetic is not None and 0 < dims <= arithmetic.max_dims:
        kept: List[int] = []
        vectors: List[List[int]] = []
        for chunk, vector in sorted(rows, key=lambda row: row[0]):
            values = rounded(vector) if len(vector) == dims else []
            if values:
                kept.append(chunk)
                vectors.append(values)
        return Columns(kept, dims, width, [], [], arithmetic.prepare(vectors), arithmetic)
    size = width // 8
    chunks: List[int] = []
    offsets: List[int] = []
    fields: List[List[bytes]] = [[] for _ in range(dims)]
    for chunk, vector in sorted(rows, key=lambda row: row[0]):
        if len(vector) != dims:
            continue
        values = rounded(vector)
        if not values:
            continue
        chunks.append(chunk)
        offsets.append(_OFFSET * sum(values))
        for column, value in zip(fields, values):
            column.append((value + _OFFSET).to_bytes(size, "little"))
    packed = [int.from_bytes(b"".join(column), "little") for column in fields]
    return Columns(chunks, dims, width, packed, offsets)


def scores(columns: Columns, probe: Sequence[float]) -> List[float]:
    """The cosine of `probe` with each chunk of `columns`, in the order of `columns.chunks`."""
    count = len(columns.chunks)
    query = rounded(probe) if len(probe) == columns.dims else []
    if not count or not query:
        return []
    scale = float(1 << (2 * SCALE_BITS))
    if columns.arithmetic is not None:
        return [value / scale for value in columns.arithmetic.dots(columns.prepared, query)]
    total = 0
    for column, value in zip(columns.packed, query):
        total += column * (value + _OFFSET)
    size = columns.width // 8
    raw = total.to_bytes(count * size, "little")
    if size == 8:
        sums = array.array("Q")
        if sums.itemsize == 8:
            sums.frombytes(raw)
            values = sums.tolist()
        else:  # pragma: no cover - no 8-byte unsigned array type on this platform
            values = [int.from_bytes(raw[n * 8 : n * 8 + 8], "little") for n in range(count)]
    else:
        values = [int.from_bytes(raw[n * size : (n + 1) * size], "little") for n in range(count)]
    constant = _OFFSET * sum(query) + columns.dims * _OFFSET * _OFFSET
    return [(value - offset - constant) / scale for value, offset in zip(values, columns.offsets)]


def best(columns: Columns, probe: Sequence[float], limit: int) -> List[Tuple[float, int]]:
    """The `limit` chunks of `columns` nearest `probe`: (cosine, chunk id), best first, equal scores by
    ascending id. The provider's arithmetic chooses them where it offers `IntegerTop.top` (the same floats,
    the same order: D-OPENCLAW-COSINE-TOP); otherwise every score is sorted here."""
    if limit <= 0:
        return []
    arithmetic = columns.arithmetic
    top = getattr(arithmetic, "top", None)
    if top is not None and columns.chunks:
        query = rounded(probe) if len(probe) == columns.dims else []
        if not query:
            return []
        positions, found = top(columns.prepared, query, limit, float(1 << (2 * SCALE_BITS)))
        return [(score, columns.chunks[n]) for n, score in zip(positions, found)]
    found = scores(columns, probe)
    # A stable sort keeps ascending ids (columns.chunks is ascending) among equal scores.
    order = sorted(range(len(found)), key=found.__getitem__, reverse=True)[:limit]
    return [(found[n], columns.chunks[n]) for n in order]
