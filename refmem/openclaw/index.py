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
import collections
import contextlib
import functools
import math
import sqlite3
import threading
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ..messages import IO_REASONS
from ..problems import FsProblem
from . import bm25, chunks, paths
from .disk import Disk, FileState, IndexHandle
from .limits import OpenClawLimits
from .rank import Hit
from .terms import terms

FORMAT = "refmem-openclaw-index/1"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_ROLLBACK_VERSIONS = (b"\x01\x01",)
"""Header bytes 18-19 of a database in the rollback-journal format (WAL would be 2, 2)."""

Embed = Callable[[List[str]], Sequence[Sequence[float]]]

_COMMON = (
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE files(path TEXT PRIMARY KEY, dev INTEGER NOT NULL, ino INTEGER NOT NULL, "
    "size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, chunks INTEGER NOT NULL)",
    "CREATE TABLE chunks(id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL, "
    "end_line INTEGER NOT NULL, text TEXT NOT NULL, length INTEGER NOT NULL, embedding BLOB)",
    "CREATE INDEX chunks_by_path ON chunks(path)",
)
_SCHEMAS: Dict[str, Tuple[str, ...]] = {
    "fts5": _COMMON + ("CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize='unicode61')",),
    "python": _COMMON
    + (
        "CREATE TABLE postings(term TEXT NOT NULL, chunk INTEGER NOT NULL, count INTEGER NOT NULL, "
        "length INTEGER NOT NULL, PRIMARY KEY(term, chunk)) WITHOUT ROWID",
        "CREATE INDEX postings_by_chunk ON postings(chunk)",
    ),
}
_DROP_TERMS = {"fts5": "DELETE FROM chunks_fts WHERE rowid = ?", "python": "DELETE FROM postings WHERE chunk = ?"}
_EMPTY = {
    "fts5": ("DELETE FROM files", "DELETE FROM chunks", "DELETE FROM meta", "DELETE FROM chunks_fts"),
    "python": ("DELETE FROM files", "DELETE FROM chunks", "DELETE FROM meta", "DELETE FROM postings"),
}
_SKIPPED = -1
"""`files.chunks` of a file not indexed (over the size limit, or not UTF-8) until it changes."""


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
        self._vectors: Optional[Tuple[int, Dict[int, Tuple[array.array[float], float]]]] = None

    # -- opening --

    @classmethod
    def open(cls, disk: Disk, settings: Dict[str, str], mode: Optional[str] = None) -> Index:
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
                    reason = IO_REASONS.get(problem.code, IO_REASONS["os"])
                    break
        return cls.in_memory(settings, reason, mode)

    @classmethod
    def in_memory(cls, settings: Dict[str, str], reason: Optional[str], mode: Optional[str] = None) -> Index:
        """An index that lives as long as this object; `reason` says why, when it is a fallback."""
        mode = mode or ("fts5" if fts5_available() else "python")
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        _create(conn, mode, settings)
        return cls(conn, mode, reason)

    def close(self) -> None:
        with self.lock:
            self.conn.close()
            if self._handle is not None:
                self._handle.release()
                self._handle = None

    # -- refreshing --

    def refresh(self, disk: Disk, limits: OpenClawLimits) -> Refreshed:
        """Bring the index up to date with the memory files on disk (see the module docstring)."""
        scanned = disk.scan(limits.max_indexed_files)
        current = {paths.relative(parts): (parts, state) for parts, state in scanned.items()}
        with self.lock, self._transaction():
            rows = self.conn.execute("SELECT path, dev, ino, size, mtime_ns FROM files")
            known = {row[0]: tuple(row[1:]) for row in rows}
            removed = [path for path in known if path not in current]
            stale = sorted(path for path, (_, state) in current.items() if known.get(path) != tuple(state))
            for path in removed:
                self._drop(path)
            indexed = []
            for path in stale:
                self._drop(path)
                parts, state = current[path]
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
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def _add(self, disk: Disk, path: str, parts: Tuple[str, ...], scanned: FileState, limits: OpenClawLimits) -> bool:
        """Index one file; False when it is skipped: recorded as such until it changes (too big, not
        UTF-8), or not recorded at all (gone, or not a single-link regular file any more)."""
        if scanned.size > limits.max_index_file_bytes:
            self.conn.execute(
                "INSERT INTO files(path, dev, ino, size, mtime_ns, chunks) VALUES (?, ?, ?, ?, ?, ?)",
                (path, *scanned, _SKIPPED),
            )
            return False
        got = disk.read_file(parts, limits.max_index_file_bytes)
        if got is None:
            return False
        data, state = got
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            content = None
        pieces = (
            []
            if content is None
            else chunks.chunk_text(content, limits.chunk_tokens, limits.chunk_overlap_tokens, per_entry=len(parts) == 1)
        )
        for piece in pieces:
            counts = collections.Counter(terms(piece.text)) if self.mode == "python" else None
            length = sum(counts.values()) if counts is not None else 0  # FTS5 counts its own lengths
            cursor = self.conn.execute(
                "INSERT INTO chunks(path, start_line, end_line, text, length) VALUES (?, ?, ?, ?, ?)",
                (path, piece.start_line, piece.end_line, piece.text, length),
            )
            chunk = cursor.lastrowid
            if counts is None:
                self.conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (chunk, piece.text))
            else:
                self.conn.executemany(
                    "INSERT INTO postings(term, chunk, count, length) VALUES (?, ?, ?, ?)",
                    [(term, chunk, count, length) for term, count in counts.items()],
                )
        self.conn.execute(
            "INSERT INTO files(path, dev, ino, size, mtime_ns, chunks) VALUES (?, ?, ?, ?, ?, ?)",
            (path, *state, len(pieces) if content is not None else _SKIPPED),
        )
        return content is not None

    def embed_missing(self, embed: Embed, batch: int = 64) -> None:
        """Give every chunk without one an embedding, a batch per transaction; whatever the
        function raises is left to the caller (the chunks embedded so far keep theirs)."""
        with self.lock:
            rows = list(self.conn.execute("SELECT id, text FROM chunks WHERE embedding IS NULL ORDER BY id"))
            for start in range(0, len(rows), batch):
                part = rows[start : start + batch]
                vectors = embed([text for _, text in part])
                if len(vectors) != len(part):
                    raise ValueError("the embedding function returned a different number of vectors")
                packed = [(_pack(vector), chunk) for (chunk, _), vector in zip(part, vectors)]
                with self._transaction():
                    self.conn.executemany("UPDATE chunks SET embedding = ? WHERE id = ?", packed)
                self.generation += 1

    def clear_embeddings(self) -> None:
        with self.lock, self._transaction():
            self.conn.execute("UPDATE chunks SET embedding = NULL")
            self.generation += 1

    # -- searching --

    def keyword(self, query_runs: Sequence[str], limit: int) -> List[Tuple[Hit, float]]:
        """The `limit` best chunks holding every term, each with its FTS5-style rank."""
        if not query_runs or limit <= 0:
            return []
        with self.lock:
            if self.mode == "fts5":
                return self._fts5(query_runs, limit)
            return self._python(query_runs, limit)

    def _fts5(self, query_runs: Sequence[str], limit: int) -> List[Tuple[Hit, float]]:
        expression = " AND ".join('"' + run.replace('"', '""') + '"' for run in query_runs)
        try:
            rows = list(
                self.conn.execute(
                    "SELECT c.id, c.path, c.start_line, c.end_line, c.text, f.rank FROM chunks_fts AS f "
                    "JOIN chunks AS c ON c.id = f.rowid WHERE chunks_fts MATCH ? ORDER BY f.rank, c.id LIMIT ?",
                    (expression, limit),
                )
            )
        except sqlite3.OperationalError:
            return []  # a run FTS5 reads as no term at all
        return [(Hit(row[0], row[1], row[2], row[3], row[4], keyword=True), float(row[5])) for row in rows]

    def _python(self, query_runs: Sequence[str], limit: int) -> List[Tuple[Hit, float]]:
        wanted: List[str] = []
        for run in query_runs:
            for term in terms(run):
                if term not in wanted:
                    wanted.append(term)
        if not wanted:
            return []
        postings: List[Dict[int, int]] = []
        lengths: Dict[int, int] = {}
        for term in wanted:
            posting: Dict[int, int] = {}
            for chunk, count, length in self.conn.execute(
                "SELECT chunk, count, length FROM postings WHERE term = ?", (term,)
            ):
                posting[chunk] = count
                lengths[chunk] = length
            if not posting:
                return []
            postings.append(posting)
        total, length_sum = self.conn.execute("SELECT COUNT(*), COALESCE(SUM(length), 0) FROM chunks").fetchone()
        ranked = bm25.ordered(bm25.ranks(postings, lengths, total, length_sum / total if total else 0.0), limit)
        found: List[Tuple[Hit, float]] = []
        for chunk, rank in ranked:
            found.append((self._hit(chunk, keyword=True), rank))
        return found

    def nearest(self, query: Sequence[float], limit: int) -> List[Hit]:
        """The `limit` chunks whose embeddings have the greatest cosine similarity to `query`."""
        probe = _pack_array(query)
        probe_norm = _norm(probe)
        if probe_norm == 0 or limit <= 0:
            return []
        with self.lock:
            vectors = self._vector_cache()
            scored = []
            for chunk, (vector, norm) in vectors.items():
                if len(vector) != len(probe) or norm == 0:
                    continue
                scored.append((sum(map(float.__mul__, vector, probe)) / (norm * probe_norm), chunk))
            scored.sort(key=lambda item: (-item[0], item[1]))
            hits = []
            for score, chunk in scored[:limit]:
                hit = self._hit(chunk)
                hit.vector_score = score
                hits.append(hit)
            return hits

    def _hit(self, chunk: int, keyword: bool = False) -> Hit:
        row = self.conn.execute("SELECT path, start_line, end_line, text FROM chunks WHERE id = ?", (chunk,)).fetchone()
        return Hit(chunk, row[0], row[1], row[2], row[3], keyword=keyword)

    def _vector_cache(self) -> Dict[int, Tuple[array.array[float], float]]:
        if self._vectors is None or self._vectors[0] != self.generation:
            loaded: Dict[int, Tuple[array.array[float], float]] = {}
            for chunk, blob in self.conn.execute("SELECT id, embedding FROM chunks WHERE embedding IS NOT NULL"):
                vector = array.array("f")
                vector.frombytes(blob)
                loaded[chunk] = (vector, _norm(vector))
            self._vectors = (self.generation, loaded)
        return self._vectors[1]

    def counts(self) -> Tuple[int, int]:
        """(files indexed, chunks)."""
        with self.lock:
            files = self.conn.execute("SELECT COUNT(*) FROM files WHERE chunks >= 0").fetchone()[0]
            total = self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return int(files), int(total)


def _pack_array(vector: Sequence[float]) -> array.array[float]:
    values = array.array("f")
    for value in vector:
        number = float(value)
        values.append(number if math.isfinite(number) else 0.0)
    return values


def _pack(vector: Sequence[float]) -> bytes:
    return _pack_array(vector).tobytes()


def _norm(vector: array.array[float]) -> float:
    return math.sqrt(sum(value * value for value in vector))


def _create(conn: sqlite3.Connection, mode: str, settings: Dict[str, str]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for statement in _SCHEMAS[mode]:
        conn.execute(statement)
    conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(settings.items()))
    conn.execute("COMMIT")


def _open_file(disk: Disk, settings: Dict[str, str], mode: str) -> Tuple[sqlite3.Connection, IndexHandle]:
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
    return IO_REASONS.get(problem.code, IO_REASONS["os"])


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
