"""OpenClaw's workspace memory over the memory tool's directory: memory_get, memory_search, daily logs.

`OpenClawMemory(root)` serves the two tools OpenClaw gives a model, over the same directory the
memory tool calls `/memories` (so `MEMORY.md` is `/memories/MEMORY.md`), with the memory tool's
confinement: every disk access goes through `disk.Disk` (the store's walk), links are never
followed, special files never opened, hard-linked files never read. Over any other store (a
database, `OpenClawMemory(store, tenant=...)`) the same tools go through `storedisk.StoreDisk`, the
storage interface alone (D-OPENCLAW-STORES). Like the memory tool's handler it never raises for
anything a model can send: every outcome is a result object.
"""

from __future__ import annotations

import contextlib
import datetime
import fnmatch
import json
import os
import sqlite3
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .._text import is_crlf
from ..limits import DEFAULT_LIMITS, Limits
from ..messages import TENANT_UNSUPPORTED, escape, io_reason, is_unsafe_char
from ..paths import VirtualPath
from ..problems import FsProblem, NotRegular, ParentNotDir
from ..store_protocol import Store, TenantStore
from ..tracked import TooBig, TrackedDirectory
from . import embeddings, inputs, paths, search
from .disk import Disk, Files
from .fresh import Freshness, JournalFreshness
from .index import FORMAT, Embed, Index, Refreshed
from .limits import DEFAULT_OPENCLAW_LIMITS, OpenClawLimits
from .messages import NOTICES, Refusal, error_result, problem, search_error
from .rank import Hit
from .storedisk import StoreDisk
from .window import read_excerpt

TOOLS = ("memory_get", "memory_search")
LOG_CONTROLS_ALLOWED = frozenset("\t\n\r")


def _reason(error: FsProblem) -> str:
    return io_reason(error.code)


def render(result: Dict[str, Any]) -> Tuple[str, bool]:
    """What a tool runner puts in the `tool_result`: the object as indented JSON (OpenClaw's
    `jsonResult`), and whether it is an error (`status` "error")."""
    return json.dumps(result, indent=2, ensure_ascii=False), result.get("status") == "error"


class OpenClawMemory:
    """memory_get and memory_search over one workspace directory (see the module docstring).

    `embed` (optional) turns texts into vectors for hybrid search; it is called with batches of
    chunk texts while indexing and with `[query]` while searching, and `embed_model` names it (a
    change of name re-embeds every chunk). Without it search is keyword-only, as OpenClaw is
    without an embedding provider. `index="memory"` keeps the index in memory instead of the
    file `.refmem/openclaw-index.sqlite`. `clock` gives the time for the decay of daily logs and
    the date of `append_daily`. `limits` and `path_limits` are an `OpenClawLimits` and a `Limits`, or
    mappings of their fields (the others keeping their defaults).

    `allow` and `read_only` are the memory tool's options of the same names (D-OPENCLAW-ALLOW): under
    an allow-list (glob patterns on the path below the workspace, as `MemoryHandler(allow=...)`)
    memory_get refuses other files and search never indexes them; read-only, nothing is written
    (`append_daily` is refused). Either keeps the search index in memory: the shared index file
    holds every memory file, and writing it is a write.

    `root` is a directory (the filesystem store, made if missing) or a `store_protocol.Store` object, used as
    it is (the caller keeps it and closes it). `tenant` names whose memories these are
    (`store_protocol.tenant_name`, D-STORE-TENANT): the store's `for_tenant(tenant)`, closed by `close`. A store
    that is not a directory has no index file: its index is in memory (D-OPENCLAW-STORES).
    """

    def __init__(
        self,
        root: Union[str, os.PathLike[str], TrackedDirectory, Store],
        limits: Union[OpenClawLimits, Mapping[str, int]] = DEFAULT_OPENCLAW_LIMITS,
        path_limits: Union[Limits, Mapping[str, int]] = DEFAULT_LIMITS,
        embed: Optional[Embed] = None,
        embed_model: str = "custom",
        index: str = "file",
        clock: Callable[[], float] = time.time,
        allow: Optional[Sequence[str]] = None,
        read_only: bool = False,
        *,
        tenant: Optional[str] = None,
    ) -> None:
        if index not in ("file", "memory"):
            raise ValueError('index must be "file" or "memory"')
        self.allow = tuple(allow) if allow is not None else None
        self.read_only = read_only
        if self.allow is not None or read_only:
            index = "memory"
        self.limits = OpenClawLimits.from_mapping(limits)  # before the root is opened: a bad table holds nothing
        self.path_limits = Limits.from_mapping(path_limits)
        self.root, self._owned = _open_store(root, tenant)
        allowed = None if self.allow is None else self.allowed
        self.disk: Files
        self._new_freshness: Callable[[], Union[Freshness, JournalFreshness]]
        if isinstance(self.root, TrackedDirectory):  # the one place that tells a directory from another store
            directory = self.root
            self.disk = Disk(directory, self.path_limits, allowed)
            # A read-only handler writes nothing, the journal included (the first reader makes it).
            self._new_freshness = lambda: Freshness(directory, self.limits, journal=not self.read_only)
        else:
            store = self.root
            self.disk = StoreDisk(store, self.path_limits, allowed, self.limits.max_index_file_bytes)
            self._new_freshness = lambda: JournalFreshness(store, self.limits)
            index = "memory"  # a database has no `.refmem/` folder
        self.embed = embed
        self.embed_model = getattr(embed, "model", "") or embed_model
        self.embed_provider = getattr(embed, "provider", "custom") if embed is not None else "none"
        self.embed_fingerprint = embeddings.fingerprint(embed, embed_model) if embed is not None else ""
        self.clock = clock
        self._index_kind = index
        self._index: Optional[Index] = None
        self._freshness: Optional[Union[Freshness, JournalFreshness]] = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the index, and the store when this workspace opened it (a directory path, a tenant's)."""
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None
            closing = getattr(self._freshness, "close", None)
            if closing is not None:
                closing()
                self._freshness = None
            owned, self._owned = self._owned, None
        if owned is not None:
            owned.close()

    def __enter__(self) -> OpenClawMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def allowed(self, relative: str) -> bool:
        """Does the allow-list let the tools reach `relative` (a path below the workspace)?"""
        return self.allow is None or any(fnmatch.fnmatchcase(relative, pattern) for pattern in self.allow)

    # -- the tools, as a runner calls them --

    def execute(self, tool: str, tool_input: Any) -> Dict[str, Any]:
        """Run `memory_get` or `memory_search` on the input the model sent."""
        if tool == "memory_get":
            return self.get(tool_input)
        if tool == "memory_search":
            return self.search(tool_input)
        raise ValueError(f"unknown tool {tool!r}; the OpenClaw tools are {', '.join(TOOLS)}")

    def memory_get(self, path: str, from_: Optional[int] = None, lines: Optional[int] = None) -> Dict[str, Any]:
        return self.get({"path": path, "from": from_, "lines": lines})

    def memory_search(
        self, query: str, max_results: Optional[int] = None, min_score: Optional[float] = None
    ) -> Dict[str, Any]:
        return self.search({"query": query, "maxResults": max_results, "minScore": min_score})

    # -- memory_get --

    def get(self, tool_input: Any) -> Dict[str, Any]:
        parsed = inputs.get_input(tool_input, self.limits)
        if isinstance(parsed, Refusal):
            raw = tool_input.get("path") if isinstance(tool_input, dict) else None
            return error_result(parsed.key, _echo(raw), **parsed.values)
        location = paths.parse_memory_path(parsed.path, self.path_limits)
        if isinstance(location, Refusal):
            return error_result(location.key, _echo(parsed.path), **location.values)
        relative = paths.relative(location.parts)
        if not self.allowed(relative):  # before the disk: a refused name says nothing of what is there
            return error_result("not_in_allow_list", relative)
        try:
            with self.disk.open_file(location) as opened:
                excerpt = read_excerpt(opened.chunks(), parsed.start, parsed.lines, self.limits.get_max_chars)
        except UnicodeDecodeError:
            return error_result("not_utf8", relative)
        except NotRegular:
            return error_result("not_regular", relative)  # a folder too, as OpenClaw says
        except FsProblem as error:
            if error.code == "missing":
                return {"status": "not_found", "text": "", "path": relative}
            if error.code in ("link", "hard_linked"):
                return error_result(error.code, relative)
            return error_result("read_failed", relative, reason=_reason(error))
        return excerpt.result(relative)

    # -- memory_search --

    def search(self, tool_input: Any) -> Dict[str, Any]:
        parsed = inputs.search_input(tool_input, self.limits)
        if isinstance(parsed, Refusal):
            return search_error(parsed.key, **parsed.values)
        try:
            index = self._open_index()
            self._fresh().update(index, self.disk)
        except FsProblem as error:
            return search_error("index_failed", unavailable=True, reason=_reason(error))
        except sqlite3.Error:
            return search_error("index_failed", unavailable=True, reason="the index could not be read or written")
        warnings: List[str] = []
        if index.notice is not None:
            warnings.append(NOTICES["index_in_memory"].format(reason=index.notice))
        now = self.clock()
        hits: Optional[List[Hit]] = None
        with embeddings.search_deadline(self.limits.embed_deadline_ms / 1000):  # D-OPENCLAW-EMBED-DEADLINE
            embed = self._ready_embedder(index, warnings)
            if embed is not None:
                try:
                    hits = search.run(
                        index, parsed.query, parsed.max_results, self._min_score(parsed, embed), self.limits, now, embed
                    )
                except sqlite3.Error:
                    return search_error("index_failed", unavailable=True, reason="the index could not be read")
                except Exception as error:  # noqa: BLE001 - the embedding function is the application's code
                    warnings.append(self._embed_problem(error))
                    embed = None
        if hits is None:
            try:
                hits = search.run(index, parsed.query, parsed.max_results, parsed.min_score, self.limits, now, None)
            except sqlite3.Error:
                return search_error("index_failed", unavailable=True, reason="the index could not be read")
        hits = [hit for hit in hits if self.allowed(hit.path)]
        result: Dict[str, Any] = {
            "results": [search.present(hit, embed is not None, self.limits.snippet_max_chars) for hit in hits],
            "provider": "none" if embed is None else self.embed_provider,
            "model": None if embed is None else self.embed_model,
            "mode": "keyword-only" if embed is None else "hybrid",
        }
        if warnings:
            result["warning"] = " ".join(warnings)
        return result

    def refresh(self) -> Refreshed:
        """Bring the index up to date now with a full scan (a search brings it up to date anyway, with
        what the sources of changes report, see `fresh.py`)."""
        return self._fresh().full(self._open_index(), self.disk)

    def _fresh(self) -> Union[Freshness, JournalFreshness]:
        with self._lock:
            if self._freshness is None:
                self._freshness = self._new_freshness()
            return self._freshness

    def counts(self) -> Tuple[int, int]:
        """(memory files indexed, chunks) in the search index."""
        return self._open_index().counts()

    def index_held(self) -> Dict[str, int]:
        """What the search index keeps in memory and on disk (`Index.held`, D-OPENCLAW-PRIVATE-INDEX)."""
        return self._open_index().held()

    def _open_index(self) -> Index:
        with self._lock:
            if self._index is None:
                settings = {
                    "format": FORMAT,
                    "chunking": f"{self.limits.chunk_tokens}/{self.limits.chunk_overlap_tokens}",
                    "embedding": self.embed_fingerprint,
                }
                if self._index_kind == "memory":
                    self._index = Index.in_memory(settings, None, cache_kib=self.limits.private_index_cache_kib)
                else:
                    self._index = Index.open(self.disk, settings)
                self._index.provider = self.embed_fingerprint or None
            return self._index

    def _ready_embedder(self, index: Index, warnings: List[str]) -> Optional[Embed]:
        if self.embed is None:
            return None
        try:
            index.embed_missing(self.embed)
        except Exception as error:  # noqa: BLE001 - the embedding function is the application's code
            warnings.append(self._embed_problem(error))
            return None
        return self.embed

    def _embed_problem(self, error: Exception) -> str:
        """What the search's `warning` says when it answered from keywords because of the embeddings."""
        if isinstance(error, embeddings.EmbeddingOutage):
            return problem("embedder_down", s=self.limits.embed_retry_ms // 1000).template
        if isinstance(error, embeddings.EmbeddingDeadline):
            return problem("embedder_deadline", ms=self.limits.embed_deadline_ms).template
        return problem("embedder_failed").template

    def _min_score(self, parsed: inputs.SearchInput, embed: Optional[Embed]) -> float:
        """The minScore the model sent, else the embedding model's calibrated one in hybrid mode, else the
        default (D-OPENCLAW-EMBED-CALIBRATION)."""
        if parsed.min_score_given or embed is None:
            return parsed.min_score
        calibrated = getattr(embed, "min_score", None)
        return parsed.min_score if calibrated is None else float(calibrated)

    # -- daily logs --

    def append_daily(self, text: Any, day: Optional[datetime.date] = None) -> Dict[str, Any]:
        """Append `text` to the day's log `memory/YYYY-MM-DD.md` (today by `clock`, local time),
        made if missing, atomically (temp file and rename, under the root's lock). The text gets
        a final newline; a log not ending in one gets one first; a CRLF log gets CRLF lines."""
        when = day if day is not None else datetime.date.fromtimestamp(self.clock())
        relative = f"{paths.MEMORY_DIR}/{when.isoformat()}.md"
        if self.read_only:
            return error_result("read_only", relative)
        if not self.allowed(relative):
            return error_result("not_in_allow_list", relative)
        if not isinstance(text, str) or not text.strip():
            return error_result("log_text", relative)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return error_result("not_unicode", relative, name="the log text")
        if any(is_unsafe_char(char) and char not in LOG_CONTROLS_ALLOWED for char in text):
            return error_result("log_control", relative)
        entry = text.replace("\r\n", "\n")
        entry = entry if entry.endswith("\n") else entry + "\n"
        limit = self.limits.max_log_bytes

        def extend(old: bytes) -> bytes:
            previous = old.decode("utf-8")  # UnicodeDecodeError: the log is not UTF-8 text
            lines = entry.replace("\n", "\r\n") if is_crlf(previous) else entry
            glue = "" if not previous or previous.endswith("\n") else ("\r\n" if "\r\n" in previous else "\n")
            new = old + (glue + lines).encode("utf-8")
            if len(new) > limit:
                raise TooBig(len(new))
            return new

        try:
            self.disk.append(VirtualPath((paths.MEMORY_DIR, f"{when.isoformat()}.md")), extend, limit)
        except UnicodeDecodeError:
            return error_result("not_utf8", relative)
        except TooBig as error:
            return error_result("log_too_big", relative, n=error.size, max=limit)
        except ParentNotDir:
            return error_result("log_folder", relative)
        except FsProblem as error:
            if error.code in ("link", "hard_linked", "not_regular"):
                return error_result(error.code, relative)
            return error_result("log_failed", relative, reason=_reason(error))
        with contextlib.suppress(OSError):  # the note is written; a missing workspace tells no one
            self._fresh().announce(relative)
        return {"status": "ok", "path": relative}


def _open_store(root: Union[str, os.PathLike[str], Store], tenant: Optional[str]) -> Tuple[Store, Optional[Store]]:
    """The store a workspace serves, and the same when the workspace opened it (and so closes it)."""
    if isinstance(root, (str, os.PathLike)):
        opened = TrackedDirectory(root, tenant=tenant)
        return opened, opened
    if not isinstance(root, Store):
        raise TypeError("OpenClawMemory serves a directory path or a refmem.store_protocol.Store")
    if tenant is None:
        return root, None
    if not isinstance(root, TenantStore):
        raise TypeError(TENANT_UNSUPPORTED)
    made = root.for_tenant(tenant)
    return made, made


def _echo(raw: Any) -> str:
    """A path the model sent, safe to give back (no control characters, bounded)."""
    return escape(raw, DEFAULT_LIMITS.max_echo_chars) if isinstance(raw, str) else ""
