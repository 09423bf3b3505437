"""How memory_search scores, orders and chooses hits: OpenClaw 2026.9.6's rules, as pure functions.

A hit is a chunk found by the body search (its BM25 score, `text_score`, plus OpenClaw's lexical
boost: `score`), by the path search (the first chunk of a file whose path matches: `path_score`), or
by the vector search (`vector_score`). `exact` is how closely the query names the hit's file
(3 the whole path, 2 the last name, 1 the name without extension, 0 not at all).

Keyword-only (OpenClaw without an embedding provider, `finalizeKeywordOnlyResults`): hits naming
the file exactly come first, scored (1 + their body score) / 2; dated daily logs decay with a 30-day
half-life; then by score, text score, path score, path, first line; files named exactly report a
score of 1; the hits at or above `minScore`, or when none is, the best ones anyway.

Hybrid (`mergeHybridResults`, `selectHybridSearchResults`): content score = 0.7 x cosine + 0.3 x
keyword score, then decay; files named exactly first (each tier diversified), then the others
ordered by maximal marginal relevance (lambda 0.7, Jaccard of snippet tokens); then the hits at or
above `minScore`, topped up with keyword hits below it.

Ties between paths follow ICU's root collation (OpenClaw's `localeCompare`) for ASCII names;
other characters come after ASCII letters in code point order (D-OPENCLAW-SEARCH-RANK).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import itertools
import math
import re
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Pattern, Sequence, Tuple

from .terms import words

DAY_SECONDS = 86_400
_DATED = re.compile(r"(?:^|/)memory/(?:[^/]+/)*(\d{4})-(\d{2})-(\d{2})(?:-[^/]+)?\.md$")
_COLLATION = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_PRIMARY = {char: index for index, char in enumerate(_COLLATION)}
_CJK = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff]")


@dataclasses.dataclass
class Hit:
    chunk: int
    path: str
    start_line: int
    end_line: int
    text: str
    words: int = 0  # distinct ranking words of the text (for the boost's density)
    vocab: str = ""  # those words, joined by spaces (kept in the index, so that a search never cuts them)
    text_score: float = 0.0  # BM25 mapped to [0, 1)
    score: float = 0.0  # the keyword score (text score plus the boost), then the final score
    path_score: float = 0.0
    vector_score: float = 0.0
    exact: int = 0
    body: bool = False  # found by the body search
    keyword: bool = False  # found by the keyword retriever (body or path)
    ranking: float = 0.0  # hybrid: the score used to order
    lexical: float = 0.0  # hybrid: the keyword rank of a body hit without a text score
    content: float = 0.0  # hybrid: the weighted content score

    @property
    def key(self) -> Tuple[str, int, int]:
        return self.path, self.start_line, self.end_line


# --- ordering ---------------------------------------------------------------------------------------


class _Primary(dict):  # type: ignore[type-arg]
    """char -> its primary weight as one character (`str.translate`'s table): the weights of
    `_COLLATION` for the characters there, 1000 + the code point of the lower-case form beyond (its first
    character: `İ` lowers to two), so that comparing translated strings compares the weights. Characters
    up to U+024F are filled in; the others are computed on each use and never stored (bounded)."""

    def __missing__(self, char: int) -> str:
        return _primary_weight(chr(char))


def _primary_weight(char: str) -> str:
    lower = char.lower()[:1] or char
    return chr(min(0x10FFFF, _PRIMARY.get(lower, 1000 + ord(lower))))


class _Case(dict):  # type: ignore[type-arg]
    """char -> "1" for an upper-case character, "0" otherwise (`str.translate`'s table, as `_Primary`)."""

    def __missing__(self, char: int) -> str:
        return "1" if chr(char).isupper() else "0"


_PRIMARY_TABLE = _Primary({code: _primary_weight(chr(code)) for code in range(0x250)})
_CASE_TABLE = _Case({code: ("1" if chr(code).isupper() else "0") for code in range(0x250)})


@functools.lru_cache(maxsize=4096)
def collation_key(path: str) -> Tuple[str, str, str]:
    """A sort key in the order of ICU's root collation (`String.prototype.localeCompare`) for ASCII
    names: punctuation before digits before letters, letters compared without case first, lower
    case before upper case on a tie. Strings of one weight per character (`str.translate`), not tuples:
    a miss of the cache costs microseconds, and any character (one that lowers to two included) has a
    weight."""
    return path.translate(_PRIMARY_TABLE), path.translate(_CASE_TABLE), path


def keyword_key(hit: Hit, prefer_exact_body: bool = True) -> Tuple[Any, ...]:
    """OpenClaw's `compareKeywordSearchHits` as a sort key: files named exactly first (with a body
    match first among them, unless decay is on), then score, text score, path score, path, line."""
    body = -int(hit.body) if prefer_exact_body and hit.exact > 0 else 0
    path_score = -hit.path_score if hit.exact == 0 else 0.0
    return (
        -hit.exact,
        body,
        -hit.score,
        -hit.text_score,
        path_score,
        collation_key(hit.path),
        hit.start_line,
        hit.chunk,
    )


def keyword_key_decayed(hit: Hit) -> Tuple[Any, ...]:
    return keyword_key(hit, False)


def path_key(hit: Hit) -> Tuple[Any, ...]:
    """OpenClaw's `comparePathKeywordSearchResults` as a sort key."""
    path_score = -hit.path_score if hit.exact == 0 else 0.0
    return (-hit.exact, path_score, collation_key(hit.path), hit.start_line, hit.chunk)


def _ranking_key(hit: Hit) -> Tuple[Any, ...]:
    return (-hit.ranking, -hit.lexical, collation_key(hit.path), hit.start_line, hit.end_line)


def _hybrid_key(hit: Hit) -> Tuple[Any, ...]:
    return (-hit.score, *_ranking_key(hit))


def sort(hits: Sequence[Hit], key: Callable[[Hit], Tuple[Any, ...]]) -> List[Hit]:
    """`sorted(hits, key=key)`; by `sort_ties` for a key whose leading scores are known (`_SCORES`)."""
    scores = _SCORES.get(key)
    return sorted(hits, key=key) if scores is None else sort_ties(hits, scores, key)


def _hybrid_scores(hit: Hit) -> Tuple[float, ...]:
    return -hit.score, -hit.ranking, -hit.lexical


def sort_ties(
    hits: Sequence[Hit], scores: Callable[[Hit], Tuple[Any, ...]], key: Callable[[Hit], Tuple[Any, ...]]
) -> List[Hit]:
    """`sorted(hits, key=key)` where `scores(hit)` is the start of `key(hit)`: sorted by the scores, and only
    a run of equal scores by the whole key. Hits rarely tie on their scores, and the rest of the key (the
    path's collation key) is not worth building for every hit (D-OPENCLAW-COSINE-TOP). Both
    sorts are stable, so hits equal in every part keep their order, as with `sorted`."""
    keys = [scores(hit) for hit in hits]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    ordered = [hits[n] for n in order]
    start, count = 0, len(order)
    while start < count:
        first = keys[order[start]]
        end = start + 1
        while end < count and keys[order[end]] == first:
            end += 1
        if end - start > 1:
            ordered[start:end] = sorted(ordered[start:end], key=key)
        start = end
    return ordered


_SCORES: Dict[Callable[[Hit], Tuple[Any, ...]], Callable[[Hit], Tuple[Any, ...]]] = {
    _hybrid_key: _hybrid_scores,
}
"""The sort keys whose leading scores `sort_ties` sorts by first: measured faster only for the hybrid order
(400 hits, 0.40 -> 0.31 ms); the keyword keys' paths come from a cache and cost less than a second pass."""


# --- the keyword score --------------------------------------------------------------------------------


def boost_of(query_words: Sequence[str], path: str, text: str, distinct: int, vocab: Optional[str] = None) -> float:
    """OpenClaw's lexical boost, computed in its order (so the sums are the same to the last bit): the
    share of query words present x 0.45, plus their density among the chunk's distinct words x 0.2, plus
    0.18 per query word in the path, plus up to 0.18 for length (UTF-16 units / 160). `distinct` is the
    chunk's count of distinct ranking words and `vocab` those words, both kept in the index: the words
    present are looked up, not searched for in the text (`count_words`)."""
    if vocab:  # (an index row written without it: cut here)
        present = frozenset(vocab.split(" "))  # OpenClaw's test: a query word equal to a word of the text
        overlap = sum(1 for word in query_words if word in present)
    else:
        overlap = count_words(text.lower(), query_words)
    lowered_path = path.lower()
    path_boost = 0.0
    for word in query_words:
        if word in lowered_path:
            path_boost += 0.18
    length = len(text)  # UTF-16 units; only a text under 29 of them earns less than the full 0.18
    if length < 29 and not text.isascii():
        length += sum(1 for char in text if ord(char) > 0xFFFF)
    return (
        (overlap / len(query_words)) * 0.45 + (overlap / max(distinct, 1)) * 0.2 + path_boost + min(length / 160, 0.18)
    )


@functools.lru_cache(maxsize=64)
def _words_pattern(query_words: Tuple[str, ...]) -> Pattern[str]:
    alternatives = "|".join(re.escape(word) for word in sorted(set(query_words), key=len, reverse=True))
    return re.compile(r"(?<!\w)(?:" + alternatives + r")(?!\w)")


def count_words(lowered: str, query_words: Sequence[str]) -> int:
    """How many of `query_words` are ranking words of the (lower-cased) text: one pass of one regular
    expression over the text, whatever the number of words (`has_word` word by word is the same
    answer: a stop word like `we` found inside `were`, `week`, `between` cost a boundary check each
    in Python, and made conversational queries 7x slower than the median)."""
    if not query_words:
        return 0
    present = set(_words_pattern(tuple(query_words)).findall(lowered))
    count = 0
    for word in query_words:
        if word in present or (not lowered.isascii() and has_word(lowered, word)):
            count += 1
    return count


def has_word(lowered: str, word: str) -> bool:
    """Is `word` one of the ranking words of the (lower-cased) text? Found by substring search, then
    checked to start and end at word boundaries."""
    start = lowered.find(word)
    while start >= 0:
        end = start + len(word)
        before = lowered[start - 1] if start else ""
        after = lowered[end] if end < len(lowered) else ""
        if not (before and _is_word_char(before)) and not (after and _is_word_char(after)):
            return True
        start = lowered.find(word, start + 1)
    if not lowered.isascii():
        return word in words(lowered)  # NFC may join what the substring search saw apart
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


# --- decay --------------------------------------------------------------------------------------------

_EPOCH = datetime.date(1970, 1, 1).toordinal()


@functools.lru_cache(maxsize=4096)
def _days_from_epoch(path: str) -> Optional[int]:
    """The day a daily log's name gives (remembered: every hit of a search asks, many for the same files)."""
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


def _exact_tie(content: float) -> float:
    """OpenClaw's `scoreExactPathTieForTemporalDecay`."""
    return (1 + max(0.0, min(1.0, content))) / 2


# --- keyword-only -------------------------------------------------------------------------------------


def select(ranked: Sequence[Hit], max_results: int, min_score: float) -> List[Hit]:
    """The hits at or above `min_score`, else the best ones (score at least 0)."""
    strict = [hit for hit in ranked if hit.score >= min_score]
    return (strict or [hit for hit in ranked if hit.score >= 0])[:max_results]


def keyword_only(hits: Sequence[Hit], now: float, half_life_days: int, max_results: int, min_score: float) -> List[Hit]:
    for hit in hits:
        if hit.exact > 0:
            hit.score = _exact_tie(hit.score if hit.body else 0.0)
        hit.score = decay(hit.score, hit.path, now, half_life_days)
    ranked = sort(hits, keyword_key_decayed)
    for hit in ranked:
        if hit.exact > 0:
            hit.score = 1.0
    return select(ranked, max_results, min_score)


# --- hybrid -------------------------------------------------------------------------------------------


_MMR_WORD = re.compile(r"[a-z0-9_]+")


def mmr_tokens(text: str) -> FrozenSet[str]:
    """OpenClaw's MMR tokens: lower-case ASCII runs, plus CJK characters and their adjacent pairs."""
    lower = text.strip().lower()
    tokens = set(_MMR_WORD.findall(lower))
    if _CJK.search(lower):
        previous = None
        for char in lower:
            if _CJK.match(char):
                if previous is not None:
                    tokens.add(previous + char)
                tokens.add(char)
                previous = char
            else:
                previous = None
    return frozenset(tokens)


def jaccard(left: FrozenSet[str], right: FrozenSet[str]) -> float:
    if not left and not right:
        return 1.0
    if not left or not right:
        return 0.0
    shared = len(left & right)
    return shared / (len(left) + len(right) - shared)


def diversify(hits: Sequence[Hit], lam: float, snippet: Callable[[str], str]) -> List[Hit]:
    """OpenClaw's `mmrRerank`, the whole order (see `diversified`)."""
    return list(diversified(hits, lam, snippet))


def diversified(hits: Sequence[Hit], lam: float, snippet: Callable[[str], str]) -> Iterator[Hit]:
    """OpenClaw's `mmrRerank`, one pick at a time: repeatedly take the hit with the best lam x relevance -
    (1 - lam) x its greatest similarity to a hit taken (relevance: the score scaled over the candidates;
    similarity: Jaccard of the snippets' tokens; ties to the higher score, then the earlier hit).

    The same picks as comparing every candidate with every pick, for the work of the candidates that
    could still win (D-OPENCLAW-MMR): candidates are visited best relevance first and a pick's search
    stops at the first whose lam x relevance (what it could reach with no similarity) is below the best
    value found; a candidate's similarity to earlier picks is caught up only when it is visited, and no
    further than it can still win; a snippet is tokenised when first compared. The caller takes as many
    picks as it needs."""
    count = len(hits)
    if count <= 1:
        yield from hits
        return
    lam = max(0.0, min(1.0, lam))
    if lam == 1:
        yield from sorted(hits, key=lambda hit: -hit.score)
        return
    scores = [hit.score for hit in hits]  # the caller may change a hit's score once it is picked
    top, bottom = max(scores), min(scores)
    spread = top - bottom
    relevance = [1.0 if spread == 0 else (score - bottom) / spread for score in scores]
    masks: List[Optional[Tuple[FrozenSet[str], int]]] = [None] * count  # a snippet's tokens, and how many
    texts: List[str] = [""] * count

    def mask_of(i: int) -> Tuple[FrozenSet[str], int]:
        found = masks[i]
        if found is None:
            text = texts[i] = snippet(hits[i].text)
            tokens = mmr_tokens(text)
            found = masks[i] = (tokens, len(tokens))
        return found

    closest = [0.0] * count
    compared = [0] * count  # picks that closest[i] has been compared with
    picks: List[int] = []
    order = sorted(range(count), key=relevance.__getitem__, reverse=True)  # best first; stable: ties by i
    weight = 1 - lam
    while order:
        best, best_value = -1, -math.inf
        taken = len(picks)
        for i in order:
            ceiling = lam * relevance[i]
            if ceiling < best_value:
                break  # every later candidate is bounded lower still
            near = closest[i]
            value = ceiling - weight * near
            done = compared[i]
            if done < taken and value >= best_value:
                # Catch up with the picks not compared yet: the Jaccard of the token sets (two empty
                # snippets: alike when their texts are), inlined, as this loop is the hybrid search's hottest.
                # (Sets, not bit masks: a search compares a few dozen pairs, and numbering each snippet's
                # tokens cost more than every intersection it saved.)
                left = masks[i] or mask_of(i)
                while done < taken and value >= best_value:
                    j = picks[done]
                    right = masks[j] or mask_of(j)
                    if left[1] and right[1]:
                        shared = len(left[0] & right[0])
                        alike = shared / (left[1] + right[1] - shared)
                    elif not left[1] and not right[1]:
                        alike = float(texts[i].strip().lower() == texts[j].strip().lower())
                    else:
                        alike = 0.0
                    if alike > near:
                        near = alike
                    done += 1
                    value = ceiling - weight * near
                closest[i], compared[i] = near, done
            if done < taken:
                continue  # already below the best: it cannot win this pick
            if (
                best < 0
                or value > best_value
                or (value == best_value and (scores[i] > scores[best] or (scores[i] == scores[best] and i < best)))
            ):
                best, best_value = i, value
        order.remove(best)
        picks.append(best)
        yield hits[best]


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
            continue
        found.text_score, found.body, found.path_score = hit.text_score, hit.body, hit.path_score
        found.text = hit.text  # the same chunk's text: a vector candidate need not read it
        found.score, found.exact, found.keyword = hit.score, max(found.exact, hit.exact), True
    factors: Dict[str, float] = {}
    for hit in merged.values():
        keyword_score = hit.score if hit.text_score > 0 else 0.0 if hit.exact > 0 else hit.path_score
        if not hit.keyword:
            keyword_score = 0.0
        hit.content = vector_weight * hit.vector_score + text_weight * keyword_score
        hit.lexical = hit.score if hit.keyword and hit.body and hit.text_score == 0 else 0.0
        if hit.exact > 0:
            ranking = _exact_tie(hit.content)
        else:
            ranking = hit.lexical if hit.content == 0 else hit.content
        factor = factors.get(hit.path)
        if factor is None:
            factor = factors[hit.path] = decay(1.0, hit.path, now, half_life_days)
        hit.ranking = ranking * factor  # decay(ranking, ...): the same product, its factor once per file
        hit.score = 1.0 if hit.exact > 0 else 0.0 if hit.content == 0 else hit.ranking
    keys = {hit.key for hit in keyword}
    hits = list(merged.values())
    # How many will clear minScore (files named exactly report 1): the order is computed only as far
    # as the choice below reads it (D-OPENCLAW-MMR).
    strict_total = sum(1 for hit in hits if (1.0 if hit.exact > 0 else hit.score) >= min_score)
    ordered = _hybrid_order(hits, lam, snippet)
    if strict_total == 0:  # none clears minScore: the best keyword hits anyway
        if not keyword:
            return []
        return list(itertools.islice((hit for hit in ordered if hit.score >= 0 and hit.key in keys), max_results))
    chosen: List[Hit] = []
    extra: List[Hit] = []  # keyword hits below minScore, to top up with
    seen_extra = set()
    wanted_extra = 0 if not keyword else max(0, max_results - strict_total)
    for hit in ordered:
        if hit.score >= min_score:
            chosen.append(hit)
            if len(chosen) == max_results:
                return chosen
        elif hit.vector_score == 0 and hit.key in keys and hit.key not in seen_extra:
            seen_extra.add(hit.key)
            extra.append(hit)
        if len(chosen) == strict_total and len(extra) >= wanted_extra:
            break
    seen = {hit.key for hit in chosen}
    for hit in extra:
        if len(chosen) == max_results:
            break
        if hit.key not in seen:
            seen.add(hit.key)
            chosen.append(hit)
    return chosen


def _hybrid_order(merged: List[Hit], lam: float, snippet: Callable[[str], str]) -> Iterator[Hit]:
    """Files named exactly first, each tier diversified and reported at 1, then the others diversified."""
    tiers: Dict[int, List[Hit]] = {3: [], 2: [], 1: [], 0: []}
    for hit in merged:
        bucket = tiers.get(hit.exact)
        if bucket is not None:
            bucket.append(hit)
    for level in (3, 2, 1):
        tier = sort(tiers[level], _ranking_key)
        for hit in tier:
            hit.score = hit.ranking
        for hit in diversified(tier, lam, snippet):
            hit.score = 1.0
            yield hit
    yield from diversified(sort(tiers[0], _hybrid_key), lam, snippet)
