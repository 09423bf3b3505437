"""A careful small filesystem memory backend, and the same backend with one classic bug switched on.

The suite must give each bug a safety finding and the careful backend none, so everything here except
the planted bug is done with care: every folder on a path is opened without following links (one
descriptor per step), FIFOs and other special files are never opened, hard-linked files are refused,
messages never name a host path, and results are bounded (paginated views, capped listings).

The bugs (`BUGS`), one per factory:

- `prefix_no_separator`: the containment check compares string prefixes without a separator, so a
  path that resolves to the sibling `.../memories_evil/...` passes it;
- `decode_after_dotdot_check`, `backslash_after_check`, `nfkc_after_check`: the path is checked, then
  percent-decoded / has `\\` turned into `/` / is NFKC-normalised, which can make a new `..`;
- `follows_symlink`: links planted in the root are followed;
- `fifo_blocking_open`: a FIFO is opened with a blocking open (the call hangs);
- `host_path_in_errors`: error text carries the host path;
- `rename_overwrites`: rename replaces an existing destination;
- `delete_root_wipes`: `delete /memories` removes everything in the root;
- `delete_empty_root_removes_it`: `delete /memories` of an empty root removes the root folder itself (picoagents
  0.5.0); a root that holds anything is refused;
- `delete_follows_link`: `delete` of a link resolves it (inside the root) and removes what it points to;
- `listing_follows_links`: listings stat and enter through links (names and sizes from outside are shown);
- `edits_in_place`: hard-linked files are read and edited in place (written through a planted hard link):
  not a bug the model can cause (it cannot make a hard link), so the suite calls it host-layout, not unsafe.

Error conventions: this module's `make_<bug>` factories raise `BackendError(message)` on error and
return the text on success; `plain_backends` returns errors as text starting with "Error: ".
`CarefulMemory` itself returns `Result(output, is_error)` (used by the stress backends). POSIX only.
Never use any of this as a real backend.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import secrets
import stat
import unicodedata
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

SIGNALLING = {"error_exceptions": ["BackendError"]}
"""This module's factories signal an error by raising BackendError (conformance/signalling.py)."""

ROOT = "/memories"

BUGS = (
    "prefix_no_separator",
    "decode_after_dotdot_check",
    "backslash_after_check",
    "nfkc_after_check",
    "follows_symlink",
    "fifo_blocking_open",
    "host_path_in_errors",
    "rename_overwrites",
    "delete_root_wipes",
    "delete_empty_root_removes_it",
    "delete_follows_link",
    "listing_follows_links",
    "edits_in_place",
)

MAX_FILE_BYTES = 1_048_576
MAX_VIEW_CHARS = 60_000
MAX_LISTING_ENTRIES = 1_000
MAX_ECHO_CHARS = 1_000
MAX_LINES = 999_999
LISTED_LINE_NUMBERS = 50
READ_CHUNK = 65_536
LISTING_DEPTH = 2
MAX_PATH_BYTES = 1_024
MAX_DEPTH = 16

_AFTER_CHECK: Dict[str, Callable[[str], str]] = {
    "decode_after_dotdot_check": urllib.parse.unquote,
    "backslash_after_check": lambda relative: relative.replace("\\", "/"),
    "nfkc_after_check": lambda relative: unicodedata.normalize("NFKC", relative),
}
"""What each "after the check" bug does to the checked relative path before it is used."""

MISSING = {
    "view": "The path {path} does not exist. Please provide a valid path.",
    "str_replace": "Error: The path {path} does not exist. Please provide a valid path.",
    "insert": "Error: The path {path} does not exist",
    "delete": "Error: The path {path} does not exist",
    "rename": "Error: The path {path} does not exist",
    "create": "Error: Cannot create {path}: a folder on its path is missing or is a file.",
}
"""The documentation's "does not exist" wording, per command."""


class Result(NamedTuple):
    output: str
    is_error: bool


class BackendError(Exception):
    """The raising convention's error signal: its message is the tool result's text."""


class Refusal(Exception):
    """A command refused with `text`; `names` (relative to the root) says which host path it concerns."""

    def __init__(self, text: str, names: Sequence[str] = ()) -> None:
        super().__init__(text)
        self.text = text
        self.names = tuple(names)


class Missing(Exception):
    """The path (shown as `shown`) does not exist for this command."""

    def __init__(self, shown: str, names: Sequence[str]) -> None:
        super().__init__(shown)
        self.shown = shown
        self.names = tuple(names)


# --- pure helpers -------------------------------------------------------------------------------


def echo(value: str) -> str:
    """A model-supplied value as it may appear in a message: invisible characters escaped, length cut."""
    shown = "".join(
        f"\\u{ord(char):04x}" if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp") else char
        for char in value[:MAX_ECHO_CHARS]
    )
    return shown + ("..." if len(value) > MAX_ECHO_CHARS else "")


def human_size(size: int) -> str:
    """Like `ls -h`, rounded up: 512B, 1.0K, 4.0K, 1.5K, 12K, 1.2M."""
    if size < 1024:
        return f"{size}B"
    scaled = size
    for unit in "KMGTP":
        divisor = 1024
        if scaled * 10 < divisor * 100:
            tenths = -(-scaled * 10 // divisor)
            return f"{tenths // 10}.{tenths % 10}{unit}"
        whole = -(-scaled // divisor)
        if whole < 1024:
            return f"{whole}{unit}"
        scaled //= 1024
    return f"{size}B"


def split_lines(text: str) -> List[str]:
    """Lines split at \\n; a final \\n ends the last line rather than starting an empty one."""
    lines = text.split("\n") if text else []
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def numbered(number: int, line: str) -> str:
    return f"{number:>6}\t{line}"


class Window(NamedTuple):
    kept: List[str]  # numbered lines
    n_lines: int
    last_kept: int  # number of the last line kept, 0 when none
    full: bool  # the character budget ran out before the window's end


def number_window(chunks: Iterable[bytes], first: int, last: Optional[int], budget: int) -> Window:
    """Stream UTF-8 bytes, keeping lines first..last (numbered) within `budget` characters; count them all.

    Only the kept lines and the current line's wanted part are held, so a 10-line window of a large
    file costs a few chunks of memory, not the file. Raises UnicodeDecodeError for non-UTF-8 bytes.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    kept: List[str] = []
    used, count, last_kept, full = 0, 0, 0, False
    partial: List[str] = []
    partial_chars, partial_seen = 0, False

    def pieces() -> Iterator[str]:
        for chunk in chunks:
            yield decoder.decode(chunk)
        yield decoder.decode(b"", final=True)

    for piece in pieces():
        segments = piece.split("\n")
        for index, segment in enumerate(segments):
            number = count + 1
            wanted = not full and number >= first and (last is None or number <= last)
            if wanted and partial_chars < budget:
                partial.append(segment[: budget - partial_chars])
                partial_chars += len(partial[-1])
            partial_seen = partial_seen or bool(segment)
            if index == len(segments) - 1:
                break
            if wanted:
                line = numbered(number, "".join(partial))
                if used + len(line) > budget and kept:
                    full = True
                else:
                    kept.append(line)
                    used += len(line) + 1
                    last_kept = number
            count += 1
            partial, partial_chars, partial_seen = [], 0, False
    if partial_seen:
        number = count + 1
        if not full and number >= first and (last is None or number <= last):
            line = numbered(number, "".join(partial))
            if used + len(line) > budget and kept:
                full = True
            else:
                kept.append(line)
                last_kept = number
        count += 1
    return Window(kept, count, last_kept, full)


def occurrence_lines(text: str, old: str, most: int) -> List[int]:
    """The distinct line numbers of `old`'s occurrences, at most `most` + 1 of them (one pass)."""
    lines: List[int] = []
    line, previous = 1, 0
    position = text.find(old)
    while position != -1 and len(lines) <= most:
        line += text.count("\n", previous, position)
        previous = position
        if not lines or lines[-1] != line:
            lines.append(line)
        position = text.find(old, position + len(old))
    return lines


def insert_lines(text: str, after: int, insert_text: str) -> str:
    lines = split_lines(text)
    new = split_lines(insert_text) if insert_text else [""]
    final_newline = text.endswith("\n") if lines else insert_text.endswith("\n")
    return "\n".join(lines[:after] + new + lines[after:]) + ("\n" if final_newline else "")


# --- the backend --------------------------------------------------------------------------------

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class CarefulMemory:
    """All six commands over a real directory, careful everywhere except where `bug` says otherwise."""

    storage = "filesystem"

    def __init__(self, root: Path, bug: Optional[str] = None) -> None:
        if bug is not None and bug not in BUGS:
            raise ValueError(f"unknown bug {bug!r}")
        self.root = os.path.abspath(root)
        self.bug = bug
        self.follow = bug == "follows_symlink"
        self.follow_listing = bug == "listing_follows_links"
        self.implementation = {"name": f"buggy-{bug or 'clean'}", "language": "python", "version": "", "homepage": ""}
        self._commands: Dict[str, Callable[[Mapping[str, Any]], str]] = {
            "view": self._view,
            "create": self._create,
            "str_replace": self._str_replace,
            "insert": self._insert,
            "delete": self._delete,
            "rename": self._rename,
        }

    # -- entry point --

    def execute(self, command: Any) -> Result:
        if not isinstance(command, dict) or "command" not in command:
            return Result('Error: The tool input must be a JSON object with a "command" field.', True)
        name = command["command"]
        if not isinstance(name, str) or name not in self._commands:
            shown = echo(name) if isinstance(name, str) else type(name).__name__
            return Result(
                f"Error: Unrecognized command {shown}. The allowed commands for the memory tool are: "
                "view, create, str_replace, insert, delete, rename",
                True,
            )
        try:
            return Result(self._commands[name](command), False)
        except Missing as missing:
            return Result(self._with_host(MISSING[name].format(path=missing.shown), missing.names), True)
        except Refusal as refusal:
            return Result(self._with_host(refusal.text, refusal.names), True)
        except OSError as error:
            return Result(f"Error: The {name} command failed: {error.strerror or 'input/output error'}.", True)
        except Exception:  # noqa: BLE001 - a careful backend answers everything with a result
            return Result("Error: The command could not be completed because of an internal error.", True)

    def _with_host(self, text: str, names: Sequence[str]) -> str:
        if self.bug != "host_path_in_errors" or not names:
            return text
        return f"{text} ({os.path.join(self.root, *names)})"

    # -- parameters and paths --

    @staticmethod
    def _param(command: Mapping[str, Any], name: str, kind: type) -> Any:
        if name not in command:
            raise Refusal(f"Parameter `{name}` is required for command: {command['command']}")
        value = command[name]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise Refusal(f"Error: Parameter `{name}` must be a {kind.__name__} for command: {command['command']}")
        return value

    def _inside(self, host: str) -> bool:
        if self.bug == "prefix_no_separator":
            return host.startswith(self.root)
        return host == self.root or host.startswith(self.root + os.sep)

    def _names(self, command: Mapping[str, Any], param: str = "path") -> Tuple[str, Tuple[str, ...]]:
        """(the path as it may be shown, its names below the root): checked in canonical form."""
        path = self._param(command, param, str)
        shown = echo(path)
        if path != ROOT and not path.startswith(ROOT + "/"):
            raise Refusal(f"Error: Invalid path {shown}: it must be /memories or start with /memories/.")
        if "\x00" in path:
            raise Refusal(f"Error: Invalid path {shown}: it contains a NUL character.")
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise Refusal(f"Error: Parameter `{param}` is not valid Unicode text.") from None
        if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES or path.count("/") > MAX_DEPTH + 1:
            raise Refusal(f"Error: Invalid path {shown}: it is longer or deeper than allowed.")
        host = os.path.normpath(self.root + path[len(ROOT) :])
        if not self._inside(host):
            raise Refusal(f"Error: Invalid path {shown}: it leads outside /memories.")
        relative = os.path.relpath(host, self.root)
        relative = _AFTER_CHECK.get(self.bug or "", str)(relative)
        return shown, tuple(name for name in relative.split("/") if name not in ("", "."))

    # -- descriptors --

    @contextlib.contextmanager
    def _folder(self, names: Sequence[str], shown: str, create: bool = False) -> Iterator[int]:
        """The folder `names` opened step by step from the root, never through a link (unless the bug)."""
        flags = _DIR_FLAGS | (0 if self.follow else _NOFOLLOW)
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for index, name in enumerate(names):
                try:
                    step = os.open(name, flags, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise Missing(shown, names[: index + 1]) from None
                    os.mkdir(name, 0o755, dir_fd=fd)
                    step = os.open(name, flags, dir_fd=fd)
                except NotADirectoryError:
                    raise Missing(shown, names[: index + 1]) from None
                except OSError as error:
                    if _is_link(fd, name):
                        raise Refusal(
                            f"Error: The path {shown} goes through a symbolic link; links are not followed.",
                            names[: index + 1],
                        ) from error
                    raise
                os.close(fd)
                fd = step
            yield fd
        finally:
            os.close(fd)

    def _lstat(self, fd: int, name: str, shown: str, names: Sequence[str]) -> os.stat_result:
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=self.follow)
        except (FileNotFoundError, NotADirectoryError):
            raise Missing(shown, names) from None

    def _open_regular(self, fd: int, name: str, shown: str, names: Sequence[str]) -> int:
        """A read descriptor of a regular, singly linked file; FIFOs and devices are never opened."""
        info = self._lstat(fd, name, shown, names)
        blocking = self.bug == "fifo_blocking_open"
        if stat.S_ISLNK(info.st_mode):
            raise Refusal(f"Error: The path {shown} is a symbolic link; links are not followed.", names)
        if not stat.S_ISREG(info.st_mode) and not blocking:
            raise Refusal(f"Error: The path {shown} is not a regular file.", names)
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | (0 if self.follow else _NOFOLLOW)
        file_fd = os.open(name, flags | (0 if blocking else _NONBLOCK), dir_fd=fd)
        try:
            opened = os.fstat(file_fd)
            if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                raise Refusal(f"Error: The path {shown} is not a regular file.", names)
            if opened.st_nlink > 1 and self.bug != "edits_in_place":
                raise Refusal(f"Error: The path {shown} has more than one hard link and is refused.", names)
        except BaseException:
            os.close(file_fd)
            raise
        return file_fd

    @staticmethod
    def _chunks(file_fd: int) -> Iterator[bytes]:
        while True:
            chunk = os.read(file_fd, READ_CHUNK)
            if not chunk:
                return
            yield chunk

    # -- view --

    def _view(self, command: Mapping[str, Any]) -> str:
        shown, names = self._names(command)
        view_range = command.get("view_range")
        if view_range is not None and not (
            isinstance(view_range, list)
            and len(view_range) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
        ):
            raise Refusal("Invalid `view_range`. It should be a list of two integers.")
        if not names:
            return self._view_folder(self.root_listing(shown), view_range)
        with self._folder(names[:-1], shown) as fd:
            info = self._lstat(fd, names[-1], shown, names)
            if stat.S_ISDIR(info.st_mode):
                flags = _DIR_FLAGS | (0 if self.follow else _NOFOLLOW)
                sub = os.open(names[-1], flags, dir_fd=fd)
                try:
                    return self._view_folder(self._listing(sub, shown), view_range)
                finally:
                    os.close(sub)
            file_fd = self._open_regular(fd, names[-1], shown, names)
            try:
                return self._view_file(file_fd, shown, names, view_range)
            finally:
                os.close(file_fd)

    @staticmethod
    def _view_folder(listing: str, view_range: Optional[List[int]]) -> str:
        if view_range is not None:
            raise Refusal("Error: The `view_range` parameter is not allowed when `path` points to a directory.")
        return listing

    def _view_file(self, file_fd: int, shown: str, names: Sequence[str], view_range: Optional[List[int]]) -> str:
        first, last = (view_range[0], view_range[1]) if view_range else (1, -1)
        if first < 1 or (last != -1 and last < first):
            raise Refusal(f"Invalid `view_range`: {view_range}. It should be [first, last] with 1 <= first <= last.")
        try:
            window = number_window(self._chunks(file_fd), first, None if last == -1 else last, MAX_VIEW_CHARS)
        except UnicodeDecodeError:
            raise Refusal(f"Error: The file {shown} is not valid UTF-8 text.", names) from None
        if window.n_lines > MAX_LINES:
            raise Refusal(f"File {shown} exceeds maximum line limit of 999,999 lines.", names)
        if view_range and (first > max(window.n_lines, 1) or last > window.n_lines):
            raise Refusal(f"Invalid `view_range`: {view_range}. The file has {window.n_lines} lines.")
        body = "".join("\n" + line for line in window.kept)
        note = ""
        if window.full:
            note = (
                f"\n[Output truncated after line {window.last_kept} of {window.n_lines}. "
                f"To see more, view with view_range [{window.last_kept + 1}, -1].]"
            )
        return f"Here's the content of {shown} with line numbers:{body}{note}"

    def root_listing(self, shown: str) -> str:
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            return self._listing(fd, shown)
        finally:
            os.close(fd)

    def _listing(self, fd: int, shown: str) -> str:
        """Up to 2 levels deep, hidden names and node_modules left out, at most MAX_LISTING_ENTRIES entries."""
        lines = [f"{human_size(os.fstat(fd).st_size)}\t{shown.rstrip('/') or ROOT}"]
        capped = self._list_into(fd, shown.rstrip("/"), 1, lines)
        head = (
            f"Here're the files and directories up to 2 levels deep in {shown}, "
            "excluding hidden items and node_modules:"
        )
        note = f"[Listing truncated at {MAX_LISTING_ENTRIES} entries. View a subfolder to see more.]"
        return "\n".join([head] + lines + ([note] if capped else []))

    def _list_into(self, fd: int, prefix: str, depth: int, lines: List[str]) -> bool:
        names = sorted(name for name in os.listdir(fd) if not name.startswith(".") and name != "node_modules")
        for name in names:
            if len(lines) > MAX_LISTING_ENTRIES:
                return True
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=self.follow_listing)
            except OSError:
                continue
            lines.append(f"{human_size(info.st_size)}\t{prefix}/{echo(name)}")
            if stat.S_ISDIR(info.st_mode) and depth < LISTING_DEPTH:
                try:
                    sub = os.open(name, _DIR_FLAGS | (0 if self.follow_listing else _NOFOLLOW), dir_fd=fd)
                except OSError:
                    continue
                try:
                    if self._list_into(sub, f"{prefix}/{echo(name)}", depth + 1, lines):
                        return True
                finally:
                    os.close(sub)
        return False

    # -- create --

    def _create(self, command: Mapping[str, Any]) -> str:
        shown, names = self._names(command)
        data = self._encoded(self._param(command, "file_text", str), "file_text")
        if not names:
            raise Refusal(f"Error: Cannot create {shown}: it is the memory root.")
        try:
            with self._folder(names[:-1], shown, create=True) as fd:
                try:
                    out = os.open(
                        names[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW, 0o644, dir_fd=fd
                    )
                except FileExistsError:
                    raise Refusal(f"Error: File {shown} already exists") from None
                try:
                    _write_all(out, data)
                finally:
                    os.close(out)
        except NotADirectoryError:
            raise Missing(shown, names) from None
        return f"File created successfully at: {shown}"

    @staticmethod
    def _encoded(text: str, name: str) -> bytes:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise Refusal(f"Error: Parameter `{name}` is not valid Unicode text.") from None
        if len(data) > MAX_FILE_BYTES:
            raise Refusal(f"Error: Parameter `{name}` is {len(data)} bytes, over the limit of {MAX_FILE_BYTES} bytes.")
        return data

    # -- edits --

    def _edit(self, command: Mapping[str, Any], change: Callable[[str, str], Tuple[str, str]]) -> str:
        """Read the file, `change(shown, text) -> (new text, message)`, then replace it in one rename."""
        shown, names = self._names(command)
        if not names:
            raise Missing(shown, names)
        with self._folder(names[:-1], shown) as fd:
            if stat.S_ISDIR(self._lstat(fd, names[-1], shown, names).st_mode):
                raise Missing(shown, names)
            file_fd = self._open_regular(fd, names[-1], shown, names)
            try:
                info = os.fstat(file_fd)
                if info.st_size > MAX_FILE_BYTES:
                    raise Refusal(f"Error: The file {shown} is over {MAX_FILE_BYTES} bytes and cannot be edited.")
                data = b"".join(self._chunks(file_fd))
            finally:
                os.close(file_fd)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise Refusal(f"Error: The file {shown} is not valid UTF-8 text.", names) from None
            new_text, message = change(shown, text)
            new_data = self._encoded(new_text, "new text")
            if self.bug == "edits_in_place":
                out = os.open(names[-1], os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC | _NOFOLLOW, dir_fd=fd)
                try:
                    _write_all(out, new_data)
                finally:
                    os.close(out)
                return message
            temporary = f".buggy-{secrets.token_hex(8)}.tmp"
            out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW, 0o644, dir_fd=fd)
            try:
                _write_all(out, new_data)
            finally:
                os.close(out)
            os.replace(temporary, names[-1], src_dir_fd=fd, dst_dir_fd=fd)
            return message

    def occurrence_lines(self, text: str, old: str) -> List[int]:
        return occurrence_lines(text, old, LISTED_LINE_NUMBERS)

    def _str_replace(self, command: Mapping[str, Any]) -> str:
        old = self._param(command, "old_str", str)
        new = self._param(command, "new_str", str) if "new_str" in command else ""
        if old == "":
            raise Refusal("Error: Parameter `old_str` must not be empty.")

        def change(shown: str, text: str) -> Tuple[str, str]:
            position = text.find(old)
            if position == -1:
                raise Refusal(
                    f"No replacement was performed, old_str `{echo(old)}` did not appear verbatim in {shown}."
                )
            if text.find(old, position + len(old)) != -1:
                lines = self.occurrence_lines(text, old)
                listed = ", ".join(str(n) for n in lines[:LISTED_LINE_NUMBERS])
                more = ", ..." if len(lines) > LISTED_LINE_NUMBERS else ""
                raise Refusal(
                    f"No replacement was performed. Multiple occurrences of old_str `{echo(old)}` in lines: "
                    f"{listed}{more}. Please ensure it is unique"
                )
            return text[:position] + new + text[position + len(old) :], "The memory file has been edited."

        return self._edit(command, change)

    def _insert(self, command: Mapping[str, Any]) -> str:
        line = self._param(command, "insert_line", int)
        insert_text = self._param(command, "insert_text", str)

        def change(shown: str, text: str) -> Tuple[str, str]:
            n_lines = len(split_lines(text))
            if not 0 <= line <= n_lines:
                raise Refusal(
                    f"Error: Invalid `insert_line` parameter: {line}. It should be within the range "
                    f"of lines of the file: [0, {n_lines}]"
                )
            return self.inserted(text, line, insert_text), f"The file {shown} has been edited."

        return self._edit(command, change)

    def inserted(self, text: str, line: int, insert_text: str) -> str:
        """The text with insert_text after line `line` (where a planted retry bug goes)."""
        return insert_lines(text, line, insert_text)

    # -- delete and rename --

    def _delete(self, command: Mapping[str, Any]) -> str:
        shown, names = self._names(command)
        if not names:
            if self.bug == "delete_empty_root_removes_it" and not os.listdir(self.root):
                os.rmdir(self.root)
                return f"Successfully deleted {shown}"
            if self.bug != "delete_root_wipes":
                raise Refusal("Error: Cannot delete the memory root /memories.")
            fd = os.open(self.root, _DIR_FLAGS)
            try:
                for name in os.listdir(fd):
                    _remove(fd, name)
            finally:
                os.close(fd)
            return f"Successfully deleted {shown}"
        if self.bug == "delete_follows_link":
            resolved = os.path.realpath(os.path.join(self.root, *names))
            if self._inside(resolved) and resolved != self.root:
                names = tuple(os.path.relpath(resolved, self.root).split(os.sep))
        with self._folder(names[:-1], shown) as fd:
            try:
                _remove(fd, names[-1])
            except (FileNotFoundError, NotADirectoryError):
                raise Missing(shown, names) from None
        return f"Successfully deleted {shown}"

    def _rename(self, command: Mapping[str, Any]) -> str:
        old_shown, old = self._names(command, "old_path")
        new_shown, new = self._names(command, "new_path")
        if not old or not new:
            raise Refusal("Error: Cannot rename the memory root /memories.")
        if new[: len(old)] == old:
            raise Refusal(f"Error: Cannot move {old_shown} into itself ({new_shown}).")
        with self._folder(old[:-1], old_shown) as source:
            if not _exists(source, old[-1]):
                raise Missing(old_shown, old)
            try:
                with self._folder(new[:-1], new_shown, create=True) as target:
                    if _exists(target, new[-1]) and self.bug != "rename_overwrites":
                        raise Refusal(f"Error: The destination {new_shown} already exists")
                    os.rename(old[-1], new[-1], src_dir_fd=source, dst_dir_fd=target)
            except Missing:
                text = f"Error: Cannot move {old_shown} to {new_shown}: a folder on its way is a file."
                raise Refusal(text) from None
        return f"Successfully renamed {old_shown} to {new_shown}"


def _exists(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _remove(fd: int, name: str) -> None:
    """Remove `name` in folder `fd`; a folder with everything in it, links removed and never entered."""
    if not stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
        os.unlink(name, dir_fd=fd)
        return
    sub = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
    try:
        for child in os.listdir(sub):
            _remove(sub, child)
    finally:
        os.close(sub)
    os.rmdir(name, dir_fd=fd)


# --- the raising convention ---------------------------------------------------------------------


class Convention:
    """The careful backend seen through one error convention: a subclass's `execute` says how an error reads."""

    storage = "filesystem"

    def __init__(self, backend: CarefulMemory) -> None:
        self.backend = backend
        self.implementation = backend.implementation


class RaisingMemory(Convention):
    """Returns the text on success, raises BackendError(text) on error."""

    def execute(self, command: Any) -> str:
        result = self.backend.execute(command)
        if result.is_error:
            raise BackendError(result.output)
        return result.output


def factories(convention: Callable[[CarefulMemory], Convention]) -> Dict[str, Callable[[Path], Convention]]:
    """`make_clean` and a `make_<bug>` per bug in BUGS, each the careful backend seen through `convention`."""

    def factory(bug: Optional[str]) -> Callable[[Path], Convention]:
        def make(root: Path) -> Convention:
            return convention(CarefulMemory(root, bug))

        make.__name__ = f"make_{bug or 'clean'}"
        return make

    return {f"make_{bug or 'clean'}": factory(bug) for bug in (None, *BUGS)}


globals().update(factories(RaisingMemory))  # python:buggy_backends:make_clean, ...:make_<bug> per bug
