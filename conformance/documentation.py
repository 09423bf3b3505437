"""The documentation's sentences that `doc` cases cite (conformance/documentation.json), by stable ID.

A `doc` case names the sentence it relies on (`cite`), so that every documented failure in a report shows
the sentence, and a reader can judge whether the documentation really says it.
"""

from __future__ import annotations

import functools
import json
import pathlib
from typing import Dict

SENTENCES_FILE = pathlib.Path(__file__).resolve().parent / "documentation.json"


@functools.lru_cache(maxsize=1)
def sentences() -> Dict[str, Dict[str, str]]:
    """ID -> {"section": ..., "quote": ...}."""
    data = json.loads(SENTENCES_FILE.read_text(encoding="utf-8"))
    return {key: dict(value) for key, value in data["sentences"].items()}


def quote(cite: str) -> str:
    """`section: "quote"` for a cite ID; empty when the ID is unknown or empty."""
    sentence = sentences().get(cite)
    return f'{sentence["section"]}: "{sentence["quote"]}"' if sentence else ""
