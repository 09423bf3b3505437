"""Backends that fail one deployment check each (conformance/deployment.py), built on the reference handler.

- `make_unlocked`: str_replace and insert read the file, work on it for a few milliseconds and write it back
  (atomically, by a rename) with no lock: two sessions editing one file at once lose one edit;
- `make_tenant_mixup`: takes `tenant=` and ignores it: every tenant is served the same memories;
- `make_half_apply`: str_replace and insert hold a lock across processes (so no edit is lost and no reader sees
  a part) but write the file in place, 32 KB at a time with a pause between: a call cut off part way leaves
  a file that is neither the old text nor the new;
- `make_lease_lock`: str_replace and insert hold a lock across processes with a lease: a writer waits for the
  lock at most LEASE seconds, then takes it over (the holder is presumed dead, as a store with lock timeouts
  does). Each writes its whole file by a rename after a pause in proportion to its size (a slow store). Small
  edits never outlive the lease, so none is lost and every file is whole even when its process is killed; a
  large edit left running on an abandoned thread outlives it, a newer edit goes ahead, and the late finish
  writes the text it read before, without the newer edit.

Everything else goes to `refmem.MemoryHandler` on the same root, which passes every check: a finding is the
planted mistake's. Plain paths only (`/memories/` and lower-case names) take the planted road; anything else,
and any tenant but the default one, goes to the reference. POSIX only; never use any of this as a real backend.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from refmem import MemoryHandler

_PLAIN = re.compile(r"/memories/[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*")
RMW_PAUSE = 0.01
"""Seconds the unlocked backend works between reading a file and writing it back."""
CHUNK = 32 * 1024
CHUNK_PAUSE = 0.15
"""Seconds the half-applying backend pauses between two chunks of one write."""
LEASE = 0.2
"""Seconds a writer of the lease-locked backend waits for the lock before it takes it over."""
WRITE_RATE = 100_000
"""Bytes a second the lease-locked backend writes (a 64 KB edit outlives the lease; one of a few KB does not)."""


def _edited(text: str, command: Dict[str, Any]) -> Optional[str]:
    """The file's new text after a str_replace or insert, or None when the reference should answer."""
    if command.get("command") == "str_replace":
        old, new = command.get("old_str"), command.get("new_str", "")
        if not isinstance(old, str) or not old or not isinstance(new, str) or text.count(old) != 1:
            return None
        return text.replace(old, new)
    line, insert = command.get("insert_line"), command.get("insert_text")
    lines = text.splitlines(keepends=True)
    if not isinstance(line, int) or isinstance(line, bool) or not isinstance(insert, str):
        return None
    if not 0 <= line <= len(lines):
        return None
    return "".join(lines[:line]) + insert + ("" if insert.endswith("\n") else "\n") + "".join(lines[line:])


class _Planted:
    """The reference, except for str_replace and insert on plain paths, which `_write_edit` does."""

    def __init__(self, root: Path, tenant: Optional[str] = None) -> None:
        self.root = Path(root)
        self.planted = tenant is None
        self.inner = MemoryHandler(self.root, tenant=tenant)

    def close(self) -> None:
        self.inner.close()

    def execute(self, command: Any) -> Any:
        path = command.get("path") if isinstance(command, dict) else None
        wanted = isinstance(command, dict) and command.get("command") in ("str_replace", "insert")
        if self.planted and wanted and isinstance(path, str) and _PLAIN.fullmatch(path) and ".." not in path:
            file = self.root / path[len("/memories/") :]
            if file.is_file() and not file.is_symlink():
                done = self._write_edit(file, command)
                if done is not None:
                    return done
        return self._other(command)

    def _other(self, command: Any) -> Any:
        return self.inner.execute(command)

    def _write_edit(self, file: Path, command: Dict[str, Any]) -> Optional[str]:
        raise NotImplementedError


class Unlocked(_Planted):
    def _write_edit(self, file: Path, command: Dict[str, Any]) -> Optional[str]:
        new = _edited(file.read_text("utf-8"), command)
        if new is None:
            return None
        time.sleep(RMW_PAUSE)  # the work between the read and the write, with nothing held
        handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=".planted-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(new)
        os.replace(temporary, file)
        return f"The file {command['path']} has been edited."


class HalfApply(_Planted):
    def _locked(self, kind: int, work: Callable[[], Any]) -> Any:
        with open(self.root / ".planted-lock", "a") as lock:
            fcntl.flock(lock, kind)
            try:
                return work()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _other(self, command: Any) -> Any:
        return self._locked(fcntl.LOCK_SH, lambda: self.inner.execute(command))  # readers wait for a write

    def _write_edit(self, file: Path, command: Dict[str, Any]) -> Optional[str]:
        def work() -> Optional[str]:
            new = _edited(file.read_text("utf-8"), command)
            if new is None:
                return None
            data = new.encode("utf-8")
            with open(file, "r+b") as out:
                out.truncate(0)
                for start in range(0, len(data), CHUNK):
                    if start:
                        time.sleep(CHUNK_PAUSE)  # a slow store: the rest of the text is still on its way
                    out.write(data[start : start + CHUNK])
                    out.flush()
            return f"The file {command['path']} has been edited."

        return self._locked(fcntl.LOCK_EX, work)  # type: ignore[no-any-return]


class LeaseLock(_Planted):
    def _write_edit(self, file: Path, command: Dict[str, Any]) -> Optional[str]:
        with open(self.root / ".planted-lease", "a") as lock:
            held = _take(lock, LEASE)
            try:
                new = _edited(file.read_text("utf-8"), command)
                if new is None:
                    return None
                data = new.encode("utf-8")
                handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=".planted-")
                with os.fdopen(handle, "wb") as out:
                    out.write(data)
                time.sleep(len(data) / WRITE_RATE)  # a slow store; the lease may run out meanwhile
                os.replace(temporary, file)
                return f"The file {command['path']} has been edited."
            finally:
                if held:
                    fcntl.flock(lock, fcntl.LOCK_UN)


def _take(lock: Any, lease: float) -> bool:
    """Take the lock, waiting at most `lease` seconds; then go ahead without it (False)."""
    deadline = time.monotonic() + lease
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)


def make_lease_lock(root: Path, tenant: Optional[str] = None) -> LeaseLock:
    return LeaseLock(root, tenant)


def make_unlocked(root: Path, tenant: Optional[str] = None) -> Unlocked:
    return Unlocked(root, tenant)


def make_half_apply(root: Path, tenant: Optional[str] = None) -> HalfApply:
    return HalfApply(root, tenant)


def make_tenant_mixup(root: Path, tenant: Optional[str] = None) -> MemoryHandler:
    return MemoryHandler(Path(root))  # the tenant is taken and dropped: one store for everybody


def make_reference(root: Path, tenant: Optional[str] = None) -> MemoryHandler:
    return MemoryHandler(Path(root), tenant=tenant)


class _Private:
    """Memories held in the process: several sessions on one root would each see their own."""

    storage = "own"

    def __init__(self) -> None:
        self.files: Dict[str, str] = {}

    def execute(self, command: Any) -> str:
        return "Error: this store keeps nothing"


def make_private(root: Path) -> _Private:
    return _Private()


def make_without_tenants(root: Path) -> MemoryHandler:
    return MemoryHandler(Path(root))


# --- correct backends whose views are not ours ----------------------------------------------------------------


def _odd_file_view(output: str) -> str:
    """A file view drawn another way: its own header, numbers three wide after a bar, a final newline."""
    header, _, body = output.partition("\n")
    path = header[len("Here's the content of ") : -len(" with line numbers:")]
    lines = [line.partition("\t") for line in body.split("\n")] if body else []
    return f"== {path} ==\n" + "".join(f"{int(number):>3} | {text}\n" for number, _tab, text in lines)


def _odd_folder_view(output: str) -> str:
    """A folder view drawn another way: a header of its own, then `- PATH (SIZE)` a line."""
    _header, _, body = output.partition("\n")
    items = [line.partition("\t") for line in body.split("\n")] if body else []
    return "Listing:\n" + "\n".join(f"- {path} ({size})" for size, _tab, path in items)


class OddViews:
    """The reference, its views drawn in a format of their own (every state it keeps is the reference's)."""

    def __init__(self, root: Path, tenant: Optional[str] = None, inner: Any = None) -> None:
        self.inner = inner if inner is not None else MemoryHandler(Path(root), tenant=tenant)

    def close(self) -> None:
        self.inner.close()

    def execute(self, command: Any) -> Any:
        result = self.inner.execute(command)
        output, is_error = (result, False) if isinstance(result, str) else (result.output, result.is_error)
        if is_error or not isinstance(command, dict) or command.get("command") != "view":
            return result
        if output.startswith("Here's the content of "):
            return _odd_file_view(output)
        if output.startswith("Here're the files"):
            return _odd_folder_view(output)
        return result


class QuotedViews(OddViews):
    """The reference, each line of a file view shown quoted as a JSON string: no reading of a view recovers the
    text, only the file's bytes do."""

    def execute(self, command: Any) -> Any:
        result = self.inner.execute(command)
        output = result if isinstance(result, str) else result.output
        if isinstance(command, dict) and command.get("command") == "view" and output.startswith("Here's the content"):
            _header, _, body = output.partition("\n")
            return "\n".join(json.dumps(line.partition("\t")[2]) for line in body.split("\n"))
        return result


def make_odd_views(root: Path, tenant: Optional[str] = None) -> OddViews:
    return OddViews(root, tenant)


def make_quoted_views(root: Path, tenant: Optional[str] = None) -> QuotedViews:
    return QuotedViews(root, tenant)


def make_odd_views_unlocked(root: Path, tenant: Optional[str] = None) -> OddViews:
    """The unlocked backend (it really loses edits) with the odd views."""
    return OddViews(root, tenant, inner=Unlocked(root, tenant))


# --- backends that add a newline to every file they create (as langchain-anthropic 1.7.10's filesystem does) ----


class NewlineCreates:
    """The reference, except that `create` writes `file_text` plus a newline: correct (a second create of one
    path is refused, as the reference refuses it), only its files end with one more newline than they were given."""

    def __init__(self, root: Path, tenant: Optional[str] = None) -> None:
        self.root = Path(root)
        self.inner = MemoryHandler(self.root, tenant=tenant)

    def close(self) -> None:
        self.inner.close()

    def execute(self, command: Any) -> Any:
        if isinstance(command, dict) and command.get("command") == "create" and isinstance(command.get("file_text"),
                                                                                           str):
            return self._create(command["path"], command["file_text"] + "\n")
        return self.inner.execute(command)

    def _create(self, path: Any, text: str) -> Any:
        return self.inner.execute({"command": "create", "path": path, "file_text": text})


class NewlineOverwrites(NewlineCreates):
    """`create` on a plain path writes `file_text` plus a newline whether or not the file exists (by a rename, so
    the file is always one create's text): two creates of one path both succeed and one text is lost."""

    def _create(self, path: Any, text: str) -> Any:
        if not isinstance(path, str) or not _PLAIN.fullmatch(path) or ".." in path:
            return super()._create(path, text)
        file = self.root / path[len("/memories/") :]
        file.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=".planted-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, file)
        return f"File created successfully at: {path}"


def make_newline_odd_views(root: Path, tenant: Optional[str] = None) -> OddViews:
    """Correct: a newline added to every created file, and views numbered another way."""
    return OddViews(root, tenant, inner=NewlineCreates(root, tenant))


def make_newline_overwrites(root: Path, tenant: Optional[str] = None) -> NewlineOverwrites:
    """A newline added to every created file, and a create that overwrites: one lost create per contested file."""
    return NewlineOverwrites(root, tenant)
