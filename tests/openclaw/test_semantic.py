"""Hybrid search's providers: an OpenAI-compatible client against a local server on 127.0.0.1, the
offline wordllama model (never a hub), OpenClaw's embedding cache, and sqlite-vec or the in-process cosine."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from refmem.openclaw import OpenClawMemory
from refmem.openclaw.embeddings import EmbeddingError, OpenAIEmbeddings, WordLlamaEmbeddings
from refmem.openclaw.index import Index, _load_sqlite_vec

from .openclaw_support import NOW, EmbeddingsEndpoint, paths_of, write

KEY = "sk-test-secret-0123456789"


def vector_of(text: str) -> List[float]:
    """A deterministic 8-dimensional vector of a text's letters (the fake server's model)."""
    vector = [0.0] * 8
    for char in text.lower():
        if char.isalpha():
            vector[ord(char) % 8] += 1.0
    return vector


class Server(EmbeddingsEndpoint):
    failures: List[int] = []  # statuses to answer before a good answer
    seen: List[Dict[str, Any]] = []

    def reply(self, body: Dict[str, Any]) -> None:
        if Server.failures:
            self.send_response(Server.failures.pop(0))
            self.end_headers()
            return
        data = [{"index": i, "embedding": vector_of(text)} for i, text in enumerate(body["input"])]
        self.send_json({"data": list(reversed(data)), "model": body["model"]})


@pytest.fixture()
def endpoint() -> Iterator[str]:
    Server.failures, Server.seen = [], []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Server)
    worker = threading.Thread(target=server.serve_forever, daemon=True)
    worker.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def client(endpoint: str, **kwargs: Any) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(endpoint, "tiny-8", KEY, sleep=lambda seconds: None, **kwargs)


def test_client_batches_in_order_with_the_key(endpoint: str) -> None:
    texts = [f"text {n}" for n in range(5)]
    assert client(endpoint, batch=2)(texts) == [vector_of(text) for text in texts]
    assert [len(seen["body"]["input"]) for seen in Server.seen] == [2, 2, 1]
    assert {seen["path"] for seen in Server.seen} == {"/v1/embeddings"}
    assert {seen["auth"] for seen in Server.seen} == {f"Bearer {KEY}"}


def test_client_retries_then_fails_without_naming_the_key(endpoint: str) -> None:
    Server.failures = [429, 503]
    assert client(endpoint)(["a"]) == [vector_of("a")]
    Server.failures = [500] * 10
    with pytest.raises(EmbeddingError) as failure:
        client(endpoint, retries=2)(["a"])
    assert "HTTP 500" in str(failure.value) and KEY not in str(failure.value) and KEY not in repr(client(endpoint))
    Server.failures = [401]
    with pytest.raises(EmbeddingError):
        client(endpoint)(["a"])
    assert len(Server.seen) == 3 + 3 + 1  # 401 is not tried again


def test_client_to_nowhere_is_a_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(EmbeddingError, match="could not be reached"):
        OpenAIEmbeddings(f"http://127.0.0.1:{port}/v1", "m", KEY, retries=1, sleep=lambda s: None)(["a"])


def test_hybrid_search_through_the_client_and_the_cache(case: Any, endpoint: str) -> None:
    write(case, "memory/a.md", "zebra crossing\n")
    write(case, "memory/b.md", "quokka island\n")
    first = OpenClawMemory(case / "memories", embed=client(endpoint), clock=lambda: NOW)
    result = first.memory_search("zebra")
    assert result["mode"] == "hybrid" and result["provider"] == "openai" and result["model"] == "tiny-8"
    assert paths_of(result)[0] == "memory/a.md"
    sent = sum(len(seen["body"]["input"]) for seen in Server.seen)
    assert sent == 3  # two chunks and the query
    first.close()
    # A change of model reindexes; switching back finds every chunk's vector in the cache.
    OpenClawMemory(case / "memories", embed=OpenAIEmbeddings(endpoint, "other", KEY), clock=lambda: NOW).memory_search(
        "x"
    )
    Server.seen = []
    again = OpenClawMemory(case / "memories", embed=client(endpoint), clock=lambda: NOW)
    assert paths_of(again.memory_search("quokka"))[0] == "memory/b.md"
    assert [seen["body"]["input"] for seen in Server.seen] == [["quokka"]]  # only the query


def test_a_failing_provider_falls_back_to_keywords(case: Any, endpoint: str) -> None:
    write(case, "memory/a.md", "zebra crossing\n")
    Server.failures = [500] * 20
    result = OpenClawMemory(case / "memories", embed=client(endpoint, retries=0)).memory_search("zebra")
    assert result["mode"] == "keyword-only" and paths_of(result) == ["memory/a.md"]
    assert KEY not in json.dumps(result)


def test_cosine_in_process_and_in_sqlite_vec_agree(case: Any) -> None:
    vectors: List[Tuple[str, List[float]]] = [(f"t{n}", [float(n % 3), float(n % 5), 1.0, float(n)]) for n in range(20)]
    index = Index.in_memory({"format": "x"}, None)
    index.vec = False
    index.conn.execute("BEGIN")
    for n, (text, vector) in enumerate(vectors):
        index.conn.execute(
            "INSERT INTO chunks(path, start_line, end_line, text, length, words, hash, embedding) "
            "VALUES (?, 1, 1, ?, 0, 1, ?, ?)",
            (f"memory/{n}.md", text, text, _floats(vector)),
        )
    index.conn.execute("COMMIT")
    probe = [1.0, 2.0, 1.0, 3.0]
    plain = [(hit.path, round(hit.vector_score, 5)) for hit in index.nearest(probe, 5)]
    assert len(plain) == 5 and plain == sorted(plain, key=lambda item: -item[1])
    if not _load_sqlite_vec(index.conn):
        pytest.skip("sqlite-vec is not installed, or this SQLite cannot load extensions")
    index.vec = True
    assert [(hit.path, round(hit.vector_score, 5)) for hit in index.nearest(probe, 5)] == plain


def _floats(vector: List[float]) -> bytes:
    import array

    return array.array("f", vector).tobytes()


def test_offline_model_never_reaches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wordllama")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the offline model tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    model = WordLlamaEmbeddings()
    a, b, c = model(["the machine running the gateway", "Mac Studio gateway host", "pet medication schedule"])
    assert len(a) == 256 and _cos(a, b) > _cos(a, c)


def _cos(a: List[float], b: List[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / ((sum(x * x for x in a) * sum(y * y for y in b)) ** 0.5)


def test_missing_offline_model_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_wordllama(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "wordllama":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_wordllama)
    with pytest.raises(EmbeddingError, match=r"pip install 'refmem\[semantic\]'"):
        WordLlamaEmbeddings()
