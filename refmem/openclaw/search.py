"""memory_search's retrieval: the keyword candidates (with OpenClaw's single-keyword fallback), the
vector candidates, the ranking, and the result objects.

Keyword candidates: the chunks holding every term of the query, best BM25 first. When they are
fewer than wanted, each of the query's keywords (at most 6, `terms.keywords`) is searched on its
own and the hits merged, each chunk keeping its best score; every hit is boosted against the
whole query. This is OpenClaw's `searchKeywordWithFallback`: a conversational query ("what did we
decide about the billing migration") still finds the note that has only some of its words.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from . import rank
from .bm25 import rank_to_score
from .index import Embed, Index
from .limits import OpenClawLimits
from .rank import Hit
from .terms import fold, keywords, runs, words


def query_runs(query: str, cap: int) -> List[str]:
    """The query's distinct terms as written (distinct by their folded form), at most `cap`."""
    seen: Dict[str, str] = {}
    for run in runs(query):
        folded = fold(run)
        if folded and folded not in seen and len(seen) < cap:
            seen[folded] = run
    return list(seen.values())


def keyword_hits(index: Index, query: str, limit: int, limits: OpenClawLimits) -> List[Hit]:
    whole = query_runs(query, limits.max_query_terms)
    query_words = list(dict.fromkeys(words(query)))[: limits.max_query_terms]
    found: Dict[int, Hit] = {}

    def take(term_runs: Sequence[str]) -> None:
        for hit, bm25_rank in index.keyword(term_runs, limit):
            hit.text_score = rank_to_score(bm25_rank)
            hit.keyword_score = rank.lexical_boost(hit.text_score, query_words, hit.path, hit.text)
            known = found.get(hit.chunk)
            if known is None:
                found[hit.chunk] = hit
            else:
                known.text_score = max(known.text_score, hit.text_score)
                known.keyword_score = max(known.keyword_score, hit.keyword_score)

    take(whole)
    if len(found) < limit:
        extra = [word for word in keywords(query) if word != query.lower()][: limits.fallback_terms]
        same_terms = sorted(fold(run) for run in whole) == sorted(fold(word) for word in extra)
        if extra and not (found and same_terms):
            for word in extra:
                take(runs(word))
    ordered = sorted(found.values(), key=lambda hit: (-hit.keyword_score, -hit.text_score, hit.path, hit.start_line))
    return ordered[:limit]


def present(hit: Hit, hybrid: bool, snippet_chars: int) -> Dict[str, Any]:
    """One result as OpenClaw shapes it (without its citation footer: `citation` says it)."""
    lines = f"#L{hit.start_line}" if hit.start_line == hit.end_line else f"#L{hit.start_line}-L{hit.end_line}"
    result: Dict[str, Any] = {
        "path": hit.path,
        "startLine": hit.start_line,
        "endLine": hit.end_line,
        "score": hit.score,
    }
    if hybrid:
        result["vectorScore"] = hit.vector_score
    result["textScore"] = hit.text_score
    result["snippet"] = hit.text[:snippet_chars]
    result["source"] = "memory"
    result["citation"] = hit.path + lines
    return result


def run(
    index: Index,
    query: str,
    max_results: int,
    min_score: float,
    limits: OpenClawLimits,
    now: float,
    embed: Optional[Embed],
) -> List[Hit]:
    """The chosen hits, best first (`embed` None: keyword-only)."""
    candidates = min(limits.candidate_cap, max(1, max_results * limits.candidate_multiplier))
    keyword = keyword_hits(index, query, candidates, limits)
    if embed is None:
        return rank.keyword_only(keyword, now, limits.half_life_days, max_results, min_score)
    vectors = embed([query])
    vector = index.nearest(vectors[0], candidates) if len(vectors) == 1 else []
    return rank.hybrid(
        keyword,
        vector,
        (limits.vector_weight, limits.text_weight),
        now,
        limits.half_life_days,
        limits.mmr_lambda,
        lambda text: text[: limits.snippet_max_chars],
        max_results,
        min_score,
    )
