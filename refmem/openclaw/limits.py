"""Every bound and default of the OpenClaw tools, in one place.

The defaults are OpenClaw's own (openclaw 2026.9.6, `memory-host-sdk` and `memory-core`), so that an
agent written for OpenClaw meets the same windows, budgets and ranking here; the bounds OpenClaw
does not have (query size, indexed file size, result count) are ours and are written down in
docs/spec-notes.md (D-OPENCLAW-*).
"""

from __future__ import annotations

import dataclasses

from ..limits import Bounds


@dataclasses.dataclass(frozen=True)
class OpenClawLimits(Bounds):
    """Windows, budgets, chunking and ranking constants of memory_get and memory_search."""

    OWNER = "OpenClawLimits"
    FLOOR = 0  # a weight, an overlap or a decay may be 0
    POSITIVE = (
        "get_default_lines",
        "get_max_chars",
        "chunk_tokens",
        "snippet_max_chars",
        "search_max_results",
        "embed_deadline_ms",
        "embed_response_bytes",
        "private_index_cache_kib",
    )

    get_default_lines: int = 120
    """Lines memory_get returns when `lines` is not given (OpenClaw DEFAULT_MEMORY_READ_LINES)."""

    get_max_chars: int = 12_000
    """Characters of file text one memory_get returns, the notice not counted (DEFAULT_MEMORY_READ_MAX_CHARS)."""

    chunk_tokens: int = 400
    """Target chunk size in estimated tokens (D-OPENCLAW-CHUNK)."""

    chunk_overlap_tokens: int = 80
    """Estimated tokens of whole lines carried from one chunk into the next."""

    snippet_max_chars: int = 700
    """Longest snippet of one search result, in characters."""

    search_max_results: int = 6
    """Results memory_search returns when `maxResults` is not given."""

    search_result_cap: int = 50
    """Largest `maxResults` honoured; larger values are clamped (D-OPENCLAW-SEARCH-BOUNDS)."""

    search_min_score_percent: int = 35
    """Default `minScore`, in hundredths (OpenClaw's 0.35)."""

    candidate_cap: int = 200
    """Candidates fetched from either retriever, whatever `maxResults` is (OpenClaw's pool)."""

    fallback_terms: int = 6
    """Most single keywords searched when the whole query finds too little."""

    max_query_chars: int = 4_000
    """Longest query searched; a longer one is refused (D-OPENCLAW-SEARCH-BOUNDS)."""

    max_index_file_bytes: int = 8_388_608
    """Memory files larger than this are not indexed (they stay readable through memory_get)."""

    max_indexed_files: int = 100_000
    """Most memory files indexed; a workspace with more is indexed in path order up to this."""

    vector_weight_percent: int = 70
    """Hybrid weight of the vector score, in hundredths (OpenClaw's 0.7)."""

    text_weight_percent: int = 30
    """Hybrid weight of the keyword score, in hundredths (OpenClaw's 0.3)."""

    mmr_lambda_percent: int = 70
    """Maximal-marginal-relevance trade-off in hybrid mode, in hundredths (OpenClaw's 0.7)."""

    half_life_days: int = 30
    """Temporal decay of dated daily logs (`memory/.../YYYY-MM-DD.md`)."""

    scan_interval_ms: int = 2_000
    """Longest time between two full scans of the workspace by one handler: an edit another program
    makes in place (not by a rename) is seen by the first search after it (D-OPENCLAW-INDEX-FRESH)."""

    max_log_bytes: int = 1_048_576
    """Largest daily log an append may produce, in UTF-8 bytes."""

    embed_deadline_ms: int = 3_000
    """Longest time one search waits for an HTTP embeddings endpoint: every request and every try of it,
    for new chunks and for the query. Past it the search answers from keywords, says so in `warning`,
    and the chunks not embedded yet are embedded by later searches (D-OPENCLAW-EMBED-DEADLINE)."""

    embed_retry_ms: int = 30_000
    """After an embeddings endpoint could not be reached, gave no answer in time or kept failing (429,
    5xx), searches do not ask it again for this long: they answer from keywords at once and say so;
    the first search after it tries again (D-OPENCLAW-EMBED-OUTAGE)."""

    embed_response_bytes: int = 16_777_216
    """Largest answer read from an embeddings endpoint; a larger one is refused unread past this
    (64 texts of 3,072 dimensions take about 5 MB of JSON) (D-OPENCLAW-EMBED-SIZE)."""

    private_index_cache_kib: int = 8_192
    """Most memory a private search index keeps in its page cache (the index of a database store, of an
    allow-listed or read-only workspace, or `index="memory"`); the rest of it lives in SQLite's
    anonymous temporary file, which no other process can open by name and which is freed on close
    (D-OPENCLAW-PRIVATE-INDEX)."""

    @property
    def min_score(self) -> float:
        return self.search_min_score_percent / 100

    @property
    def vector_weight(self) -> float:
        return self.vector_weight_percent / 100

    @property
    def text_weight(self) -> float:
        return self.text_weight_percent / 100

    @property
    def mmr_lambda(self) -> float:
        return self.mmr_lambda_percent / 100


DEFAULT_OPENCLAW_LIMITS = OpenClawLimits()
