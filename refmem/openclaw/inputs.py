"""The tool inputs the model sends to memory_get and memory_search, checked (D-OPENCLAW-INPUT).

OpenClaw's rules where they are sound: `path` and `query` are non-empty strings once trimmed,
`from`, `lines` and `maxResults` positive integers, `minScore` a finite number, `null` means
absent, unknown fields are ignored, `maxResults` / `minScore` may also be spelled `max_results` /
`min_score`. Stricter than OpenClaw: numbers must be JSON numbers (OpenClaw also reads "5" and
5.0), and `corpus` may only be `memory` or `all` (there is no wiki or session corpus here).
Each function returns the parsed input or a `Refusal` naming a problem in `messages.PROBLEMS`. Pure.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple, Optional, Union

from .limits import OpenClawLimits
from .messages import Refusal, refuse

CORPORA = ("memory", "all")


class GetInput(NamedTuple):
    path: str
    start: int
    lines: int


class SearchInput(NamedTuple):
    query: str
    max_results: int
    min_score: float
    min_score_given: bool = False  # the model sent minScore (else a calibrated default may apply)


def _value(params: Mapping[str, Any], key: str, snake: Optional[str] = None) -> Any:
    value = params.get(key)
    if value is None and snake is not None:
        value = params.get(snake)
    return value


MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer a JSON number holds exactly; OpenClaw refuses larger ones (D-OPENCLAW-INPUT)."""


def _positive_integer(value: Any) -> Optional[int]:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SAFE_INTEGER:
        return value
    return None


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _corpus_ok(params: Mapping[str, Any]) -> bool:
    corpus = params.get("corpus")
    return corpus is None or corpus in CORPORA


def get_input(params: Any, limits: OpenClawLimits) -> Union[GetInput, Refusal]:
    if not isinstance(params, dict):
        return refuse("input_object")
    path = params.get("path")
    if not isinstance(path, str) or not path.strip():
        return refuse("path_required")
    raw_from, raw_lines = params.get("from"), params.get("lines")
    start = 1 if raw_from is None else _positive_integer(raw_from)
    if start is None:
        return refuse("from_integer")
    count = limits.get_default_lines if raw_lines is None else _positive_integer(raw_lines)
    if count is None:
        return refuse("lines_integer")
    if not _corpus_ok(params):
        return refuse("corpus")
    return GetInput(path, start, count)


def search_input(params: Any, limits: OpenClawLimits) -> Union[SearchInput, Refusal]:
    if not isinstance(params, dict):
        return refuse("input_object")
    query = params.get("query")
    if not isinstance(query, str) or not query.strip():
        return refuse("query_required")
    if not _is_unicode(query):
        return refuse("not_unicode", name="query")
    query = query.strip()
    if len(query) > limits.max_query_chars:
        return refuse("query_too_long", n=len(query), max=limits.max_query_chars)
    raw_max = _value(params, "maxResults", "max_results")
    wanted = limits.search_max_results if raw_max is None else _positive_integer(raw_max)
    if wanted is None:
        return refuse("max_results_integer")
    raw_min = _value(params, "minScore", "min_score")
    if raw_min is None:
        min_score = limits.min_score
    elif isinstance(raw_min, (int, float)) and not isinstance(raw_min, bool) and math.isfinite(raw_min):
        min_score = float(raw_min)
    else:
        return refuse("min_score_number")
    if not _corpus_ok(params):
        return refuse("corpus")
    return SearchInput(query, min(wanted, limits.search_result_cap), min_score, raw_min is not None)
