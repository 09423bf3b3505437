"""BM25 as SQLite FTS5's `bm25()` computes it, for the index that runs where FTS5 is missing, and
OpenClaw's mapping of a rank to a score in [0, 1).

FTS5 (k1 = 1.2, b = 0.75): a row's rank is minus the sum, over the query's terms, of
IDF * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average length)), where
IDF = ln((N - n + 0.5) / (n + 0.5)) and an IDF not above zero counts as 1e-6. Lower ranks are
better. OpenClaw turns a negative rank r into -r / (1 - r). Pure functions.
"""

from __future__ import annotations

import math
from typing import Dict, Mapping, Sequence, Tuple

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6


def idf(total: int, containing: int) -> float:
    value = math.log((total - containing + 0.5) / (containing + 0.5))
    return value if value > 0 else MIN_IDF


def ranks(
    postings: Sequence[Mapping[int, int]], lengths: Mapping[int, int], total: int, average: float
) -> Dict[int, float]:
    """FTS5 ranks of the rows holding every term: `postings[i]` maps row to the count of term i."""
    if not postings:
        return {}
    rows = set(postings[0])
    for posting in postings[1:]:
        rows &= set(posting)
    weights = [idf(total, len(posting)) for posting in postings]
    found: Dict[int, float] = {}
    for row in rows:
        norm = K1 * (1 - B + B * lengths.get(row, 0) / average) if average > 0 else K1
        score = 0.0
        for weight, posting in zip(weights, postings):
            count = posting[row]
            score += weight * count * (K1 + 1) / (count + norm)
        found[row] = -score
    return found


def rank_to_score(rank: float) -> float:
    """OpenClaw's `bm25RankToScore`."""
    if not math.isfinite(rank):
        return 0.001
    if rank < 0:
        relevance = -rank
        return relevance / (1 + relevance)
    return 1 / (1 + rank)


def ordered(found: Mapping[int, float], limit: int) -> Sequence[Tuple[int, float]]:
    """The `limit` best (row, rank) pairs, best first; ties by row."""
    return sorted(found.items(), key=lambda item: (item[1], item[0]))[:limit]
