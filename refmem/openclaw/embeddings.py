"""Embedding providers for hybrid memory_search, behind the one `embed(texts) -> vectors` interface.

* `OpenAIEmbeddings`: any OpenAI-compatible `/embeddings` endpoint (OpenAI, OpenRouter, vLLM, a proxy),
  over the standard library's HTTP client: endpoint, model and key from the arguments or from
  `REFMEM_EMBEDDINGS_URL`, `REFMEM_EMBEDDINGS_MODEL`, `REFMEM_EMBEDDINGS_KEY`; texts sent in batches,
  a failed request (a connection error, 408, 429 or 5xx) tried again with a growing pause, and every
  failure an `EmbeddingError` whose message names no key (D-OPENCLAW-SEARCH-HYBRID).
* `WordLlamaEmbeddings`: offline, with no key: the `wordllama` package (the `refmem[semantic]` extra),
  whose wheel carries its static embeddings (16 MB) and tokenizer; loaded from the package's own folder
  with downloads disabled, so it never reaches a model hub (left to itself, wordllama 0.4 looks for
  the tokenizer under a folder name the wheel does not use and downloads it). Imported only when
  used, with a clear error when missing.

Each provider has a `fingerprint` (provider, model, endpoint): the index keys its embedding cache by it
and reindexes when it changes, as OpenClaw does. Plain callables work too (`fingerprint` then is
`custom:<embed_model>`).
"""

from __future__ import annotations

import json
import math
import os
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Sequence

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class EmbeddingError(Exception):
    """An embedding provider could not give vectors; the message names no key or secret."""


class Provider:
    """What hybrid search needs of an embedding provider."""

    provider = "custom"
    model = ""
    endpoint = ""

    def __call__(self, texts: List[str]) -> Sequence[Sequence[float]]:
        raise NotImplementedError

    @property
    def fingerprint(self) -> str:
        return f"{self.provider}|{self.model}|{self.endpoint}"


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
    ) -> None:
        self.endpoint = (endpoint or os.environ.get("REFMEM_EMBEDDINGS_URL") or "https://api.openai.com/v1").rstrip("/")
        if not self.endpoint.startswith(("https://", "http://")):
            raise ValueError("the embeddings endpoint must be an http:// or https:// URL")
        self.model = model or os.environ.get("REFMEM_EMBEDDINGS_MODEL") or "text-embedding-3-small"
        self._key = api_key if api_key is not None else os.environ.get("REFMEM_EMBEDDINGS_KEY", "")
        self.batch = max(1, batch)
        self.retries = max(0, retries)
        self.timeout = timeout
        self.headers = dict(headers or {})
        self._sleep = sleep

    def __repr__(self) -> str:  # never the key
        return f"OpenAIEmbeddings(endpoint={self.endpoint!r}, model={self.model!r})"

    def __call__(self, texts: List[str]) -> List[List[float]]:
        vectors: List[List[float]] = []
        for start in range(0, len(texts), self.batch):
            vectors.extend(self._request(texts[start : start + self.batch]))
        return vectors

    def _request(self, texts: List[str]) -> List[List[float]]:
        body = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        headers = {"Content-Type": "application/json", **self.headers}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        url = f"{self.endpoint}/embeddings"  # http(s) only, checked in __init__
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310  # nosec B310
        problem = "no answer"
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(min(8.0, 0.5 * 2 ** (attempt - 1)))
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310  # nosec B310
                    return self._vectors(json.loads(response.read().decode("utf-8")), len(texts))
            except urllib.error.HTTPError as error:
                problem = f"the endpoint answered HTTP {error.code}"
                if error.code not in RETRY_STATUSES:
                    break
            except (urllib.error.URLError, OSError) as error:
                problem = f"the endpoint could not be reached ({type(error).__name__})"
            except (ValueError, KeyError, TypeError):
                problem = "the endpoint's answer is not an embeddings response"
                break
        raise EmbeddingError(f"embeddings from {self.model}: {problem}")

    @staticmethod
    def _vectors(payload: Any, count: int) -> List[List[float]]:
        data = payload["data"]
        if not isinstance(data, list) or len(data) != count:
            raise ValueError("wrong number of embeddings")
        ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
        vectors = []
        for item in ordered:
            vector = [float(value) for value in item["embedding"]]
            if not all(math.isfinite(value) for value in vector):
                raise ValueError("an embedding is not finite")
            vectors.append(vector)
        return vectors


class WordLlamaEmbeddings(Provider):
    """Offline embeddings from the `wordllama` package's own weights (`pip install refmem[semantic]`)."""

    provider = "wordllama"

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

    def __call__(self, texts: List[str]) -> List[List[float]]:
        return [[float(value) for value in row] for row in self._model.embed(texts)]


def fingerprint(embed: Callable[[List[str]], Sequence[Sequence[float]]], model: str) -> str:
    """The cache key of an embedding function: its provider's fingerprint, or `custom` and the name
    the application gave it."""
    if isinstance(embed, Provider):
        return embed.fingerprint
    return f"custom|{model}|"
