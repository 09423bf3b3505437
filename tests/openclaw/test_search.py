"""memory_search: chunking, terms, BM25, incremental indexing, ranking, results memory_get can open."""

from __future__ import annotations

import json
import math
import os
import pathlib
import sqlite3
import zlib
from typing import Any, Dict, List, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from refmem.openclaw import OpenClawLimits, OpenClawMemory, bm25, chunks, rank, terms
from refmem.openclaw.disk import Disk
from refmem.openclaw.index import Index

from .openclaw_support import CANARY, NOW, paths_of, write


def workspace(case: pathlib.Path, **kwargs: Any) -> OpenClawMemory:
    kwargs.setdefault("clock", lambda: NOW)
    return OpenClawMemory(case / "memories", **kwargs)


# --- chunking -----------------------------------------------------------------------------------


def test_token_estimate() -> None:
    assert chunks.estimate_tokens("abcd") == 1
    assert chunks.estimate_tokens("abcde") == 2
    assert chunks.estimate_tokens("之前讨论") == 4  # a wide character is a token
    assert chunks.weight("é") == 1


def test_small_file_is_one_chunk() -> None:
    # OpenClaw's lines: the text split at newlines, the empty line after the final one included.
    assert chunks.chunk_text("a\nb\n", 400, 80) == [chunks.Chunk(1, 3, "a\nb\n")]


def test_curated_files_are_cut_per_entry() -> None:
    text = "# Prefs\n- green\n- coffee\n  black\n## Work\nplain\n"
    assert chunks.chunk_text(text, 400, 80, per_entry=True) == [
        chunks.Chunk(1, 1, "# Prefs"),
        chunks.Chunk(2, 2, "- green"),
        chunks.Chunk(3, 4, "- coffee\n  black"),
        chunks.Chunk(5, 7, "## Work\nplain\n"),
    ]


def test_blank_chunks_are_dropped() -> None:
    assert chunks.chunk_text("\n\n- a\n", 400, 80, per_entry=True) == [chunks.Chunk(3, 4, "- a\n")]


def test_chunks_overlap_by_whole_lines() -> None:
    text = "".join(f"{n:04d}\n" for n in range(1, 200))  # 5 characters a line with its newline
    found = chunks.chunk_text(text, 10, 2)  # 40 characters a chunk, 8 of overlap
    assert all(len(piece.text) <= 40 for piece in found)
    for before, after in zip(found, found[1:]):
        assert after.start_line == before.end_line  # one 5-character line fits in the 8 of overlap
        assert after.text.startswith(before.text.rsplit("\n", 1)[-1])
    assert found[-1].end_line == 200  # the empty line after the final newline


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab \n-#之")), max_size=600),
    tokens=st.integers(1, 30),
    overlap=st.integers(0, 10),
    per_entry=st.booleans(),
)
def test_every_chunk_is_within_its_lines(text: str, tokens: int, overlap: int, per_entry: bool) -> None:
    lines = text.split("\n")
    found = chunks.chunk_text(text, tokens, overlap, per_entry)
    limit = max(chunks.MIN_CHUNK_CHARS, tokens * chunks.CHARS_PER_TOKEN)
    covered = set()
    for piece in found:
        assert 1 <= piece.start_line <= piece.end_line <= len(lines)
        assert chunks.weight(piece.text) <= limit
        # OpenClaw joins a chunk's pieces with newlines, also the pieces of one long line
        assert piece.text.replace("\n", "") in "".join(lines[piece.start_line - 1 : piece.end_line])
        covered.update(range(piece.start_line, piece.end_line + 1))
    assert {n for n, line in enumerate(lines, 1) if line.strip()} <= covered


# --- terms and BM25 -------------------------------------------------------------------------------


def test_terms_follow_unicode61() -> None:
    assert terms.terms("Café au lait, CAFÉ! foo_bar 42") == ["cafe", "au", "lait", "cafe", "foo", "bar", "42"]
    assert terms.runs("Hello, wörld_x") == ["Hello", "wörld", "x"]
    assert terms.keywords("what did we decide about the billing migration") == ["decide", "billing", "migration"]


def test_python_tokenizer_matches_fts5_on_common_scripts() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    samples = [
        "Plain ASCII words, numbers 1234 and under_scores",
        "Café crème brûlée naïve façade Ångström Øre",
        "Привет, мир! Ёлка и ЙОГУРТ",
        "Ελληνικά κείμενα ΑΒΓ",
        "日本語のテキスト 中文文本 한국어",
        "tabs\tand\nnewlines — dashes – quotes “x” ‘y’",
    ]
    for row, sample in enumerate(samples):
        conn.execute("INSERT INTO t(rowid, x) VALUES (?, ?)", (row, sample))
    for row, sample in enumerate(samples):
        fts = [term for (term,) in conn.execute("SELECT term FROM v WHERE doc = ? ORDER BY offset", (row,))]
        assert terms.terms(sample) == fts, sample


def fts5_ranks(docs: Sequence[str], query: Sequence[str]) -> Dict[int, float]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61')")
    for row, doc in enumerate(docs):
        conn.execute("INSERT INTO t(rowid, x) VALUES (?, ?)", (row, doc))
    expression = " AND ".join(f'"{term}"' for term in query)
    return {row: rank for row, rank in conn.execute("SELECT rowid, rank FROM t WHERE t MATCH ?", (expression,))}


@settings(max_examples=150, deadline=None)
@given(
    docs=st.lists(
        st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "eps"]), max_size=12), min_size=1, max_size=12
    ),
    query=st.lists(st.sampled_from(["alpha", "beta", "gamma"]), min_size=1, max_size=2, unique=True),
)
def test_python_bm25_equals_fts5(docs: List[List[str]], query: List[str]) -> None:
    texts = [" ".join(doc) for doc in docs]
    postings = []
    for term in query:
        postings.append({row: doc.count(term) for row, doc in enumerate(docs) if term in doc})
    lengths = {row: len(doc) for row, doc in enumerate(docs)}
    average = sum(lengths.values()) / len(docs)
    ours = bm25.ranks(postings, lengths, len(docs), average)
    theirs = fts5_ranks(texts, query)
    assert ours.keys() == theirs.keys()
    for row in ours:
        assert math.isclose(ours[row], theirs[row], rel_tol=1e-9, abs_tol=1e-12)


def test_rank_to_score() -> None:
    assert bm25.rank_to_score(-1.0) == 0.5
    assert bm25.rank_to_score(0.0) == 1.0
    assert bm25.rank_to_score(float("nan")) == 0.001


# --- search end to end ----------------------------------------------------------------------------


def seed(case: pathlib.Path) -> None:
    write(case, "MEMORY.md", "# Prefs\n- favourite colour is green\n- coffee black, no sugar\n")
    write(case, "USER.md", "- The user is called Sam\n")
    write(case, "memory/2026-11-20.md", "Met Alice about the billing migration.\nDecided to use Postgres.\n")
    write(case, "memory/projects/infra.md", "# Infra\nThe billing service runs on Kubernetes.\n")


def test_search_finds_and_ranks(case: pathlib.Path) -> None:
    seed(case)
    result = workspace(case).memory_search("billing migration")
    assert result["mode"] == "keyword-only" and result["provider"] == "none"
    assert paths_of(result)[0] == "memory/2026-11-20.md"
    top = result["results"][0]
    assert top["startLine"] == 1 and top["endLine"] == 3 and top["citation"] == "memory/2026-11-20.md#L1-L3"
    assert top["source"] == "memory" and 0 < top["score"] <= 1


def test_conversational_query_falls_back_to_keywords(case: pathlib.Path) -> None:
    seed(case)
    result = workspace(case).memory_search("what did we decide about the billing service")
    assert set(paths_of(result)) >= {"memory/2026-11-20.md", "memory/projects/infra.md"}


def test_nothing_found(case: pathlib.Path) -> None:
    seed(case)
    assert workspace(case).memory_search("xylophone")["results"] == []


def test_results_open_with_memory_get(case: pathlib.Path) -> None:
    seed(case)
    write(case, "memory/long.md", "".join(f"entry {n} about billing and more words here\n" for n in range(400)))
    memory = workspace(case)
    result = memory.memory_search("billing", max_results=20, min_score=0)
    assert len(result["results"]) > 3
    for hit in result["results"]:
        opened = memory.memory_get(hit["path"], hit["startLine"], hit["endLine"] - hit["startLine"] + 1)
        assert opened["status"] == "ok"
        assert hit["snippet"].rstrip("\n") in opened["text"]


def test_snippets_are_bounded(case: pathlib.Path) -> None:
    write(case, "memory/wide.md", "billing " * 5000 + "\n")
    result = workspace(case).memory_search("billing")
    assert result["results"] and all(len(hit["snippet"]) <= 700 for hit in result["results"])


def test_max_results_and_min_score(case: pathlib.Path) -> None:
    for n in range(30):
        write(case, f"memory/note-{n:02d}.md", f"apple note number {n}\n")
    memory = workspace(case)
    assert len(memory.memory_search("apple")["results"]) == 6
    assert len(memory.memory_search("apple", max_results=3)["results"]) == 3
    assert len(memory.memory_search("apple", max_results=1000)["results"]) == 30  # cap 50, 30 exist
    # Nothing reaches a min score of 2: OpenClaw then returns the best ones anyway.
    assert len(memory.memory_search("apple", max_results=2, min_score=2)["results"]) == 2


def test_daily_logs_decay_with_age(case: pathlib.Path) -> None:
    write(case, "memory/2026-11-22.md", "kiwi\n")
    write(case, "memory/2026-08-01.md", "kiwi\n")
    write(case, "memory/kiwi-notes.md", "kiwi\n")
    result = workspace(case).memory_search("kiwi", min_score=0)
    scores = {hit["path"]: hit["score"] for hit in result["results"]}
    assert scores["memory/kiwi-notes.md"] > scores["memory/2026-11-22.md"] > scores["memory/2026-08-01.md"]
    age = 114  # days from 2026-08-01 to 2026-11-23
    assert math.isclose(
        scores["memory/2026-08-01.md"] / scores["memory/2026-11-22.md"], 0.5 ** ((age - 1) / 30), rel_tol=1e-6
    )


def test_bad_queries(case: pathlib.Path) -> None:
    memory = workspace(case)
    assert memory.search({"query": "  "})["error"] == "query required"
    assert memory.search({})["code"] == "INVALID_INPUT"
    assert memory.search("x")["error"] == "the tool input must be a JSON object"
    assert memory.search({"query": "a", "maxResults": 0})["error"] == "maxResults must be a positive integer"
    assert memory.search({"query": "a", "minScore": "high"})["error"] == "minScore must be a finite number"
    assert memory.search({"query": "a", "min_score": float("nan")})["error"] == "minScore must be a finite number"
    assert memory.search({"query": "x" * 5000})["error"] == "query is 5000 characters long, over the limit of 4000"
    assert memory.search({"query": "a\ud800"})["error"] == "query is not valid Unicode text"
    assert memory.search({"query": "a", "max_results": 2, "corpus": "memory"})["results"] == []


def test_query_syntax_is_not_fts_syntax(case: pathlib.Path) -> None:
    write(case, "memory/a.md", 'NEAR AND OR NOT "quoted" col:umn *star\n')
    memory = workspace(case)
    for query in ['"', "NEAR(", "col:umn", "*", "AND OR NOT", "a OR b", '""quoted"']:
        result = memory.memory_search(query)
        assert "error" not in result, query


# --- nothing outside the memory files is ever indexed ---------------------------------------------


def test_only_memory_files_are_indexed(case: pathlib.Path) -> None:
    secret = f"{CANARY} zebra"
    root = case / "memories"
    write(case, "notes.md", secret)
    write(case, "memory.md", secret)
    write(case, "dreams.md", secret)
    write(case, "other/x.md", secret)
    write(case, "memory/x.txt", secret)
    write(case, "memory/.openclaw-repair/x.md", secret)
    os.symlink(case / "outside" / "secret.md", root / "memory" / "link.md")
    os.symlink(case / "outside", root / "memory" / "dirlink")
    os.symlink(case / "outside" / "secret.md", root / "USER.md")
    os.link(case / "outside" / "secret.md", root / "memory" / "hard.md")
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "memory" / "fifo.md")
    write(case, "memory/ok.md", "zebra inside\n")
    result = workspace(case).memory_search("zebra", max_results=50, min_score=0)
    assert paths_of(result) == ["memory/ok.md"]
    assert CANARY not in json.dumps(result)


def test_a_symlinked_memory_folder_is_not_entered(case: pathlib.Path) -> None:
    root = case / "memories"
    os.rmdir(root / "memory")
    os.symlink(case / "outside", root / "memory")
    result = workspace(case).memory_search("zebra", min_score=0)
    assert result["results"] == []


def test_not_utf8_files_are_skipped(case: pathlib.Path) -> None:
    (case / "memories" / "memory" / "bad.md").write_bytes(b"zebra \xff\n")
    write(case, "memory/good.md", "zebra\n")
    assert paths_of(workspace(case).memory_search("zebra", min_score=0)) == ["memory/good.md"]


# --- incremental indexing -------------------------------------------------------------------------


class CountingDisk(Disk):
    reads: List[str] = []

    def read_file(self, parts: Any, limit: int) -> Any:
        CountingDisk.reads.append("/".join(parts))
        return super().read_file(parts, limit)


def test_one_changed_file_is_read_again_alone(case: pathlib.Path) -> None:
    for n in range(20):
        write(case, f"memory/n{n}.md", f"note {n} banana\n")
    memory = workspace(case)
    memory.disk = CountingDisk(memory.root)
    CountingDisk.reads = []
    assert memory.refresh().added == 20 and len(CountingDisk.reads) == 20
    CountingDisk.reads = []
    assert memory.refresh() == (0, 0, 0, 0) and CountingDisk.reads == []
    write(case, "memory/n7.md", "note 7 cherry now\n")
    os.utime(case / "memories" / "memory" / "n7.md", ns=(1, 1))
    assert memory.refresh().changed == 1 and CountingDisk.reads == ["memory/n7.md"]
    assert paths_of(memory.memory_search("cherry")) == ["memory/n7.md"]
    assert "memory/n7.md" not in paths_of(memory.memory_search("banana", max_results=50))
    CountingDisk.reads = []
    os.unlink(case / "memories" / "memory" / "n3.md")
    assert memory.refresh().removed == 1 and CountingDisk.reads == []
    assert "memory/n3.md" not in paths_of(memory.memory_search("banana", max_results=50))


def test_index_survives_a_new_handler(case: pathlib.Path) -> None:
    seed(case)
    workspace(case).refresh()
    assert (case / "memories" / ".refmem" / "openclaw-index.sqlite").is_file()
    again = workspace(case)
    again.disk = CountingDisk(again.root)
    CountingDisk.reads = []
    assert again.refresh() == (0, 0, 0, 0) and CountingDisk.reads == []
    assert paths_of(again.memory_search("Postgres")) == ["memory/2026-11-20.md"]


def test_changed_chunking_rebuilds(case: pathlib.Path) -> None:
    seed(case)
    workspace(case).refresh()
    again = workspace(case, limits=OpenClawLimits(chunk_tokens=100))
    assert again.refresh().added == 4


def test_python_index_gives_the_fts5_order(case: pathlib.Path) -> None:
    seed(case)
    for n in range(15):
        write(case, f"memory/extra-{n}.md", "billing " * (n % 4 + 1) + f"service note {n}\n")
    fts = workspace(case, index="memory")
    py = workspace(case, index="memory")
    py._index = Index.in_memory({"format": "x"}, None, mode="python")
    for query in ["billing", "billing service", "postgres", "green coffee", "note 3"]:
        a, b = (
            fts.memory_search(query, max_results=20, min_score=0),
            py.memory_search(query, max_results=20, min_score=0),
        )
        assert [(h["path"], h["startLine"]) for h in a["results"]] == [
            (h["path"], h["startLine"]) for h in b["results"]
        ]
        for x, y in zip(a["results"], b["results"]):
            assert math.isclose(x["textScore"], y["textScore"], rel_tol=1e-9)


# --- hybrid ---------------------------------------------------------------------------------------


def bag_of_words(texts: List[str]) -> List[List[float]]:
    vectors = []
    for text in texts:
        vector = [0.0] * 64
        for word in terms.words(text):
            vector[zlib.crc32(word.encode()) % 64] += 1.0
        vectors.append(vector)
    return vectors


def test_hybrid_search_with_an_embedding_function(case: pathlib.Path) -> None:
    seed(case)
    memory = workspace(case, embed=bag_of_words, embed_model="bow-64")
    result = memory.memory_search("billing migration")
    assert result["mode"] == "hybrid" and result["model"] == "bow-64"
    assert paths_of(result)[0] == "memory/2026-11-20.md"
    assert all("vectorScore" in hit for hit in result["results"])


def test_a_failing_embedding_function_falls_back_to_keywords(case: pathlib.Path) -> None:
    seed(case)

    def broken(texts: List[str]) -> List[List[float]]:
        raise RuntimeError("model offline")

    result = workspace(case, embed=broken).memory_search("billing")
    assert result["mode"] == "keyword-only" and "embedding function failed" in result["warning"]
    assert set(paths_of(result)) == {"memory/2026-11-20.md", "memory/projects/infra.md"}
    assert "model offline" not in json.dumps(result)


def test_mmr_prefers_diverse_hits() -> None:
    def hit(chunk: int, text: str, score: float) -> rank.Hit:
        return rank.Hit(chunk, f"p{chunk}", 1, 1, text, score=score)

    hits = [hit(1, "red apple pie", 0.9), hit(2, "red apple pie", 0.89), hit(3, "blue sky", 0.88), hit(4, "x", 0.5)]
    assert [h.chunk for h in rank.diversify(hits, 0.7, lambda text: text)] == [1, 3, 2, 4]
    assert [h.chunk for h in rank.diversify(hits, 1.0, lambda text: text)] == [1, 2, 3, 4]


def test_skipped_files_are_not_read_again_while_unchanged(case: pathlib.Path) -> None:
    write(case, "memory/big.md", "zebra " * 100)
    (case / "memories" / "memory" / "bad.md").write_bytes(b"zebra \xff\n")
    write(case, "memory/ok.md", "zebra\n")
    memory = workspace(case, limits=OpenClawLimits(max_index_file_bytes=100))
    memory.disk = CountingDisk(memory.root)
    CountingDisk.reads = []
    assert memory.refresh() == (1, 0, 0, 2)
    assert CountingDisk.reads == ["memory/bad.md", "memory/ok.md"]  # the big one is judged by its size
    CountingDisk.reads = []
    assert memory.refresh() == (0, 0, 0, 0) and CountingDisk.reads == []


# --- the same units as OpenClaw -------------------------------------------------------------------

CHUNKS = pathlib.Path(__file__).resolve().parent / "data" / "openclaw-2026.9.6-chunks.json"


def test_chunks_and_sizes_are_openclaw_s_to_the_character() -> None:
    """OpenClaw 2026.9.6's own `chunkMarkdown` and `estimateStringChars`, recorded on 201 texts mixing
    CRLF, CJK of every weight, astral characters, list items and headings, and lines over a chunk."""
    recorded = json.loads(CHUNKS.read_text(encoding="utf-8"))
    for case in recorded["cases"]:
        found = chunks.chunk_text(case["text"], case["tokens"], case["overlap"], case["perEntry"])
        assert [list(chunk) for chunk in found] == case["chunks"], case["text"][:80]
        assert chunks.weight(case["text"]) == case["weight"]
