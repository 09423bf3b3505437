"""The diversifying step of hybrid search (D-OPENCLAW-MMR): the same order as comparing every candidate
with every pick (OpenClaw's `mmrRerank`, written plainly here), for work counted in similarities."""

from __future__ import annotations

import math
import random
from typing import AbstractSet, Any, FrozenSet, List

import pytest

from refmem.openclaw import rank
from refmem.openclaw.rank import Hit


def plain_mmr(hits: List[Hit], lam: float) -> List[Hit]:
    """Every candidate against every pick, as OpenClaw does it."""
    if len(hits) <= 1:
        return list(hits)
    if lam == 1:
        return sorted(hits, key=lambda hit: -hit.score)
    tokens = [rank.mmr_tokens(hit.text) for hit in hits]
    top, bottom = max(hit.score for hit in hits), min(hit.score for hit in hits)
    spread = top - bottom
    relevance = [1.0 if spread == 0 else (hit.score - bottom) / spread for hit in hits]
    closest = [0.0] * len(hits)
    left = list(range(len(hits)))
    chosen = []
    while left:
        best, best_value = -1, -math.inf
        for i in left:
            value = lam * relevance[i] - (1 - lam) * closest[i]
            if value > best_value or (value == best_value and hits[i].score > hits[best].score):
                best, best_value = i, value
        left.remove(best)
        chosen.append(hits[best])
        for i in left:
            if not tokens[i] and not tokens[best]:
                similarity = float(hits[i].text.strip().lower() == hits[best].text.strip().lower())
            else:
                similarity = rank.jaccard(tokens[i], tokens[best])
            closest[i] = max(closest[i], similarity)
    return chosen


def candidates(rng: random.Random, count: int, vocabulary: int, scores: int) -> List[Hit]:
    words = [f"w{n}" for n in range(vocabulary)]
    hits = []
    for n in range(count):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) or rng.choice(["", "!!", "?"])
        hit = Hit(n, f"memory/{n}.md", 1, 1, text)
        hit.score = rng.randint(0, scores) / scores
        hits.append(hit)
    return sorted(hits, key=lambda hit: -hit.score)


@pytest.mark.parametrize("seed", range(60))
def test_the_same_order_as_every_candidate_against_every_pick(seed: int) -> None:
    rng = random.Random(seed)
    hits = candidates(rng, rng.randint(0, 40), rng.choice([3, 8, 40]), rng.choice([1, 3, 50, 1000]))
    lam = rng.choice([0.0, 0.3, 0.7, 0.7, 1.0])
    ours = [hit.chunk for hit in rank.diversify(hits, lam, lambda text: text)]
    assert ours == [hit.chunk for hit in plain_mmr(hits, lam)]


def test_the_first_picks_compare_few_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    hits = candidates(rng, 400, 2000, 10_000)
    expected = [hit.chunk for hit in plain_mmr(hits, 0.7)[:6]]
    calls = {"jaccard": 0, "snippets": 0}
    tokens_of = rank.mmr_tokens

    class CountedTokens(frozenset):  # type: ignore[type-arg]
        """A snippet's tokens; the inlined Jaccard intersects two of them once per comparison."""

        def __and__(self, other: AbstractSet[Any]) -> FrozenSet[Any]:
            calls["jaccard"] += 1
            return frozenset.__and__(self, other)

    def snippet(text: str) -> str:
        calls["snippets"] += 1
        return text

    monkeypatch.setattr(rank, "mmr_tokens", lambda text: CountedTokens(tokens_of(text)))
    picks = rank.diversified(hits, 0.7, snippet)
    first = [next(picks).chunk for _ in range(6)]
    assert first == expected
    # Every candidate against every pick would be 6 x 400 similarities and 400 snippets for 6 picks
    # (and 79,800 for the whole order, which OpenClaw computes whatever it returns).
    assert 0 < calls["jaccard"] < 6 * 400 // 2
    assert calls["snippets"] < 400 // 2


def plain_select(ordered: List[Hit], keyword: List[Hit], max_results: int, min_score: float) -> List[Hit]:
    """OpenClaw's `selectHybridSearchResults` over the whole order, as it is written."""
    keys = {hit.key for hit in keyword}
    strict = [hit for hit in ordered if hit.score >= min_score]
    chosen = strict[:max_results]
    if not keyword or len(chosen) == max_results:
        return chosen
    if not strict:
        return [hit for hit in ordered if hit.score >= 0 and hit.key in keys][:max_results]
    seen = {hit.key for hit in chosen}
    for hit in ordered:
        if len(chosen) == max_results:
            break
        if hit.score < min_score and hit.vector_score == 0 and hit.key in keys and hit.key not in seen:
            seen.add(hit.key)
            chosen.append(hit)
    return chosen


def retrievers(rng: random.Random) -> Any:
    words = [f"w{n}" for n in range(rng.choice([5, 30]))]
    made: List[List[Hit]] = [[], []]
    for n in range(rng.randint(0, 30)):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        found_by = rng.choice([(0,), (1,), (0, 1)])
        exact = rng.choice([0, 0, 0, 0, 1, 2, 3])
        for side in found_by:
            hit = Hit(n, f"memory/{n}.md", 1, 1, text, exact=exact)
            if side == 0:
                hit.keyword = True
                hit.body = rng.random() < 0.8
                hit.text_score = rng.choice([0.0, rng.random()])
                hit.score = rng.random()
                hit.path_score = rng.choice([0.0, rng.random()])
            else:
                hit.vector_score = rng.random()
            made[side].append(hit)
    return made


@pytest.mark.parametrize("seed", range(80))
def test_hybrid_choice_reads_only_what_it_needs_and_chooses_the_same(seed: int) -> None:
    rng = random.Random(seed)
    keyword, vector = retrievers(rng)
    copies = [[Hit(**vars(hit)) for hit in side] for side in (keyword, vector)]
    lam, max_results = rng.choice([0.0, 0.7, 1.0]), rng.randint(1, 8)
    min_score = rng.choice([0.0, 0.2, 0.35, 0.6, 1.5])
    ours = rank.hybrid(keyword, vector, (0.7, 0.3), 0.0, 30, lam, lambda text: text, max_results, min_score)
    # The plain way: the whole order, then the choice.
    whole: List[Hit] = []
    calls: List[List[Hit]] = []

    def everything(hits: Any, lam_: float, snippet: Any) -> Any:
        calls.append(list(hits))
        return iter(plain_mmr(list(hits), lam_))

    original = rank.diversified
    rank.diversified = everything  # type: ignore[assignment]
    try:
        keys = {hit.key for hit in copies[0]}
        # rank.hybrid's own merge and order, read to the end
        merged = rank.hybrid(copies[0], copies[1], (0.7, 0.3), 0.0, 30, lam, lambda text: text, 10_000, -1.0)
        whole = merged
    finally:
        rank.diversified = original  # type: ignore[assignment]
    expected = plain_select(whole, [hit for hit in whole if hit.key in keys], max_results, min_score)
    assert [hit.key for hit in ours] == [hit.key for hit in expected]
