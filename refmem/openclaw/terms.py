"""Words: how text and queries are cut into terms for keyword search, and which query words count.

Two cuts, each matched to what uses it (D-OPENCLAW-SEARCH-TERMS):

* `runs` and `terms` follow SQLite FTS5's `unicode61` tokenizer, which builds the keyword index:
  letters, digits and private-use characters make up a term, everything else separates terms.
  `runs` leaves the case alone (FTS5 folds a quoted run itself, exactly as it folded the index);
  `terms` folds case and strips Latin diacritics as `unicode61` does, for the pure-Python index
  used where FTS5 is missing. For scripts beyond Latin, Greek and Cyrillic the two may differ on
  rare characters (FTS5 uses Unicode 6.1 tables, Python its own).
* `words` is OpenClaw's ranking cut (`normalizeSearchTokens`): lower-cased runs of letters, digits
  and `_`, used for the lexical boost and for diversity.

`keywords` picks the single words searched when the whole query finds too little: OpenClaw's
rule (no stop words, no words of one or two ASCII letters, no bare numbers) with our own short
English stop-word list. Pure functions.
"""

from __future__ import annotations

import re
import unicodedata
from typing import FrozenSet, List

_WORD = re.compile(r"\w+")
STOP_WORDS: FrozenSet[str] = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each else for from further had has
    have having he her here hers him his how i if in into is it its itself just me more most my no nor
    not now of off on once only or other our ours out over own same she should so some such than that
    the their theirs them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself""".split()
)


def _is_term_char(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] in "LN" or category in ("Co", "Cn") or (category == "Mn" and "\u0300" <= char <= "\u036f")


def runs(text: str) -> List[str]:
    """Maximal runs of term characters, as they are written."""
    found: List[str] = []
    start = -1
    for index, char in enumerate(text):
        if char.isascii():
            inside = char.isalnum()
        else:
            inside = _is_term_char(char)
        if inside and start < 0:
            start = index
        elif not inside and start >= 0:
            found.append(text[start:index])
            start = -1
    if start >= 0:
        found.append(text[start:])
    return found


def _strip_diacritic(char: str) -> str:
    """A Latin letter with combining marks as its base letter; anything else as it is."""
    parts = unicodedata.normalize("NFD", char)
    if len(parts) > 1 and parts[0].isascii() and all("\u0300" <= mark <= "\u036f" for mark in parts[1:]):
        return parts[0]
    return char


def fold(run: str) -> str:
    """Lower case without the diacritics of Latin letters (`unicode61`'s `remove_diacritics 1`,
    which leaves other scripts alone: Cyrillic `ё` stays)."""
    lowered = run.lower()
    if lowered.isascii():
        return lowered
    return "".join(_strip_diacritic(char) for char in lowered if not "\u0300" <= char <= "\u036f")


def terms(text: str) -> List[str]:
    """The folded terms of `text`, in order, repeats kept (the pure-Python index's tokenizer)."""
    if text.isascii():
        return re.findall(r"[a-z0-9]+", text.lower())
    return [term for term in (fold(run) for run in runs(text)) if term]


def words(text: str) -> List[str]:
    """OpenClaw's ranking words: NFC, lower case, runs of letters, digits and `_`."""
    return _WORD.findall(unicodedata.normalize("NFC", text).lower())


def _is_keyword(word: str) -> bool:
    if word in STOP_WORDS or word.isdigit():
        return False
    return not (word.isascii() and word.isalpha() and len(word) < 3)


def keywords(query: str) -> List[str]:
    """The distinct words of `query` worth a search of their own, in order."""
    seen: List[str] = []
    for word in words(query):
        if _is_keyword(word) and word not in seen:
            seen.append(word)
    return seen
