"""memory_search's retrieval, as OpenClaw 2026.9.6 runs it: keyword candidates from the chunk text
and from the file paths, the single-keyword fallback, the vector candidates, and the result objects.

Keyword candidates for a query (`searchKeyword`): the best 200 chunks holding every term of it (BM25
over the chunk text, each scored with the lexical boost against the whole query), and the files whose
path holds every term (BM25 over the paths; a file is found by its first chunk) or that the query names
exactly (`alice-chen` names `memory/people/alice-chen.md`); merged per chunk (`mergeKeywordSearchHits`)
and bounded (`limitKeywordSearchHits`). When fewer than 200 are found for the whole query, each of its
keywords (at most 6, `terms.keywords`) is searched the same way and everything merged
(`searchKeywordWithFallback`): a conversational query still finds a note with some of its words.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from . import rank
from .bm25 import rank_to_score
from .chunks import truncate_utf16
from .index import Embed, Index, normalize_path_query
from .limits import OpenClawLimits
from .rank import Hit
from .terms import fts_expression, keywords, words

EXACT_PATH_LIMIT = 200
"""How many files named exactly a search keeps beside its other candidates (OpenClaw's)."""


class Query:
    """What one search compares every candidate with: the whole query's ranking words and the file
    it may name exactly."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words = list(dict.fromkeys(words(text)))
        self.path_key = normalize_path_query(text)
        self._exact: Optional[Dict[str, int]] = None
        self.boosts: Dict[int, float] = {}  # chunk -> its lexical boost, for a chunk met by several terms

    def exact(self, index: Index, path: str) -> int:
        if self._exact is None:
            self._exact = dict(index.exact_paths(self.path_key, 1 << 30))
        return self._exact.get(path, 0)


def _body(index: Index, term: str, query: Query, limit: int) -> List[Hit]:
    """`searchKeyword` over the chunk text: BM25, then the boost against the whole query."""
    found = []
    for hit, bm25_rank in index.body(fts_expression(term), term, limit):
        hit.text_score = rank_to_score(bm25_rank)
        if query.words:
            boost = query.boosts.get(hit.chunk)
            if boost is None:
                boost = query.boosts[hit.chunk] = rank.boost_of(query.words, hit.path, hit.text, hit.words, hit.vocab)
            hit.score = min(1.0, hit.text_score + boost)
        else:
            hit.score = hit.text_score
        hit.body = hit.keyword = True
        found.append(hit)
    return found


class PathPlan(NamedTuple):
    """One path search: an FTS5 expression of words (None: none) and words each path must hold."""

    expression: Optional[str]
    query: str
    substrings: Tuple[str, ...]


def path_plans(term: str) -> List[PathPlan]:
    """OpenClaw's `planPathKeywordSearch` over `unicode61`: the whole term as the body search reads
    it, then, for its NFC and its NFD form, its words (letters, marks, digits, `_`) with every
    non-ASCII word matched as a substring of the path (NFC, any case) and the ASCII words through
    FTS5. So `zoë` or `王伟` finds `zoë-9.md` or `王伟-109.md` whatever the tokenizer made of the
    name (a plan without an FTS5 expression scores a path 1), and `佐` finds `佐藤花子-3.md`
    (D-OPENCLAW-SEARCH-SCRIPTS)."""
    plans = [PathPlan(fts_expression(term), term, ())]
    seen: Set[Tuple[Optional[str], Tuple[str, ...]]] = {(plans[0].expression, ())}
    for form in dict.fromkeys((unicodedata.normalize("NFC", term), unicodedata.normalize("NFD", term))):
        found = path_words(form)
        substrings = tuple(word for word in found if not word.isascii())
        if not substrings:
            continue
        ascii_words = [word for word in found if word.isascii()]
        expression = " AND ".join('"' + word.replace('"', "") + '"' for word in ascii_words) or None
        if (expression, substrings) not in seen:
            seen.add((expression, substrings))
            plans.append(PathPlan(expression, " ".join(ascii_words), substrings))
    return plans


def path_words(text: str) -> List[str]:
    """Runs of letters, combining marks, digits and `_` (`[\\p{L}\\p{M}\\p{N}_]+`)."""
    found: List[str] = []
    current: List[str] = []
    for char in text:
        if char == "_" or (char.isalnum() if char.isascii() else unicodedata.category(char)[0] in "LMN"):
            current.append(char)
        elif current:
            found.append("".join(current))
            current = []
    if current:
        found.append("".join(current))
    return found


def _paths(index: Index, term: str, query: Query, limit: int) -> List[Hit]:
    """`searchPathKeyword`: files the query names exactly, then files whose path matches a plan
    (`path_plans`), each plan keeping its best 200 files named exactly and `limit` others."""
    by_chunk: Dict[int, Hit] = {}
    for path, level in index.exact_paths(query.path_key, EXACT_PATH_LIMIT):
        hit = index.first_chunk(path)
        if hit is not None:
            hit.exact, hit.keyword = level, True
            by_chunk[hit.chunk] = hit
    lexical: Dict[int, Hit] = {}
    for plan in path_plans(term):
        if plan.expression is None and not plan.substrings:
            continue
        found = index.path_matches(plan.expression, plan.query, plan.substrings)
        matches = sorted(found, key=lambda item: (item[1], item[0]))
        exact_taken = other_taken = 0
        for path, bm25_rank in matches:
            level = query.exact(index, path)
            if level:
                if exact_taken >= EXACT_PATH_LIMIT:
                    continue
                exact_taken += 1
            else:
                if other_taken >= limit:
                    continue
                other_taken += 1
            hit = index.first_chunk(path)
            if hit is None:
                continue
            score = rank_to_score(bm25_rank) if plan.expression is not None else 1.0
            known = lexical.get(hit.chunk)
            if known is not None:
                known.path_score = max(known.path_score, score)
                known.score = max(known.score, score)
                known.exact = max(known.exact, level)
                continue
            hit.path_score = hit.score = score
            hit.exact, hit.keyword = level, True
            lexical[hit.chunk] = hit
    kept_others = 0
    for hit in rank.sort(list(lexical.values()), rank.path_key):
        if hit.exact > 0:
            known = by_chunk.get(hit.chunk)
            if known is not None:
                known.path_score = max(known.path_score, hit.path_score)
                known.score = max(known.score, hit.score)
            continue
        if kept_others >= limit:
            continue
        by_chunk[hit.chunk] = hit
        kept_others += 1
    return rank.sort(list(by_chunk.values()), rank.path_key)[: EXACT_PATH_LIMIT + limit]


def merge(result_sets: Sequence[Sequence[Hit]], index: Index, query: Query) -> List[Hit]:
    """`mergeKeywordSearchHits`: one hit per chunk, its best body score and path score kept."""
    seen: Dict[int, Hit] = {}
    for results in result_sets:
        for hit in results:
            known = seen.get(hit.chunk)
            if known is None:
                hit.exact = query.exact(index, hit.path)
                seen[hit.chunk] = hit
                continue
            body_score = max(known.score if known.body else 0.0, hit.score if hit.body else 0.0)
            if hit.body and not known.body:
                known.text = hit.text
            known.text_score = max(known.text_score, hit.text_score)
            known.path_score = max(known.path_score, hit.path_score)
            known.body = known.body or hit.body
            known.score = body_score if body_score > 0 else known.path_score
    merged = list(seen.values())
    for hit in merged:
        if not hit.body:
            hit.score = 1.0 if hit.exact > 0 else hit.path_score
    return rank.sort(merged, rank.keyword_key)


def bound(results: Sequence[Hit], limit: int) -> List[Hit]:
    """`limitKeywordSearchHits`: the files named exactly (at most 200 of them), then `limit` others."""
    ranked = rank.sort(results, rank.keyword_key)
    exact_body = [hit for hit in ranked if hit.exact > 0 and hit.body][:limit]
    exact_path_only = [hit for hit in ranked if hit.exact > 0 and not hit.body]
    bounded = rank.sort(exact_body + exact_path_only, rank.keyword_key)
    chosen_paths: List[str] = []
    for hit in bounded:
        if hit.path not in chosen_paths:
            chosen_paths.append(hit.path)
        if len(chosen_paths) == EXACT_PATH_LIMIT:
            break
    exact = [hit for hit in bounded if hit.path in chosen_paths]
    return exact + [hit for hit in ranked if hit.exact == 0][:limit]


def search_terms(index: Index, term: str, query: Query, limit: int) -> List[Hit]:
    """One keyword search: the chunk text and the paths, for `term`, ranked against `query`."""
    return bound(merge([_body(index, term, query, limit), _paths(index, term, query, limit)], index, query), limit)


def fallback_terms(query: str, cap: int) -> List[str]:
    whole = query.strip().lower()
    return [word for word in keywords(query) if word != whole][:cap]


def keyword_hits(
    index: Index, text: str, limit: int, limits: OpenClawLimits, query: Optional[Query] = None
) -> List[Hit]:
    """`searchKeywordWithFallback` (see the module docstring); `query` is `Query(text)` when the caller
    has it (the files it names exactly are looked up once a search)."""
    query = query or Query(text)
    whole = search_terms(index, text, query, limit)
    if sum(1 for hit in whole if hit.exact == 0) >= limit:
        return whole
    extra = fallback_terms(text, limits.fallback_terms)
    if not extra:
        return whole
    strict, loose = fts_expression(text), fts_expression(" ".join(extra))
    if whole and (strict or "").lower() == (loose or "").lower():
        return whole
    sets = [whole] + [search_terms(index, term, query, limit) for term in extra]
    return bound(merge(sets, index, query), limit)


def snippet(text: str, limit: int) -> str:
    return truncate_utf16(text, limit)


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
    result["snippet"] = snippet(hit.text, snippet_chars)
    result["source"] = "memory"
    result["citation"] = hit.path + lines
    return result


def weights(embed: Embed, limits: OpenClawLimits) -> Tuple[float, float]:
    """The hybrid weights (cosine, keyword score): the embedding model's calibrated ones when it has them
    (D-OPENCLAW-EMBED-CALIBRATION), else OpenClaw's 0.7 and 0.3."""
    calibrated = getattr(embed, "vector_weight", None)
    if calibrated is None:
        return limits.vector_weight, limits.text_weight
    vector = max(0.0, min(1.0, float(calibrated)))
    return vector, 1.0 - vector


def run(
    index: Index,
    query: str,
    max_results: int,
    min_score: float,
    limits: OpenClawLimits,
    now: float,
    embed: Optional[Embed],
) -> List[Hit]:
    """The chosen hits, best first (`embed` None: keyword-only). OpenClaw asks every retriever for its
    whole candidate pool (200), whatever `maxResults` is, and cuts at the end."""
    candidates = limits.candidate_cap
    query_key = Query(query)
    keyword = keyword_hits(index, query, candidates, limits, query_key)
    if embed is None:
        return rank.keyword_only(keyword, now, limits.half_life_days, max_results, min_score)
    vectors = embed([query])
    arithmetic = getattr(embed, "arithmetic", None)  # the provider's own integer sums (cosine.IntegerDots)
    vector = index.nearest(vectors[0], candidates, arithmetic) if len(vectors) == 1 else []
    for hit in vector:
        hit.exact = query_key.exact(index, hit.path)
    return rank.hybrid(
        keyword,
        vector,
        weights(embed, limits),
        now,
        limits.half_life_days,
        limits.mmr_lambda,
        functools.partial(snippet, limit=limits.snippet_max_chars),
        max_results,
        min_score,
    )
