"""The embeddings client against real HTTP servers on 127.0.0.1 that each test starts: it sends its key
to no other origin, keeps one deadline per search, remembers an outage, reads a bounded answer and
keeps one dimension (D-OPENCLAW-EMBED-*). Every verdict counts requests, tries and bytes; the times
asserted are generous bounds (a hang was minutes before), never speeds."""

from __future__ import annotations

import http.server
import json
import pathlib
import socket
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

from refmem.openclaw import OpenClawLimits, OpenClawMemory
from refmem.openclaw.embeddings import EmbeddingError, OpenAIEmbeddings, search_deadline

from .openclaw_support import NOW, EmbeddingsEndpoint, paths_of, write

KEY = "sk-test-secret-0123456789"
RELEASE = threading.Event()  # set when a test ends: a hanging handler returns


class Recorder(EmbeddingsEndpoint):
    """A server's handler: `behave(handler, body)` answers; every request is recorded."""

    protocol_version = "HTTP/1.1"
    behave: Callable[[Recorder, Dict[str, Any]], None]
    sent: List[int]

    def reply(self, body: Dict[str, Any]) -> None:
        try:
            self.behave(body)
        except OSError:  # the client went away (what a refused answer does)
            pass

    def answer(self, vectors: List[List[float]]) -> None:
        self.send_json({"data": [{"index": i, "embedding": vector} for i, vector in enumerate(vectors)]})


Behaviour = Callable[[Recorder, Dict[str, Any]], None]


def start(behave: Behaviour) -> Tuple[str, Recorder, Callable[[], None]]:
    """A server on 127.0.0.1 with its own handler class: (its /v1 endpoint, the class, its stop)."""
    handler = type("Handler", (Recorder,), {"behave": behave, "seen": [], "sent": [0]})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    worker = threading.Thread(target=server.serve_forever, daemon=True)
    worker.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}/v1", handler, stop  # type: ignore[return-value]


@pytest.fixture()
def servers() -> Iterator[Callable[[Behaviour], Tuple[str, Recorder]]]:
    RELEASE.clear()
    stops: List[Callable[[], None]] = []

    def make(behave: Behaviour) -> Tuple[str, Recorder]:
        url, handler, stop = start(behave)
        stops.append(stop)
        return url, handler

    yield make
    RELEASE.set()
    for stop in stops:
        stop()


def good(handler: Recorder, body: Dict[str, Any]) -> None:
    handler.answer([[1.0, float(len(text)), 0.5] for text in body["input"]])


def client(url: str, **kwargs: Any) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(url, "tiny-3", KEY, sleep=lambda seconds: None, **kwargs)


def workspace(case: pathlib.Path, embed: OpenAIEmbeddings, **limits: int) -> OpenClawMemory:
    write(case, "memory/a.md", "zebra crossing at noon\n")
    write(case, "memory/b.md", "quokka island trip\n")
    return OpenClawMemory(case / "memories", embed=embed, limits=limits, clock=lambda: NOW)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- the key stays with its origin ---------------------------------------------------------------------


@pytest.mark.parametrize("other_origin", [True, False])
def test_no_redirect_is_followed_so_the_key_reaches_no_other_origin(servers: Any, other_origin: bool) -> None:
    elsewhere, collector = servers(good)
    target = elsewhere if other_origin else None

    def redirect(handler: Recorder, body: Dict[str, Any]) -> None:
        handler.send_response(307)
        location = f"{target}/embeddings" if target else "/v1/elsewhere"
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    url, redirector = servers(redirect)
    with pytest.raises(EmbeddingError, match=r"redirect \(HTTP 307\), which is not followed") as failure:
        client(url)(["hello"])
    assert len(redirector.seen) == 1  # a redirect is not a failure to try again
    assert collector.seen == []  # nothing reached the other origin, key or not
    assert KEY not in str(failure.value)


def test_the_key_goes_to_the_endpoint_itself(servers: Any) -> None:
    url, handler = servers(good)
    assert client(url)(["ab", "abc"]) == [[1.0, 2.0, 0.5], [1.0, 3.0, 0.5]]
    assert [(seen["path"], seen["auth"]) for seen in handler.seen] == [("/v1/embeddings", f"Bearer {KEY}")]


# --- one deadline per search ---------------------------------------------------------------------------


def hang(handler: Recorder, body: Dict[str, Any]) -> None:
    RELEASE.wait(120)


def trickle(handler: Recorder, body: Dict[str, Any]) -> None:
    """Headers, then one byte of a body every 50 ms: every read succeeds, the whole never ends."""
    handler.send_response(200)
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    while not RELEASE.wait(0.05):
        handler.wfile.write(b" ")
        handler.wfile.flush()


@pytest.mark.parametrize("behave", [hang, trickle])
def test_a_hanging_endpoint_costs_one_deadline_then_keywords(case: pathlib.Path, servers: Any, behave: Any) -> None:
    url, handler = servers(behave)
    embed = client(url, retries=3, timeout=120)
    memory = workspace(case, embed, embed_deadline_ms=400)
    began = time.monotonic()
    result = memory.memory_search("zebra")
    took = time.monotonic() - began
    assert result["mode"] == "keyword-only" and paths_of(result) == ["memory/a.md"]
    assert "did not come within 400 ms; keyword results only" in result["warning"]
    assert embed.attempts == 1 == len(handler.seen)  # no try after the deadline
    assert took < 30  # one 0.4 s deadline, with room for a loaded machine (it was 123.6 s)
    # The outage is remembered: the next searches send nothing.
    for _ in range(3):
        again = memory.memory_search("quokka")
        assert again["mode"] == "keyword-only" and "not asked again" in again["warning"]
    assert embed.attempts == 1 == len(handler.seen)
    assert KEY not in json.dumps(result)


def test_the_deadline_covers_every_request_of_a_search(servers: Any) -> None:
    slow_calls: List[int] = []

    def slow(handler: Recorder, body: Dict[str, Any]) -> None:
        slow_calls.append(1)
        RELEASE.wait(0.3)
        good(handler, body)

    url, handler = servers(slow)
    embed = client(url, batch=1, retries=0)
    with search_deadline(0.5), pytest.raises(EmbeddingError, match="deadline"):
        embed([f"text {n}" for n in range(20)])
    assert 1 <= len(handler.seen) <= 3  # 0.3 s each within 0.5 s: at most two started, then none


# --- an outage is remembered ---------------------------------------------------------------------------


def test_an_unreachable_endpoint_is_asked_again_only_after_the_retry_time(case: pathlib.Path) -> None:
    clock = [1000.0]
    pauses: List[float] = []
    embed = OpenAIEmbeddings(
        f"http://127.0.0.1:{free_port()}/v1", "m", KEY, retries=3, sleep=pauses.append, clock=lambda: clock[0]
    )
    memory = workspace(case, embed, embed_retry_ms=30_000, embed_deadline_ms=600_000)  # every pause fits
    first = memory.memory_search("zebra")
    assert first["mode"] == "keyword-only" and paths_of(first) == ["memory/a.md"]
    assert embed.attempts == 4 and pauses == [0.5, 1.0, 2.0]
    for _ in range(10):  # each of these paid 3.5 s of tries before
        later = memory.memory_search("zebra")
        assert paths_of(later) == ["memory/a.md"]
        assert "failed less than 30 s ago and is not asked again before then" in later["warning"]
    assert embed.attempts == 4 and len(pauses) == 3
    clock[0] += 31
    memory.memory_search("zebra")
    assert embed.attempts == 8  # tried again after the retry time, and remembered again
    memory.memory_search("zebra")
    assert embed.attempts == 8


def test_an_endpoint_that_comes_back_is_used_again(case: pathlib.Path, servers: Any) -> None:
    down = [True]

    def flaky(handler: Recorder, body: Dict[str, Any]) -> None:
        if down[0]:
            handler.send_response(503)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        good(handler, body)

    url, handler = servers(flaky)
    clock = [0.0]
    embed = client(url, retries=1, clock=lambda: clock[0])
    memory = workspace(case, embed, embed_deadline_ms=600_000)
    assert memory.memory_search("zebra")["mode"] == "keyword-only"
    assert len(handler.seen) == 2
    down[0] = False
    assert memory.memory_search("zebra")["mode"] == "keyword-only"
    assert len(handler.seen) == 2
    clock[0] += 31
    assert memory.memory_search("zebra")["mode"] == "hybrid"


# --- a bounded answer ----------------------------------------------------------------------------------


def flood(declare: bool) -> Behaviour:
    def behave(handler: Recorder, body: Dict[str, Any]) -> None:
        total = 64 << 20
        handler.send_response(200)
        if declare:
            handler.send_header("Content-Length", str(total))
        else:
            handler.send_header("Connection", "close")
        handler.end_headers()
        block = b"[" + b"0.125," * 10_000
        while handler.sent[0] < total:
            handler.wfile.write(block)
            handler.sent[0] += len(block)

    return behave


@pytest.mark.parametrize("declare", [True, False])
def test_an_oversized_answer_is_refused_without_reading_it(servers: Any, declare: bool) -> None:
    url, handler = servers(flood(declare))
    limits = OpenClawLimits(embed_response_bytes=1 << 20)
    with pytest.raises(EmbeddingError, match=f"larger than {1 << 20} bytes"):
        client(url, limits=limits)(["a"])
    assert len(handler.seen) == 1  # not tried again
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and handler.sent[0] < (64 << 20):  # the writer stops once the client is gone
        before = handler.sent[0]
        time.sleep(0.2)
        if handler.sent[0] == before:
            break
    assert handler.sent[0] < 16 << 20  # the 1 MiB read plus what the sockets buffer, not 64 MiB


# --- one dimension per model ---------------------------------------------------------------------------


def test_vectors_of_mixed_dimensions_are_refused(servers: Any) -> None:
    def mixed(handler: Recorder, body: Dict[str, Any]) -> None:
        handler.answer([[1.0] * (3 + n) for n in range(len(body["input"]))])

    url, _ = servers(mixed)
    with pytest.raises(EmbeddingError, match="vectors have 3, 4 dimensions"):
        client(url)(["a", "b"])


def test_a_model_keeps_its_first_dimension(servers: Any) -> None:
    sizes = [3, 5]

    def changing(handler: Recorder, body: Dict[str, Any]) -> None:
        handler.answer([[1.0] * sizes[0] for _ in body["input"]])

    url, _ = servers(changing)
    embed = client(url)
    assert embed(["a"]) == [[1.0, 1.0, 1.0]] and embed.dimension == 3
    sizes.pop(0)
    with pytest.raises(EmbeddingError, match="vectors have 5 dimensions; tiny-3 gave 3 before"):
        embed(["b"])
