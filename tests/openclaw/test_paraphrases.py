"""The labelled paraphrase set of bench/paraphrases.py is what it says: at least 50 questions, each sharing no
word (letters and digits, without case) with its note or its note's path, each note a path of its own."""

from __future__ import annotations

import re

from bench.paraphrases import PARAPHRASES


def _words(text: str) -> set:
    return set(re.findall(r"\w+", text.lower()))


def test_the_set_is_large_enough_and_its_paths_distinct() -> None:
    assert len(PARAPHRASES) >= 50
    assert len({item.path for item in PARAPHRASES}) == len(PARAPHRASES)
    assert all(item.path.startswith("memory/") and item.path.endswith(".md") for item in PARAPHRASES)


def test_no_question_shares_a_word_with_its_note() -> None:
    shared = {item.path: _words(item.note + " " + item.path) & _words(item.question) for item in PARAPHRASES}
    assert {path: words for path, words in shared.items() if words} == {}
