"""Hybrid search with the packaged offline model finds paraphrases at its defaults (D-OPENCLAW-EMBED-CALIBRATION):
the labelled set of bench/paraphrases.py, hidden among a generated workspace, asked with no minScore. The model is
deterministic: the counts are the same on every machine."""

from __future__ import annotations

import pathlib

import pytest

from bench.hybrid import recall, workspace
from bench.paraphrases import PARAPHRASES
from refmem.openclaw import OpenClawMemory


@pytest.mark.slow
def test_the_offline_model_finds_paraphrases_at_its_defaults(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("wordllama")
    from refmem.openclaw.embeddings import WordLlamaEmbeddings

    folder = tmp_path / "memories"
    folder.mkdir()
    workspace(folder, 150)
    questions = [(item.question, item.path) for item in PARAPHRASES]
    keyword = recall(OpenClawMemory(folder, index="memory"), questions, None)
    hybrid_memory = OpenClawMemory(folder, embed=WordLlamaEmbeddings(), index="memory")
    hybrid = recall(hybrid_memory, questions, None)
    at_openclaws_floor = recall(hybrid_memory, questions, 0.35)
    print(f"recall@5: keyword-only {keyword:.2f}, hybrid {hybrid:.2f}, hybrid at 0.35 {at_openclaws_floor:.2f}")
    assert keyword <= 0.1  # the questions share no word with their notes
    assert at_openclaws_floor <= 0.1  # what the calibration is for
    assert hybrid >= 0.5 and hybrid > keyword + 0.4
