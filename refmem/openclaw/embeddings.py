"""Embedding providers for hybrid memory_search, behind the one `embed(texts) -> vectors` interface.

* `OpenAIEmbeddings`: any OpenAI-compatible `/embeddings` endpoint (OpenAI, OpenRouter, vLLM, a proxy),
  over the standard library's `http.client`: endpoint, model and key from the arguments or from
  `REFMEM_EMBEDDINGS_URL`, `REFMEM_EMBEDDINGS_MODEL`, `REFMEM_EMBEDDINGS_KEY`; texts sent in batches.
  It is careful with its key and with the search's time (D-OPENCLAW-EMBED-*):
  - no redirect is followed (a 3xx is an error): the key goes to the endpoint's origin and nowhere else;
  - one deadline covers a whole search (`search_deadline`, `embed_deadline_ms`): every request and
    every try, a hard stop even for an endpoint that trickles bytes (the socket is shut at the deadline);
  - an outage is remembered (`embed_retry_ms`): after the endpoint could not be reached, gave no answer
    in time or kept failing, calls fail at once, without a connection, until the retry time;
  - an answer larger than `embed_response_bytes` is refused after reading at most that much;
  - one dimension per client: an answer whose vectors differ in length from each other or from the
    first answer is refused.
  A failed request (a connection error, 408, 429 or 5xx) is tried again with a growing pause while the
  deadline allows; every failure is an `EmbeddingError` whose message names no key.
* `WordLlamaEmbeddings`: offline, with no key: the `wordllama` package (the `refmem[semantic]` extra),
  whose wheel carries its static embeddings (16 MB) and tokenizer; loaded from the package's own folder
  with downloads disabled, so it never reaches a model hub (left to itself, wordllama 0.4 looks for
  the tokenizer under a folder name the wheel does not use and downloads it). Imported only when
  used, with a clear error when missing.

Each provider has a `fingerprint` (provider, model, endpoint): the index keys its embedding cache by it
and reindexes when it changes, as OpenClaw does. Plain callables work too (`fingerprint` then is
`custom:<embed_model>`). A provider may carry its calibration (`min_score`, `vector_weight`): the
defaults hybrid search uses with it (D-OPENCLAW-EMBED-CALIBRATION).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .limits import DEFAULT_OPENCLAW_LIMITS, OpenClawLimits

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
READ_CHUNK = 65_536


class EmbeddingError(Exception):
    """An embedding provider could not give vectors; the message names no key or secret."""


class EmbeddingDeadline(EmbeddingError):
    """The search's deadline for embeddings passed."""


class EmbeddingOutage(EmbeddingError):
    """The endpoint failed recently and is not asked again before its retry time."""


_DEADLINE = threading.local()


@contextlib.contextmanager
def search_deadline(seconds: float) -> Iterator[None]:
    """Every embeddings request made in this thread inside the block ends by `seconds` from now (an
    inner block may only shorten it)."""
    previous: Optional[float] = getattr(_DEADLINE, "at", None)
    until = time.monotonic() + seconds
    _DEADLINE.at = until if previous is None else min(previous, until)
    try:
        yield
    finally:
        _DEADLINE.at = previous


def current_deadline() -> Optional[float]:
    """The monotonic time by which this thread's search wants its embeddings, if inside one."""
    return getattr(_DEADLINE, "at", None)


class Provider:
    """What hybrid search needs of an embedding provider."""

    provider = "custom"
    model = ""
    endpoint = ""
    min_score: Optional[float] = None  # calibrated default minScore of hybrid search with this model
    vector_weight: Optional[float] = None  # calibrated weight of the cosine (the keyword score gets the rest)

    def __call__(self, texts: List[str]) -> Sequence[Sequence[float]]:
        raise NotImplementedError

    @property
    def fingerprint(self) -> str:
        return f"{self.provider}|{self.model}|{self.endpoint}"


class _Failure(Exception):
    """One try failed: why, whether to try again, whether it is an outage."""

    def __init__(self, problem: str, retry: bool, outage: bool) -> None:
        super().__init__(problem)
        self.problem, self.retry, self.outage = problem, retry, outage


class OpenAIEmbeddings(Provider):
    """An OpenAI-compatible embeddings endpoint (see the module docstring)."""

    provider = "openai"

    def __init__(
        self,
        endpoint: Optional[str] = None,
        model: Optional[str] = None,
        api_key: Optional[str] = None,
        batch: int = 64,
        retries: int = 3,
        timeout: float = 30.0,
        headers: Optional[Dict[str, str]] = None,
        sleep: Callable[[float], None] = time.sleep,
        limits: OpenClawLimits = DEFAULT_OPENCLAW_LIMITS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint = (endpoint or os.environ.get("REFMEM_EMBEDDINGS_URL") or "https://api.openai.com/v1").rstrip("/")
        parts = urllib.parse.urlsplit(self.endpoint)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError("the embeddings endpoint must be an http:// or https:// URL")
        self._parts = parts
        self.model = model or os.environ.get("REFMEM_EMBEDDINGS_MODEL") or "text-embedding-3-small"
        self._key = api_key if api_key is not None else os.environ.get("REFMEM_EMBEDDINGS_KEY", "")
        self.batch = max(1, batch)
        self.retries = max(0, retries)
        self.timeout = timeout  # the deadline of one call outside a search (inside one, the search's deadline)
        self.headers = dict(headers or {})
        self.limits = limits
        self._sleep = sleep
        self._clock = clock
        self._state = threading.Lock()
        self._down_until = 0.0
        self._down_problem = ""
        self.dimension: Optional[int] = None  # the first answer's; every later answer must match
        self.attempts = 0  # HTTP requests sent (an outage sends none)

    def __repr__(self) -> str:  # never the key
        return f"OpenAIEmbeddings(endpoint={self.endpoint!r}, model={self.model!r})"

    def __call__(self, texts: List[str]) -> List[List[float]]:
        until = current_deadline()
        if until is None:
            until = time.monotonic() + self.timeout
        vectors: List[List[float]] = []
        for start in range(0, len(texts), self.batch):
            vectors.extend(self._request(texts[start : start + self.batch], until))
        return vectors

    def _request(self, texts: List[str], until: float) -> List[List[float]]:
        with self._state:
            down = self._clock() < self._down_until
        if down:
            retry = self.limits.embed_retry_ms // 1000
            raise EmbeddingOutage(
                f"embeddings from {self.model}: {self._down_problem}; not tried again for up to {retry} s"
            )
        body = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        problem, outage = "no answer", False
        for attempt in range(self.retries + 1):
            if attempt:
                pause = min(8.0, 0.5 * 2 ** (attempt - 1))
                if time.monotonic() + pause >= until:
                    break
                self._sleep(pause)
            remaining = until - time.monotonic()
            if remaining <= 0:
                problem, outage = "no answer before the search's deadline", True
                break
            try:
                vectors = self._vectors(self._post(body, remaining), len(texts))
            except _Failure as failure:
                problem, outage = failure.problem, failure.outage
                if not failure.retry:
                    break
                continue
            with self._state:
                self._down_until = 0.0
            return vectors
        message = f"embeddings from {self.model}: {problem}"
        if outage:
            with self._state:
                self._down_until = self._clock() + self.limits.embed_retry_ms / 1000
                self._down_problem = problem
        if time.monotonic() >= until or problem.startswith("no answer"):
            raise EmbeddingDeadline(message)
        raise EmbeddingError(message)

    def _connection(self, remaining: float) -> Tuple[http.client.HTTPConnection, str]:
        """A connection to the endpoint's origin (or through the environment's proxy to it), and the
        request target."""
        parts = self._parts
        https = parts.scheme == "https"
        port = parts.port or (443 if https else 80)
        target = (parts.path or "") + "/embeddings"
        proxy = None
        if not urllib.request.proxy_bypass(parts.hostname or ""):
            proxy = urllib.request.getproxies().get(parts.scheme)
        context = ssl.create_default_context() if https else None
        if proxy:
            proxied = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
            if https:
                tunnel = http.client.HTTPSConnection(
                    proxied.hostname or "", proxied.port or 80, timeout=remaining, context=context
                )
                tunnel.set_tunnel(parts.hostname or "", port)
                return tunnel, target
            plain = http.client.HTTPConnection(proxied.hostname or "", proxied.port or 80, timeout=remaining)
            return plain, f"http://{parts.netloc}{target}"
        if https:
            return http.client.HTTPSConnection(parts.hostname or "", port, timeout=remaining, context=context), target
        return http.client.HTTPConnection(parts.hostname or "", port, timeout=remaining), target

    def _post(self, body: bytes, remaining: float) -> Any:
        """One POST, within `remaining` seconds whatever the endpoint does: its JSON answer, or a `_Failure`."""
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self.headers}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        connection, target = self._connection(remaining)
        expired = threading.Event()

        def stop() -> None:  # the hard stop: a blocked read returns once its socket is shut
            expired.set()
            sock = connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(remaining, stop)
        timer.daemon = True
        with self._state:
            self.attempts += 1
        timer.start()
        try:
            connection.request("POST", target, body=body, headers=headers)
            response = connection.getresponse()
            status = response.status
            if 300 <= status < 400:
                redirect = f"the endpoint answered with a redirect (HTTP {status}), which is not followed"
                raise _Failure(redirect, False, False)
            if status != 200:
                again = status in RETRY_STATUSES
                raise _Failure(f"the endpoint answered HTTP {status}", again, again)
            payload = self._read(response)
        except _Failure:
            raise
        except (OSError, http.client.HTTPException) as error:
            if expired.is_set() or isinstance(error, socket.timeout):
                raise _Failure("no answer before the search's deadline", False, True) from None
            raise _Failure(f"the endpoint could not be reached ({type(error).__name__})", True, True) from None
        finally:
            timer.cancel()
            connection.close()
        if expired.is_set():  # a body cut short by the stop reads as a short body: it is not an answer
            raise _Failure("no answer before the search's deadline", False, True)
        try:
            return json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _Failure("the endpoint's answer is not an embeddings response", False, False) from None

    def _read(self, response: http.client.HTTPResponse) -> bytes:
        """The answer's body, refused past `embed_response_bytes` (before reading it when its length says so)."""
        limit = self.limits.embed_response_bytes
        too_big = f"the endpoint's answer is larger than {limit} bytes"
        declared = response.getheader("Content-Length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise _Failure(too_big, False, False)
        parts: List[bytes] = []
        got = 0
        while True:
            piece = response.read(min(READ_CHUNK, limit + 1 - got))
            if not piece:
                return b"".join(parts)
            got += len(piece)
            if got > limit:
                raise _Failure(too_big, False, False)
            parts.append(piece)

    def _vectors(self, payload: Any, count: int) -> List[List[float]]:
        bad = _Failure("the endpoint's answer is not an embeddings response", False, False)
        try:
            data = payload["data"]
            if not isinstance(data, list) or len(data) != count:
                raise bad
            ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
            vectors = [[float(value) for value in item["embedding"]] for item in ordered]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise bad from None
        if not all(math.isfinite(value) for vector in vectors for value in vector):
            raise _Failure("an embedding is not finite", False, False)
        sizes = {len(vector) for vector in vectors}
        with self._state:
            expected = self.dimension
            if len(sizes) > 1 or (expected is not None and sizes != {expected}) or 0 in sizes:
                found = ", ".join(str(size) for size in sorted(sizes))
                want = f"; {self.model} gave {expected} before" if expected is not None else ""
                raise _Failure(f"the endpoint's vectors have {found} dimensions{want}", False, False)
            if sizes:
                self.dimension = sizes.pop()
        return vectors


class NumpyDots:
    """`cosine.IntegerDots` in numpy (which the offline model needs anyway): the rounded vectors as one
    int64 matrix, the exact dot products as one matrix-vector product. Each product is below 2**53 and a
    sum of at most `max_dims` of them below 2**63: nothing is rounded, nothing overflows."""

    max_dims = 1024

    def __init__(self) -> None:
        import numpy  # type: ignore[import-not-found, unused-ignore]

        self._numpy = numpy

    def prepare(self, rows: List[List[int]]) -> Any:
        return self._numpy.array(rows, dtype=self._numpy.int64)

    def dots(self, prepared: Any, query: List[int]) -> List[int]:
        return (prepared @ self._numpy.array(query, dtype=self._numpy.int64)).tolist()  # type: ignore[no-any-return]

    def top(self, prepared: Any, query: List[int], limit: int, scale: float) -> Tuple[List[int], List[float]]:
        """`cosine.IntegerTop`: the dot products as float64 divided by `scale` (numpy's int64 to float64
        rounds to nearest, ties to even, as Python's `int / float` does, and `scale` is a power of two),
        the `limit` largest chosen by a partition, then ordered by a stable sort of their negation
        (equal scores keep ascending positions, as Python's `sorted(..., reverse=True)`). Every score
        equal to the last one chosen is a candidate, so a tie at the cut goes to the lower position."""
        numpy = self._numpy
        values = (prepared @ numpy.array(query, dtype=numpy.int64)).astype(numpy.float64) / scale
        count = len(values)
        if count > limit:
            cut = numpy.partition(values, count - limit)[count - limit]
            candidates = numpy.flatnonzero(values >= cut)
        else:
            candidates = numpy.arange(count)
        order = candidates[numpy.argsort(-values[candidates], kind="stable")][:limit]
        return order.tolist(), values[order].tolist()


class WordLlamaEmbeddings(Provider):
    """Offline embeddings from the `wordllama` package's own weights (`pip install refmem[semantic]`)."""

    provider = "wordllama"
    # Calibrated on bench/paraphrases.py (D-OPENCLAW-EMBED-CALIBRATION, bench/results.md): its cosines for
    # texts with no word in common are small (OpenClaw's 0.35 floor left none of them), and the cosine
    # finds them where the keyword score cannot.
    min_score = 0.1
    vector_weight = 0.9

    def __init__(self, config: str = "l2_supercat", dim: int = 256) -> None:
        try:
            from wordllama import WordLlama  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError:
            raise EmbeddingError(
                "offline semantic search needs the wordllama package: pip install 'refmem[semantic]'"
            ) from None
        import wordllama

        self.model = f"{config}-{dim}"
        self.endpoint = "local"
        # Its own folder as the cache: the wheel carries `weights/` and `tokenizers/`, but `load` looks
        # for the tokenizer in a `tokenizer/` folder first and would fetch it from a hub otherwise.
        shipped = os.path.dirname(os.path.abspath(wordllama.__file__))
        self._model = WordLlama.load(config=config, dim=dim, cache_dir=shipped, disable_download=True)
        self.arithmetic = NumpyDots()  # the model's own numpy does the cosine's integer sums (cosine.py)

    def __call__(self, texts: List[str]) -> List[List[float]]:
        return [[float(value) for value in row] for row in self._model.embed(texts)]


def fingerprint(embed: Callable[[List[str]], Sequence[Sequence[float]]], model: str) -> str:
    """The cache key of an embedding function: its provider's fingerprint, or `custom` and the name
    the application gave it."""
    if isinstance(embed, Provider):
        return embed.fingerprint
    return f"custom|{model}|"
