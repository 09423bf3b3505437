"""The documentation's sentences that `doc` cases cite (conformance/documentation.json), by stable ID.

A `doc` case names the sentence it relies on (`cite`), so that every documented failure in a report shows
the sentence, and a reader can judge whether the documentation really says it. Each sentence also says how
strongly the documentation puts it (`strength`): a `must` case can only rest on a sentence that says MUST or
states the tool's behaviour; a safeguard the documentation only suggests ("Consider these protections") or
advises is a `should` case, shown but never gating under the `documented` profile.
"""

from __future__ import annotations

import functools
import json
import pathlib
from typing import Any, Dict, FrozenSet

SENTENCES_FILE = pathlib.Path(__file__).resolve().parent / "documentation.json"

STRENGTHS = ("must", "states", "should", "consider", "permits")
MUST_STRENGTHS: FrozenSet[str] = frozenset({"must", "states"})
"""The strengths a `must` case may cite: the documentation's MUST, and what it states the tool does."""
SUGGESTED_STRENGTHS: FrozenSet[str] = frozenset({"should", "consider"})
"""Safeguards the documentation advises or suggests: their cases are counted apart from its wording."""


@functools.lru_cache(maxsize=1)
def sentences() -> Dict[str, Dict[str, Any]]:
    """ID -> {"section": ..., "strength": ..., "quote": ..., and optionally "tested_by": [case IDs]}."""
    data = json.loads(SENTENCES_FILE.read_text(encoding="utf-8"))
    return {key: dict(value) for key, value in data["sentences"].items()}


def quote(cite: str) -> str:
    """`section: "quote"` for a cite ID; empty when the ID is unknown or empty."""
    sentence = sentences().get(cite)
    return f'{sentence["section"]}: "{sentence["quote"]}"' if sentence else ""


def strength(cite: str) -> str:
    """How strongly the documentation puts the sentence `cite`; empty when the ID is unknown or empty."""
    return str(sentences().get(cite, {}).get("strength", ""))


def may_be_must(cite: str) -> bool:
    """Whether a `must` case may rest on the sentence `cite`."""
    return strength(cite) in MUST_STRENGTHS


def suggested(cite: str) -> bool:
    """Whether `cite` is a safeguard the documentation suggests or advises rather than a behaviour it states."""
    return strength(cite) in SUGGESTED_STRENGTHS
