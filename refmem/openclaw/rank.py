"""How memory_search orders and chooses hits: OpenClaw's scoring, written as pure functions.

Keyword-only (no embedding function, OpenClaw's behaviour without an embedding provider):
each chunk matching the query gets its BM25 score (`bm25.rank_to_score`) plus OpenClaw's lexical
boost (query words present, their density, query words in the path, chunk length), capped at 1;
dated daily logs then decay with a 30-day half-life; hits are sorted by score and those at or
above `minScore` returned, or, when none reaches it, the best ones anyway.

Hybrid (an embedding function given): score = 0.7 * cosine + 0.3 * keyword score, then decay,
then maximal marginal relevance (lambda 0.7, Jaccard over snippet words) for diversity, then the
hits at or above `minScore`, topped up with keyword-only hits below it.

Left out (D-OPENCLAW-SEARCH-RANK): OpenClaw's path-name search (a query that names a file),
importance and project annotations, session transcripts.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from .terms import words

DAY_SECONDS = 86_400
_DATED = re.compile(r"(?:^|/)memory/(?:[^/]+/)*(\d{4})-(\d{2})-(\d{2})(?:-[^/]+)?\.md$")


@dataclasses.dataclass
class Hit:
    chunk: int
    path: str
    start_line: int
    end_line: int
    text: str
    text_score: float = 0.0  # BM25 mapped to [0, 1)
    keyword_score: float = 0.0  # text_score plus the lexical boost, capped at 1
    vector_score: float = 0.0
    keyword: bool = False  # found by the keyword retriever
    score: float = 0.0

    @property
    def key(self) -> Tuple[str, int, int]:
        return self.path, self.start_line, self.end_line


def lexical_boost(score: float, query_words: Sequence[str], path: str, text: str) -> float:
    """OpenClaw's `scoreFallbackKeywordResult`: the keyword score of a body match."""
    if not query_words:
        return score
    text_words = set(words(text))
    overlap = sum(1 for word in query_words if word in text_words)
    lowered_path = path.lower()
    boost = 0.45 * overlap / len(query_words)
    boost += 0.2 * overlap / max(len(text_words), 1)
    boost += sum(0.18 for word in query_words if word in lowered_path)
    boost += min(len(text) / 160, 0.18)
    return min(1.0, score + boost)


_EPOCH = datetime.date(1970, 1, 1).toordinal()


def _days_from_epoch(path: str) -> Optional[int]:
    match = _DATED.search(path)
    if match is None:
        return None
    try:
        day = datetime.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None
    return day.toordinal() - _EPOCH


def decay(score: float, path: str, now: float, half_life_days: int) -> float:
    """Temporal decay of a dated daily log (`memory/.../YYYY-MM-DD[-x].md`, UTC midnight of that
    day); other memory files are evergreen."""
    days = _days_from_epoch(path)
    if days is None or half_life_days <= 0:
        return score
    age = max(0.0, (now - days * DAY_SECONDS) / DAY_SECONDS)
    return score * math.exp(-math.log(2) / half_life_days * age)


def _order(hit: Hit) -> Tuple[float, float, str, int, int]:
    return (-hit.score, -hit.text_score, hit.path, hit.start_line, hit.chunk)


def select(ranked: Sequence[Hit], max_results: int, min_score: float) -> List[Hit]:
    """OpenClaw's keyword-only choice: the hits at or above `min_score`, else the best ones."""
    strict = [hit for hit in ranked if hit.score >= min_score]
    return (strict or [hit for hit in ranked if hit.score >= 0])[:max_results]


def keyword_only(hits: Sequence[Hit], now: float, half_life_days: int, max_results: int, min_score: float) -> List[Hit]:
    for hit in hits:
        hit.score = decay(hit.keyword_score, hit.path, now, half_life_days)
    return select(sorted(hits, key=_order), max_results, min_score)


def jaccard(left: FrozenSet[str], right: FrozenSet[str]) -> float:
    if not left and not right:
        return 1.0
    if not left or not right:
        return 0.0
    shared = len(left & right)
    return shared / (len(left) + len(right) - shared)


def diversify(hits: Sequence[Hit], lam: float, snippet: Callable[[str], str]) -> List[Hit]:
    """Maximal marginal relevance: repeatedly take the hit with the best lam * relevance -
    (1 - lam) * its greatest similarity to a hit already taken (relevance: the score scaled to
    [0, 1] over the candidates; similarity: Jaccard of the snippets' words)."""
    if len(hits) <= 1 or lam >= 1:
        return sorted(hits, key=_order)
    lam = max(0.0, lam)
    tokens = [frozenset(words(snippet(hit.text))) for hit in hits]
    top, bottom = max(hit.score for hit in hits), min(hit.score for hit in hits)
    spread = top - bottom
    relevance = [1.0 if spread == 0 else (hit.score - bottom) / spread for hit in hits]
    closest = [0.0] * len(hits)
    left = list(range(len(hits)))
    chosen: List[Hit] = []
    while left:
        best = max(left, key=lambda i: (lam * relevance[i] - (1 - lam) * closest[i], hits[i].score, -i))
        left.remove(best)
        chosen.append(hits[best])
        for i in left:
            closest[i] = max(closest[i], jaccard(tokens[i], tokens[best]))
    return chosen


def hybrid(
    keyword: Sequence[Hit],
    vector: Sequence[Hit],
    weights: Tuple[float, float],
    now: float,
    half_life_days: int,
    lam: float,
    snippet: Callable[[str], str],
    max_results: int,
    min_score: float,
) -> List[Hit]:
    """OpenClaw's `mergeHybridResults` then `selectHybridSearchResults` (see the module docstring)."""
    vector_weight, text_weight = weights
    merged: Dict[int, Hit] = {hit.chunk: hit for hit in vector}
    for hit in keyword:
        found = merged.get(hit.chunk)
        if found is None:
            merged[hit.chunk] = hit
        else:
            found.text_score, found.keyword_score, found.keyword = hit.text_score, hit.keyword_score, True
    for hit in merged.values():
        content = vector_weight * hit.vector_score + text_weight * (hit.keyword_score if hit.text_score > 0 else 0.0)
        hit.score = decay(content, hit.path, now, half_life_days)
    ranked = diversify(sorted(merged.values(), key=_order), lam, snippet)
    strict = [hit for hit in ranked if hit.score >= min_score]
    chosen = strict[:max_results]
    if not keyword or len(chosen) == max_results:
        return chosen
    if not strict:
        return [hit for hit in ranked if hit.score >= 0 and hit.keyword][:max_results]
    for hit in ranked:
        if len(chosen) == max_results:
            break
        if hit.score < min_score and hit.vector_score == 0 and hit.keyword and all(hit is not c for c in chosen):
            chosen.append(hit)
    return chosen
