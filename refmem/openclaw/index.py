"""The search index: memory files cut into chunks, kept in SQLite in `.refmem/openclaw-index.sqlite`.

* Keyword search is BM25 through SQLite FTS5 (`unicode61`), or, where this SQLite has no FTS5, the
  same BM25 computed in Python over a postings table (`bm25.py`, `terms.terms`).
* `refresh` brings the index up to date incrementally: a file is read again only when its
  (device, inode, size, mtime) changed; files gone are dropped. The difference is taken inside
  the write transaction, so two processes refreshing at once cannot both apply it.
* The file is a cache and is treated as hostile (D-OPENCLAW-INDEX-FILE): opened only through
  `Disk.index_handle` (a single-link regular file, never a link or FIFO), in the rollback-journal
  format with the journal in memory (SQLite then makes no `-journal`, `-wal` or `-shm` file next to
  it, names another program could squat), with `trusted_schema` off, and used only when its
  schema is exactly ours and it passes `quick_check`. Anything else is dropped and rebuilt; when
  even that fails, the index lives in memory for the handler's lifetime and results say so.
"""

from __future__ import annotations

import array
import bisect
import collections
import contextlib
import functools
import hashlib
import heapq
import math
import operator
import re
import sqlite3
import threading
import unicodedata
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

from ..messages import IO_REASONS, io_reason
from ..problems import FsProblem
from . import bm25, chunks, cosine, paths
from .disk import Files, FileState, FolderState, IndexHandle
from .limits import OpenClawLimits
from .rank import Hit
from .terms import fts_terms, terms, words

FORMAT = "refmem-openclaw-index/3"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_ROLLBACK_VERSIONS = (b"\x01\x01",)
"""Header bytes 18-19 of a database in the rollback-journal format (WAL would be 2, 2)."""

Embed = Callable[[List[str]], Sequence[Sequence[float]]]

_COMMON = (
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, dev INTEGER NOT NULL, "
    "ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, chunks INTEGER NOT NULL, "
    "key_path TEXT NOT NULL, key_base TEXT NOT NULL, key_stem TEXT NOT NULL)",
    "CREATE INDEX files_by_key_path ON files(key_path)",
    "CREATE INDEX files_by_key_base ON files(key_base)",
    "CREATE INDEX files_by_key_stem ON files(key_stem)",
    "CREATE TABLE chunks(id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL, "
    "end_line INTEGER NOT NULL, text TEXT NOT NULL, length INTEGER NOT NULL, words INTEGER NOT NULL, "
    "hash TEXT NOT NULL, embedding BLOB, vocab TEXT NOT NULL DEFAULT '')",
    "CREATE INDEX chunks_by_path ON chunks(path, start_line, end_line, id)",
    "CREATE TABLE embedding_cache(provider TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL, "
    "PRIMARY KEY(provider, hash)) WITHOUT ROWID",
)
_SCHEMAS: Dict[str, Tuple[str, ...]] = {
    "fts5": _COMMON
    + (
        "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize='unicode61')",
        "CREATE VIRTUAL TABLE paths_fts USING fts5(path, tokenize='unicode61')",
    ),
    "python": _COMMON
    + (
        "CREATE TABLE postings(term TEXT NOT NULL, chunk INTEGER NOT NULL, count INTEGER NOT NULL, "
        "length INTEGER NOT NULL, PRIMARY KEY(term, chunk)) WITHOUT ROWID",
        "CREATE INDEX postings_by_chunk ON postings(chunk)",
        "CREATE TABLE path_postings(term TEXT NOT NULL, file INTEGER NOT NULL, count INTEGER NOT NULL, "
        "length INTEGER NOT NULL, PRIMARY KEY(term, file)) WITHOUT ROWID",
        "CREATE INDEX path_postings_by_file ON path_postings(file)",
    ),
}
_DROP_TERMS = {"fts5": "DELETE FROM chunks_fts WHERE rowid = ?", "python": "DELETE FROM postings WHERE chunk = ?"}
_DROP_PATH = {"fts5": "DELETE FROM paths_fts WHERE rowid = ?", "python": "DELETE FROM path_postings WHERE file = ?"}
_EMPTY = {
    "fts5": (
        "DELETE FROM files",
        "DELETE FROM chunks",
        "DELETE FROM meta",
        "DELETE FROM chunks_fts",
        "DELETE FROM paths_fts",
    ),
    "python": (
        "DELETE FROM files",
        "DELETE FROM chunks",
        "DELETE FROM meta",
        "DELETE FROM postings",
        "DELETE FROM path_postings",
    ),
}
_POST = {
    "postings": "INSERT INTO postings(term, chunk, count, length) VALUES (?, ?, ?, ?)",
    "path_postings": "INSERT INTO path_postings(term, file, count, length) VALUES (?, ?, ?, ?)",
}
_POSTED = {
    "postings": "SELECT chunk, count, length FROM postings WHERE term = ?",
    "path_postings": "SELECT file, count, length FROM path_postings WHERE term = ?",
}
_SKIPPED = -1
VECTOR_CACHE_BYTES = 64 * 1024 * 1024
"""The most the packed chunk vectors of one index may hold in memory (about 30,000 chunks of 256
components); a larger index scores its vectors row by row from SQLite instead (D-OPENCLAW-COSINE)."""
PLACE_BYTES = 200
"""What one vector candidate's kept place (a dict entry: chunk id -> path, first and last line) costs in
memory, about, beside the path's own bytes (counted once per chunk: a bound, not a measure)."""
RANKED_TERMS = 512
"""How many keyword searches' orders (chunk ids and BM25 ranks, at most 200 each in two arrays: 3.3 KB, 1.7 MB
in all) an index remembers until it changes (D-OPENCLAW-SEARCH-TERMS): a word in most notes ("concerns", a
name) costs FTS5 a BM25 score for every chunk holding it, 15 to 30 ms at 10,000 files, each time a query
holds it."""
"""`files.chunks` of a file not indexed (over the size limit, or not UTF-8) until it changes."""


def path_keys(path: str) -> Tuple[str, str, str]:
    """(whole path, last name, last name without its extension), as OpenClaw compares a query that
    names a file: white space trimmed, `\\` read as `/`, a leading `./` dropped, NFC, lower case."""
    key = normalize_path_query(path)
    base = key.rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return key, base, base[:dot] if dot > 0 else base


def normalize_path_query(text: str) -> str:
    key = text.strip().replace("\\", "/")
    if key.startswith("./"):
        key = key[2:]
    return unicodedata.normalize("NFC", key).lower()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class IndexProblem(Exception):
    """The index file cannot be used; `reason` is shown to the model (no host path)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Refreshed(NamedTuple):
    added: int
    changed: int
    removed: int
    skipped: int


def fts5_available() -> bool:
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as probe:
            probe.execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
    except sqlite3.Error:
        return False
    return True


@functools.cache
def _expected_schema(mode: str) -> List[Tuple[str, str, str]]:
    with contextlib.closing(sqlite3.connect(":memory:")) as model:
        for statement in _SCHEMAS[mode]:
            model.execute(statement)
        return _schema(model)


def _schema(conn: sqlite3.Connection) -> List[Tuple[str, str, str]]:
    return [tuple(row) for row in conn.execute("SELECT type, name, COALESCE(sql, '') FROM sqlite_master ORDER BY name")]


class Index:
    """One SQLite index and what is known about it; every method takes the lock."""

    def __init__(
        self, conn: sqlite3.Connection, mode: str, notice: Optional[str], handle: Optional[IndexHandle] = None
    ) -> None:
        self.conn = conn
        self._handle = handle  # the checked descriptor of the file, released after the connection
        self.mode = mode
        self.notice = notice  # why the index lives in memory, when it does
        self.lock = threading.RLock()
        self.generation = 0  # bumped by every change, for the vector cache
        self.provider: Optional[str] = None  # the embedding provider's fingerprint: the cache's key
        self.cache_entries = 50_000
        self.vec = _load_sqlite_vec(conn)  # nearest neighbours in SQLite when sqlite-vec is installed
        self.vector_cache_bytes = VECTOR_CACHE_BYTES  # the packed vectors' bound (D-OPENCLAW-COSINE)
        self._vectors: Optional[
            Tuple[Tuple[Tuple[int, int], int], cosine.Columns, Dict[int, Tuple[str, int, int]]]
        ] = None
        # (version, (FTS5 expression, limit) -> its best chunk ids and their BM25 ranks), least recently used first
        self.ranked_terms = RANKED_TERMS
        self._ranked: Tuple[Tuple[int, int], Dict[Tuple[str, int], Tuple[array.array[int], array.array[float]]]] = (
            (-1, -1),
            {},
        )
        self._embedded: Optional[Tuple[Tuple[int, int], Optional[str]]] = None  # (version, provider): all embedded
        self._live: Optional[Tuple[int, List[str], str, List[int]]] = None  # the paths, for `_paths_holding`

    # -- opening --

    @classmethod
    def open(cls, disk: Files, settings: Dict[str, str], mode: Optional[str] = None) -> Index:
        """The index in the workspace's bookkeeping folder, or a temporary one (see the module
        docstring). `settings` (format, chunking, embedding model) must match what the file was
        built with, else it is emptied."""
        mode = mode or ("fts5" if fts5_available() else "python")
        for attempt in range(2):
            try:
                conn, handle = _open_file(disk, settings, mode)
                return cls(conn, mode, None, handle)
            except IndexProblem as problem:
                reason = problem.reason
            if attempt == 0:
                try:
                    disk.drop_index()
                except FsProblem as problem:
                    reason = io_reason(problem.code)
                    break
        return cls.in_memory(settings, reason, mode)

    @classmethod
    def in_memory(
        cls, settings: Dict[str, str], reason: Optional[str], mode: Optional[str] = None, cache_kib: int = 8_192
    ) -> Index:
        """A private index that lives as long as this object; `reason` says why, when it is a fallback.

        It is SQLite's anonymous temporary database, not `:memory:` (D-OPENCLAW-PRIVATE-INDEX): at most
        `cache_kib` of its pages stay in memory and the rest goes to a file SQLite makes in its temporary
        folder, removes from the folder at once (no other process can open it by name) and frees on close.
        A `:memory:` index held about 4 MiB of memory per MiB of notes, and the model writes the notes."""
        mode = mode or ("fts5" if fts5_available() else "python")
        conn = sqlite3.connect("", check_same_thread=False, isolation_level=None)
        conn.execute(f"PRAGMA cache_size = -{max(64, int(cache_kib))}")
        conn.execute("PRAGMA trusted_schema = OFF")
        _create(conn, mode, settings)
        return cls(conn, mode, reason)

    def held(self) -> Dict[str, int]:
        """What this index keeps where: `cache_kib`, the most of its pages SQLite keeps in memory;
        `database_bytes`, its size; `in_memory` 1 when the whole database lives in memory anyway (a
        private index on a SQLite built to keep temporary databases in memory: `SQLITE_TEMP_STORE` 2 or 3)."""
        with self.lock:
            cache = int(self.conn.execute("PRAGMA cache_size").fetchone()[0])
            pages = int(self.conn.execute("PRAGMA page_count").fetchone()[0])
            size = int(self.conn.execute("PRAGMA page_size").fetchone()[0])
            options = {str(row[0]) for row in self.conn.execute("PRAGMA compile_options")}
        temp_in_memory = bool(options & {"TEMP_STORE=2", "TEMP_STORE=3"})
        return {
            "cache_kib": -cache if cache < 0 else cache * size // 1024,
            "database_bytes": pages * size,
            "in_memory": int(self._handle is None and temp_in_memory),
        }

    def close(self) -> None:
        with self.lock:
            self.conn.close()
            if self._handle is not None:
                self._handle.release()
                self._handle = None

    # -- refreshing --

    def refresh(
        self, disk: Files, limits: OpenClawLimits, folders: Optional[Dict[Tuple[str, ...], FolderState]] = None
    ) -> Refreshed:
        """Bring the index up to date with every memory file on disk (the full scan); the folders
        entered are recorded in `folders`."""
        return self.reconcile(disk, limits, disk.scan(limits.max_indexed_files, folders), lambda path: True)

    def reconcile(
        self,
        disk: Files,
        limits: OpenClawLimits,
        scanned: Dict[Tuple[str, ...], FileState],
        scope: Callable[[str], bool],
        below: Optional[str] = None,
    ) -> Refreshed:
        """Make the index's files within `scope` (a test on paths) the `scanned` ones: a file is read
        again only when its device, inode, size or modification time changed; files gone are dropped.
        The difference is taken inside the write transaction, so two processes cannot both apply it.
        `below` (a folder's path) narrows what is read of the index to the files below it, by the
        path column's index: a subtree costs what is in it, not the whole index."""
        current = {paths.relative(parts): (parts, state) for parts, state in scanned.items()}
        with self.lock, self._transaction():
            if below is None:
                rows = self.conn.execute("SELECT path, dev, ino, size, mtime_ns FROM files")
            else:  # "0" follows "/" in code point order: [below/, below0) is everything below
                rows = self.conn.execute(
                    "SELECT path, dev, ino, size, mtime_ns FROM files WHERE path >= ? AND path < ?",
                    (below + "/", below + "0"),
                )
            known = {row[0]: tuple(row[1:]) for row in rows if scope(row[0])}
            removed = [path for path in known if path not in current]
            stale = sorted(path for path, (_, state) in current.items() if known.get(path) != tuple(state))
            return self._apply(disk, limits, known, removed, [(path, *current[path]) for path in stale])

    def refresh_paths(self, disk: Files, limits: OpenClawLimits, changed: Iterable[str]) -> Refreshed:
        """Bring the index up to date for the files `changed` names (paths below the workspace):
        what a source of changes reported, read without scanning the rest."""
        wanted = sorted(set(changed))
        if not wanted:
            return Refreshed(0, 0, 0, 0)
        found: Dict[str, Tuple[Tuple[str, ...], FileState]] = {}
        for path in wanted:
            parts = tuple(path.split("/"))
            state = disk.state_of(parts)
            if state is not None:
                found[path] = (parts, state)
        with self.lock, self._transaction():
            known: Dict[str, Tuple[int, ...]] = {}
            for path in wanted:
                row = self.conn.execute("SELECT dev, ino, size, mtime_ns FROM files WHERE path = ?", (path,)).fetchone()
                if row is not None:
                    known[path] = tuple(row)
            removed = [path for path in known if path not in found]
            stale = [
                (path, *found[path]) for path in wanted if path in found and known.get(path) != tuple(found[path][1])
            ]
            return self._apply(disk, limits, known, removed, stale)

    def _apply(
        self,
        disk: Files,
        limits: OpenClawLimits,
        known: Dict[str, Tuple[int, ...]],
        removed: List[str],
        stale: List[Tuple[str, Tuple[str, ...], FileState]],
    ) -> Refreshed:
        for path in removed:
            self._drop(path)
        indexed = []
        for path, parts, state in stale:
            self._drop(path)
            if self._add(disk, path, parts, state, limits):
                indexed.append(path)
        if removed or stale:
            self.generation += 1
        added = sum(1 for path in indexed if path not in known)
        return Refreshed(added, len(indexed) - added, len(removed), len(stale) - len(indexed))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def _drop(self, path: str) -> None:
        ids = [row[0] for row in self.conn.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
        if ids:
            self.conn.executemany(_DROP_TERMS[self.mode], [(chunk,) for chunk in ids])
            self.conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
        row = self.conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is not None:
            self.conn.execute(_DROP_PATH[self.mode], (row[0],))
            self.conn.execute("DELETE FROM files WHERE id = ?", (row[0],))

    def _add(self, disk: Files, path: str, parts: Tuple[str, ...], scanned: FileState, limits: OpenClawLimits) -> bool:
        """Index one file; False when it is skipped: recorded as such until it changes (too big, not
        UTF-8), or not recorded at all (gone, or not a single-link regular file any more)."""
        if scanned.size > limits.max_index_file_bytes:
            self._add_file(path, scanned, _SKIPPED)
            return False
        got = disk.read_file(parts, limits.max_index_file_bytes)
        if got is None:
            return False
        data, state = got
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            self._add_file(path, state, _SKIPPED)
            return False
        pieces = chunks.chunk_text(
            content, limits.chunk_tokens, limits.chunk_overlap_tokens, per_entry=paths.is_curated(parts)
        )
        file_id = self._add_file(path, state, len(pieces))
        if self.mode == "fts5":
            self.conn.execute("INSERT INTO paths_fts(rowid, path) VALUES (?, ?)", (file_id, path))
        else:
            self._post("path_postings", "file", file_id, terms(path))
        for piece in pieces:
            counts = collections.Counter(terms(piece.text)) if self.mode == "python" else None
            length = sum(counts.values()) if counts is not None else 0  # FTS5 counts its own lengths
            vocab = list(dict.fromkeys(words(piece.text)))  # the boost's words, cut once here, not per search
            distinct = len(vocab)
            digest = content_hash(piece.text)
            cached = None
            if self.provider is not None:
                cached = self.conn.execute(
                    "SELECT vector FROM embedding_cache WHERE provider = ? AND hash = ?", (self.provider, digest)
                ).fetchone()
            cursor = self.conn.execute(
                "INSERT INTO chunks(path, start_line, end_line, text, length, words, hash, embedding, vocab) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    path,
                    piece.start_line,
                    piece.end_line,
                    piece.text,
                    length,
                    distinct,
                    digest,
                    cached[0] if cached else None,
                    " ".join(vocab),
                ),
            )
            chunk = cursor.lastrowid
            if counts is None:
                self.conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (chunk, piece.text))
            else:
                self.conn.executemany(
                    "INSERT INTO postings(term, chunk, count, length) VALUES (?, ?, ?, ?)",
                    [(term, chunk, count, length) for term, count in counts.items()],
                )
        return True

    def _add_file(self, path: str, state: FileState, count: int) -> int:
        cursor = self.conn.execute(
            "INSERT INTO files(path, dev, ino, size, mtime_ns, chunks, key_path, key_base, key_stem) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (path, *state, count, *path_keys(path)),
        )
        return int(cursor.lastrowid or 0)

    def _post(self, table: str, column: str, row: int, found: List[str]) -> None:
        counts = collections.Counter(found)
        length = sum(counts.values())
        self.conn.executemany(
            _POST[table],
            [(term, row, count, length) for term, count in counts.items()],
        )

    # -- embeddings and their cache --

    def embed_missing(self, embed: Embed, batch: int = 64) -> int:
        """Give every chunk without one an embedding: from the cache when its text was embedded by the
        same provider before, else from `embed`, a batch per transaction. Returns how many texts were
        sent to `embed`; whatever it raises is left to the caller (the chunks done keep theirs)."""
        sent = 0
        with self.lock:
            if self._embedded == (self._version(), self.provider):
                return 0  # nothing changed since every chunk had one: no scan of the table per search
            rows = list(self.conn.execute("SELECT id, text, hash FROM chunks WHERE embedding IS NULL ORDER BY id"))
            if self.provider is not None and rows:
                with self._transaction():
                    self.conn.execute(
                        "UPDATE chunks SET embedding = (SELECT vector FROM embedding_cache AS cache "
                        "WHERE cache.provider = ? AND cache.hash = chunks.hash) WHERE embedding IS NULL",
                        (self.provider,),
                    )
                rows = list(self.conn.execute("SELECT id, text, hash FROM chunks WHERE embedding IS NULL ORDER BY id"))
                self.generation += 1
            for start in range(0, len(rows), batch):
                part = rows[start : start + batch]
                vectors = embed([text for _, text, _ in part])
                sent += len(part)
                if len(vectors) != len(part):
                    raise ValueError("the embedding function returned a different number of vectors")
                packed = [(_pack(vector), chunk, digest) for (chunk, _, digest), vector in zip(part, vectors)]
                with self._transaction():
                    self.conn.executemany("UPDATE chunks SET embedding = ? WHERE id = ?", [row[:2] for row in packed])
                    if self.provider is not None:
                        self.conn.executemany(
                            "INSERT OR REPLACE INTO embedding_cache(provider, hash, vector) VALUES (?, ?, ?)",
                            [(self.provider, digest, blob) for blob, _, digest in packed],
                        )
                self.generation += 1
            if self.provider is not None and sent:
                self._prune_cache()
            self._embedded = (self._version(), self.provider)
        return sent

    def _prune_cache(self) -> None:
        """Keep the cache within its bound: entries no chunk uses go first."""
        (total,) = self.conn.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()
        if total <= self.cache_entries:
            return
        with self._transaction():
            self.conn.execute("DELETE FROM embedding_cache WHERE hash NOT IN (SELECT hash FROM chunks)")

    # -- searching --

    def body(self, expression: Optional[str], query: str, limit: int) -> List[Tuple[Hit, float]]:
        """The `limit` best chunks matching the FTS5 expression (every term), best first, each with its
        BM25 rank; `query` is what the expression was built from (for the index without FTS5)."""
        if expression is None or limit <= 0:
            return []
        with self.lock:
            if self.mode == "fts5":
                version = self._version()
                if self._ranked[0] != version:
                    self._ranked = (version, {})
                known = self._ranked[1].get((expression, limit))
                if known is not None:  # the same term since the index last changed: its order is known
                    self._ranked[1][(expression, limit)] = self._ranked[1].pop((expression, limit))
                    hits = self._hits(known[0].tolist())
                    return list(zip(hits, known[1].tolist()))
                try:
                    rows = list(
                        self.conn.execute(
                            "SELECT c.id, c.path, c.start_line, c.end_line, c.text, c.words, c.vocab, f.rank "
                            "FROM chunks_fts AS f JOIN chunks AS c ON c.id = f.rowid "
                            "WHERE chunks_fts MATCH ? ORDER BY f.rank LIMIT ?",
                            (expression, limit),
                        )
                    )
                except sqlite3.OperationalError:
                    return []  # a run FTS5 reads as no term at all
                found = [
                    (Hit(row[0], row[1], row[2], row[3], row[4], words=row[5], vocab=row[6]), float(row[7]))
                    for row in rows
                ]
                remembered = self._ranked[1]
                while remembered and len(remembered) >= self.ranked_terms:
                    del remembered[next(iter(remembered))]  # the least recently used
                if self.ranked_terms > 0:
                    remembered[(expression, limit)] = (
                        array.array("q", [hit.chunk for hit, _ in found]),
                        array.array("d", [rank for _, rank in found]),
                    )
                return found
            ranked = self._python_ranks(
                "postings", "chunk", "SELECT COUNT(*), COALESCE(SUM(length), 0) FROM chunks", query, limit
            )
            return [(self._hit(chunk), rank) for chunk, rank in ranked]

    def path_matches(
        self, expression: Optional[str], query: str, substrings: Sequence[str] = ()
    ) -> List[Tuple[str, float]]:
        """Every file whose path matches the FTS5 expression, with its BM25 rank over the paths (0 for
        every file without an expression), and whose path, NFC, holds each of `substrings` in any case
        (OpenClaw's path search of non-ASCII words: `search.path_plans`)."""
        if expression is None and not substrings:
            return []
        matchers = [re.compile(re.escape(unicodedata.normalize("NFC", text)), re.IGNORECASE) for text in substrings]
        if expression is None:
            return [(path, 0.0) for path in self._paths_holding(matchers)]
        return [
            (path, rank)
            for path, rank in self._path_ranks(expression, query)
            if all(matcher.search(unicodedata.normalize("NFC", path)) for matcher in matchers)
        ]

    def _paths_holding(self, matchers: Sequence[re.Pattern[str]]) -> List[str]:
        """The indexed paths whose NFC form each matcher finds: one pass of each over every path at once
        (the paths joined by line feeds, kept until the index changes), not a loop over the paths."""
        with self.lock:
            if self._live is None or self._live[0] != self.generation:
                listed = [row[0] for row in self.conn.execute("SELECT path FROM files WHERE chunks > 0 ORDER BY path")]
                normal = [unicodedata.normalize("NFC", path) for path in listed]
                starts, offset = [], 0
                for path in normal:
                    starts.append(offset)
                    offset += len(path) + 1
                self._live = (self.generation, listed, "\n".join(normal), starts)
            _, listed, joined, starts = self._live
        chosen: Optional[Set[int]] = None
        for matcher in matchers:
            found = {bisect.bisect_right(starts, match.start()) - 1 for match in matcher.finditer(joined)}
            chosen = found if chosen is None else chosen & found
        return [listed[number] for number in sorted(chosen or ())]

    def _path_ranks(self, expression: str, query: str) -> List[Tuple[str, float]]:
        with self.lock:
            if self.mode == "fts5":
                try:
                    rows = self.conn.execute(
                        "SELECT f.path, p.rank FROM paths_fts AS p JOIN files AS f ON f.id = p.rowid "
                        "WHERE paths_fts MATCH ? AND f.chunks > 0",
                        (expression,),
                    )
                    return [(row[0], float(row[1])) for row in rows]
                except sqlite3.OperationalError:
                    return []
            found = self._python_ranks(
                "path_postings",
                "file",
                "SELECT COUNT(*), COALESCE(SUM(length), 0) FROM "
                "(SELECT file, MAX(length) AS length FROM path_postings GROUP BY file)",
                query,
                1 << 30,
            )
            result = []
            for file_id, rank in found:
                row = self.conn.execute("SELECT path FROM files WHERE id = ? AND chunks > 0", (file_id,)).fetchone()
                if row is not None:
                    result.append((row[0], rank))
            return result

    def exact_paths(self, key: str, limit: int) -> List[Tuple[str, int]]:
        """The files a query naming a file names (`key` normalised as `path_keys`), each with
        OpenClaw's specificity: 3 the whole path, 2 the last name, 1 the name without extension."""
        if not key or key == "." or limit <= 0:
            return []
        found: Dict[str, int] = {}
        with self.lock:
            for path, whole, base, stem in self.conn.execute(
                "SELECT path, key_path, key_base, key_stem FROM files "
                "WHERE chunks > 0 AND (key_path = ?1 OR key_base = ?1 OR key_stem = ?1)",
                (key,),
            ):
                if whole == key:
                    found[path] = 3
                elif "/" not in key:
                    found[path] = 2 if base == key else 1 if stem == key else 0
        ranked = sorted(((path, level) for path, level in found.items() if level), key=lambda item: (-item[1], item[0]))
        return ranked[:limit]

    def first_chunk(self, path: str) -> Optional[Hit]:
        with self.lock:
            row = self.conn.execute(
                "SELECT id, path, start_line, end_line, text, words, vocab FROM chunks WHERE path = ? "
                "ORDER BY start_line, end_line, id LIMIT 1",
                (path,),
            ).fetchone()
        return None if row is None else Hit(row[0], row[1], row[2], row[3], row[4], words=row[5], vocab=row[6])

    def _python_ranks(
        self, table: str, column: str, totals: str, query: str, limit: int
    ) -> Sequence[Tuple[int, float]]:
        wanted: List[str] = []
        for run in fts_terms(query):
            for term in terms(run):
                if term not in wanted:
                    wanted.append(term)
        if not wanted:
            return []
        postings: List[Dict[int, int]] = []
        lengths: Dict[int, int] = {}
        for term in wanted:
            posting: Dict[int, int] = {}
            for row, count, length in self.conn.execute(
                _POSTED[table],
                (term,),
            ):
                posting[row] = count
                lengths[row] = length
            if not posting:
                return []
            postings.append(posting)
        total, length_sum = self.conn.execute(totals).fetchone()
        return bm25.ordered(bm25.ranks(postings, lengths, total, length_sum / total if total else 0.0), limit)

    def nearest(
        self, query: Sequence[float], limit: int, arithmetic: Optional[cosine.IntegerDots] = None
    ) -> List[Hit]:
        """The `limit` chunks whose embeddings have the greatest cosine similarity to `query` (ties: the
        lower chunk id first). In SQLite with sqlite-vec; otherwise over the packed columns of
        `refmem/openclaw/cosine.py` (or the provider's `arithmetic` over the same integers) while they fit
        `vector_cache_bytes`, else read row by row (no cache)."""
        probe = _pack_array(query)
        if _norm(probe) == 0 or limit <= 0:
            return []
        with self.lock:
            if self.vec:
                return self._nearest_vec(probe, limit)
            kept = self._vector_cache(len(probe), arithmetic)
            if kept is not None:
                columns, places = kept
                texts = Texts(self)
                for score, chunk in cosine.best(columns, probe.tolist(), limit):
                    path, start_line, end_line = places[chunk]
                    lazy = LazyTextHit(chunk, path, start_line, end_line, "")
                    lazy.texts, lazy.vector_score = texts, score
                    texts.hits.append(lazy)
                return list(texts.hits)
            scored = self._nearest_streamed(probe, limit)
            hits = self._hits([chunk for _, chunk in scored], ranking_words=False)
            for hit, (score, _) in zip(hits, scored):
                hit.vector_score = score
            return hits

    def _nearest_streamed(self, probe: array.array[float], limit: int) -> List[Tuple[float, int]]:
        """The in-process cosine with nothing kept: each stored vector read, scored, dropped."""
        probe_norm = _norm(probe)
        values = probe.tolist()  # operator.mul over an array and a list: 2.6x float.__mul__ over two arrays
        best: List[Tuple[float, int]] = []  # a heap of (score, -chunk): the worst kept on top
        for chunk, blob in self.conn.execute("SELECT id, embedding FROM chunks WHERE embedding IS NOT NULL"):
            vector = array.array("f")
            vector.frombytes(blob)
            norm = _norm(vector)
            if len(vector) != len(probe) or norm == 0:
                continue
            item = (sum(map(operator.mul, vector, values)) / (norm * probe_norm), -chunk)
            if len(best) < limit:
                heapq.heappush(best, item)
            elif item > best[0]:
                heapq.heapreplace(best, item)
        return [(score, -negated) for score, negated in sorted(best, reverse=True)]

    def _nearest_vec(self, probe: array.array[float], limit: int) -> List[Hit]:
        """The same choice as the in-process cosine, computed by sqlite-vec (cosine distance = 1 - similarity)."""
        hits = []
        for chunk, distance in self.conn.execute(
            "SELECT id, vec_distance_cosine(embedding, ?) AS distance FROM chunks "
            "WHERE embedding IS NOT NULL AND length(embedding) = ? ORDER BY distance, id LIMIT ?",
            (probe.tobytes(), len(probe) * 4, limit),
        ):
            if distance is None:
                continue
            hit = self._hit(chunk)
            hit.vector_score = 1.0 - float(distance)
            hits.append(hit)
        return hits

    def _version(self) -> Tuple[int, int]:
        """This object's changes and SQLite's count of what other connections committed to the file."""
        return self.generation, int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def _hit(self, chunk: int) -> Hit:
        return self._hits([chunk])[0]

    def _hits(self, chunks: Sequence[int], ranking_words: bool = True) -> List[Hit]:
        """The chunks' hits, in the order asked, in one query per 500 ids; without their ranking words
        (`words`, `vocab`: only the keyword boost reads them) when `ranking_words` is False, which spares
        the vector candidates of a hybrid search a third of what they read."""
        found: Dict[int, Hit] = {}
        columns = "id, path, start_line, end_line, text" + (", words, vocab" if ranking_words else "")
        for start in range(0, len(chunks), 500):
            batch = list(chunks[start : start + 500])
            marks = ",".join("?" * len(batch))  # only placeholders go into the statement
            statement = f"SELECT {columns} FROM chunks WHERE id IN ({marks})"  # noqa: S608  # nosec B608
            if ranking_words:
                for row in self.conn.execute(statement, batch):
                    found[row[0]] = Hit(row[0], row[1], row[2], row[3], row[4], words=row[5], vocab=row[6])
            else:
                for row in self.conn.execute(statement, batch):
                    found[row[0]] = Hit(row[0], row[1], row[2], row[3], row[4])
        return [found[chunk] for chunk in chunks]

    def _texts(self, chunks: Sequence[int]) -> Dict[int, str]:
        """The chunks' texts (a chunk gone since is left out)."""
        found: Dict[int, str] = {}
        with self.lock:
            for start in range(0, len(chunks), 500):
                batch = list(chunks[start : start + 500])
                marks = ",".join("?" * len(batch))  # only placeholders go into the statement
                statement = f"SELECT id, text FROM chunks WHERE id IN ({marks})"  # noqa: S608  # nosec B608
                found.update((int(chunk), str(text)) for chunk, text in self.conn.execute(statement, batch))
        return found

    def _vector_cache(
        self, dims: int, arithmetic: Optional[cosine.IntegerDots] = None
    ) -> Optional[Tuple[cosine.Columns, Dict[int, Tuple[str, int, int]]]]:
        """The packed vectors of `dims` components and each one's chunk place (path, first and last line),
        kept until the index changes; None when they would take more than `vector_cache_bytes` (then each
        search reads the vectors from SQLite). With the places kept, a vector candidate is made without
        reading its row; its text is read only if the search looks at it (D-OPENCLAW-COSINE-TOP)."""
        version = self._version()
        kept = self._vectors
        if kept is not None and kept[0] == (version, dims) and kept[1].arithmetic is arithmetic:
            return kept[1], kept[2]
        self._vectors = None  # the old columns go before the new ones are built
        count, path_bytes = self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(length(CAST(path AS BLOB))), 0) FROM chunks "
            "WHERE embedding IS NOT NULL AND length(embedding) = ?",
            (dims * 4,),
        ).fetchone()
        if cosine.packed_bytes(int(count), dims) + PLACE_BYTES * int(count) + int(path_bytes) > self.vector_cache_bytes:
            return None
        rows = []
        places: Dict[int, Tuple[str, int, int]] = {}
        paths: Dict[str, str] = {}  # one string per file, shared by its chunks
        for chunk, blob, path, start_line, end_line in self.conn.execute(
            "SELECT id, embedding, path, start_line, end_line FROM chunks "
            "WHERE embedding IS NOT NULL AND length(embedding) = ?",
            (dims * 4,),
        ):
            vector = array.array("f")
            vector.frombytes(blob)
            rows.append((int(chunk), vector.tolist()))
            places[int(chunk)] = (paths.setdefault(path, path), int(start_line), int(end_line))
        columns = cosine.pack(rows, dims, arithmetic)
        self._vectors = ((version, dims), columns, places)
        return columns, places

    def counts(self) -> Tuple[int, int]:
        """(files indexed, chunks)."""
        with self.lock:
            files = self.conn.execute("SELECT COUNT(*) FROM files WHERE chunks >= 0").fetchone()[0]
            total = self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return int(files), int(total)


def _load_sqlite_vec(conn: sqlite3.Connection) -> bool:
    """Load sqlite-vec into `conn` when the package is installed and this SQLite may load extensions;
    False otherwise (the in-process cosine is used)."""
    try:
        import sqlite_vec  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return False
    enable = getattr(conn, "enable_load_extension", None)
    if enable is None:
        return False
    try:
        enable(True)
        try:
            sqlite_vec.load(conn)
        finally:
            enable(False)
        conn.execute("SELECT vec_distance_cosine(?, ?)", (_pack([1.0]), _pack([1.0]))).fetchone()
    except (sqlite3.Error, AttributeError, OSError):
        return False
    return True


def _pack_array(vector: Sequence[float]) -> array.array[float]:
    values = array.array("f")
    for value in vector:
        number = float(value)
        values.append(number if math.isfinite(number) else 0.0)
    return values


def _pack(vector: Sequence[float]) -> bytes:
    return _pack_array(vector).tobytes()


TEXT_BATCH = 32
"""How many vector candidates' texts are read at once, the first asked for and those after it."""


class Texts:
    """The texts of one search's vector candidates, read when first asked for, `TEXT_BATCH` at a time in
    the candidates' order (best cosine first: MMR reads the best-ranked ones), so that a search reads
    the few dozen texts it looks at in one or two statements instead of all 200."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.hits: List[LazyTextHit] = []
        self.reads = 0  # statements run (tests count them)
        self.read = 0  # texts read

    def load(self, wanted: LazyTextHit) -> None:
        pending = [hit for hit in self.hits if hit.__dict__.get("_text") is None]
        # By identity: a hit's `==` compares its fields, the text among them.
        at = next((n for n, hit in enumerate(pending) if hit is wanted), -1)
        if at < 0:
            pending, at = [wanted], 0
        batch = (pending[at:] + pending[:at])[:TEXT_BATCH]
        found = self.index._texts([hit.chunk for hit in batch])
        self.reads += 1
        self.read += len(batch)
        for hit in batch:
            hit.__dict__["_text"] = found.get(hit.chunk, "")  # "": the chunk is gone since


class LazyTextHit(Hit):
    """A vector candidate made from the kept places: its text is read from the index when first asked for
    (`Texts`: MMR reads a few dozen of 200 candidates' texts, the answer only the chosen ones'), or given
    by a keyword hit of the same chunk."""

    texts: Optional[Texts] = None

    @property
    def text(self) -> str:
        found = self.__dict__.get("_text")
        if found is None:
            if self.texts is None:
                return ""
            self.texts.load(self)
            found = self.__dict__["_text"]
        return str(found)

    @text.setter
    def text(self, value: str) -> None:
        self.__dict__["_text"] = value or None  # "" (the constructor's): not read yet


def _norm(vector: array.array[float]) -> float:
    return math.sqrt(sum(value * value for value in vector))


def _create(conn: sqlite3.Connection, mode: str, settings: Dict[str, str]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for statement in _SCHEMAS[mode]:
        conn.execute(statement)
    conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(settings.items()))
    conn.execute("COMMIT")


def _open_file(disk: Files, settings: Dict[str, str], mode: str) -> Tuple[sqlite3.Connection, IndexHandle]:
    """Connect to the index file; IndexProblem when it cannot be used as it is. The handle is the
    caller's to release once the connection is closed."""
    try:
        handle = disk.index_handle()
    except FsProblem as problem:
        raise IndexProblem(_index_reason(problem)) from None
    conn: Optional[sqlite3.Connection] = None
    try:
        header = handle.header(100)
        if header and not _rollback_database(header):
            raise IndexProblem("the index file is not one this version wrote")
        conn = sqlite3.connect(handle.location, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA journal_mode = MEMORY")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA busy_timeout = 10000")
        if not handle.confirm():
            raise IndexProblem("the index file changed while it was being opened")
        _check(conn, settings, mode)
    except BaseException as error:
        if conn is not None:
            conn.close()
        handle.release()
        if isinstance(error, sqlite3.Error):
            raise IndexProblem("the index file is damaged") from None
        if isinstance(error, FsProblem):
            raise IndexProblem(_index_reason(error)) from None
        raise
    return conn, handle


def _index_reason(problem: FsProblem) -> str:
    """Why the index file could not be opened, in words that name no path."""
    if problem.code in ("not_regular", "link", "hard_linked", "escaped", "parent_not_dir"):
        return IO_REASONS["bookkeeping"]  # something else squats its name
    return io_reason(problem.code)


def _rollback_database(header: bytes) -> bool:
    """A SQLite database in the rollback-journal format (a WAL one would make SQLite open side files)."""
    return len(header) == 100 and header[:16] == _SQLITE_MAGIC and header[18:20] in _ROLLBACK_VERSIONS


def _check(conn: sqlite3.Connection, settings: Dict[str, str], mode: str) -> None:
    """Make the opened file ours: new ones get the schema; others must match it exactly."""
    found = _schema(conn)
    if not found:
        _create(conn, mode, settings)
        return
    if found != _expected_schema(mode):
        raise IndexProblem("the index file has another layout")
    if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
        raise IndexProblem("the index file is damaged")
    stored = dict(conn.execute("SELECT key, value FROM meta"))
    if stored != settings:
        conn.execute("BEGIN IMMEDIATE")
        for statement in _EMPTY[mode]:
            conn.execute(statement)
        conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(settings.items()))
        conn.execute("COMMIT")
