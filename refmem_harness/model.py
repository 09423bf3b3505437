"""A pure in-memory model of the reference semantics (docs/spec-notes.md), for the differential oracle.

The model answers one question per command: success, error, or "the notes leave this open"
(UNKNOWN), and keeps the tree a correct handler would hold afterwards. It compares outcome
classes and tree contents only, never wording. Path syntax is delegated to the reference's pure
parser (`refmem.paths.parse_path`); the parser has its own harness with its own invariants.

Objects the handler must refuse to read or edit (symbolic links, FIFOs, files with more than one
hard link, files that are not UTF-8) are one kind here, OPAQUE: content commands fail on them,
create reports them as existing, delete and rename act on the name.
"""

from __future__ import annotations

import base64
import enum
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from refmem import tool

from .sequence_layout import Fixture

Parts = Tuple[str, ...]
Node = Tuple[str, ...]  # ("dir",), ("file", text) or ("opaque",)
DIR: Node = ("dir",)
OPAQUE: Node = ("opaque",)
Tree = Dict[Parts, Node]

MAX_FILE_BYTES = 1_048_576
MAX_DEPTH = 16
MAX_PATH_BYTES = 1024


class Outcome(enum.Enum):
    OK = "ok"
    ERROR = "error"
    UNKNOWN = "unknown"


class _Unknown(Exception):
    """The notes leave this case open; stop comparing."""


def file_node(text: str) -> Node:
    return ("file", text)


def tree_from_fixtures(fixtures: List[Fixture]) -> Tree:
    tree: Tree = {(): DIR}
    for fixture in fixtures:
        parts = tuple(fixture["path"].split("/"))
        for depth in range(1, len(parts)):
            tree.setdefault(parts[:depth], DIR)
        kind = fixture["type"]
        if kind == "dir":
            tree[parts] = DIR
        elif kind == "file":
            data = base64.b64decode(fixture["base64"]) if "base64" in fixture else fixture["text"].encode()
            try:
                tree[parts] = file_node(data.decode("utf-8"))
            except UnicodeDecodeError:
                tree[parts] = OPAQUE
        elif kind in ("symlink", "fifo", "hardlink"):
            tree[parts] = OPAQUE
    return tree


def n_lines(text: str) -> int:
    if text == "":
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def is_crlf(text: str) -> bool:
    return "\n" in text and text.count("\n") == text.count("\r\n")


def count_overlapping(haystack: str, needle: str) -> int:
    count, start = 0, haystack.find(needle)
    while start != -1:
        count += 1
        start = haystack.find(needle, start + 1)
    return count


Parser = Callable[[str], Any]

REQUIRED: Dict[str, Tuple[str, ...]] = {command.name: command.required for command in tool.COMMANDS}
"""Each command's required parameters, in the order the documentation lists them (the property suite draws
commands from the same table: conformance/properties)."""
INTEGERS = frozenset(
    parameter.name for command in tool.COMMANDS for parameter in command.parameters if parameter.kind == tool.INTEGER
)
"""The parameters whose value is an integer (insert_line); every other required one is text."""


class Model:
    """The tree a correct handler holds, and the outcome class of each command on it."""

    def __init__(self, fixtures: List[Fixture], parse: Parser) -> None:
        self.tree: Tree = tree_from_fixtures(fixtures)
        self._parse = parse
        self.lost = False  # True once an UNKNOWN made the tree uncertain

    def apply(self, command: Any) -> Outcome:
        if self.lost:
            return Outcome.UNKNOWN
        try:
            ok = self._apply(command)
        except _Unknown:
            self.lost = True
            return Outcome.UNKNOWN
        return Outcome.OK if ok else Outcome.ERROR

    # --- input checks ------------------------------------------------------------------------

    _REQUIRED = REQUIRED

    def _apply(self, command: Any) -> bool:
        if not isinstance(command, dict) or not all(isinstance(key, str) for key in command):
            return False
        name = command.get("command")
        if not isinstance(name, str) or name not in self._REQUIRED:
            return False
        for param in self._REQUIRED[name]:
            value = command.get(param)
            if value is None:
                if name == "str_replace" and param == "new_str":
                    raise _Unknown()  # the notes do not say whether new_str may be left out
                return False
            if param in INTEGERS:
                if not isinstance(value, int) or isinstance(value, bool):
                    return False
            elif not isinstance(value, str) or not _valid_text(value):
                return False
        return bool(getattr(self, "_" + name)(command))

    def _path(self, raw: str) -> Optional[Any]:
        try:
            return self._parse(raw)
        except ValueError:
            return None

    def _lookup(self, parts: Parts) -> Union[str, Node]:
        """The node at parts, or "missing", or "blocked" (a non-directory on the way)."""
        for depth in range(1, len(parts)):
            node = self.tree.get(parts[:depth])
            if node is None:
                return "missing"
            if node != DIR:
                return "blocked"
        node = self.tree.get(parts)
        return "missing" if node is None else node

    def _editable(self, vpath: Any) -> Optional[str]:
        """The text of a file that view/str_replace/insert may act on, or None (an error)."""
        node = self._lookup(vpath.parts)
        if node == OPAQUE and vpath.trailing_slash:
            raise _Unknown()
        if isinstance(node, tuple) and node[0] == "file" and not vpath.trailing_slash:
            return node[1]
        return None

    # --- commands ----------------------------------------------------------------------------

    def _view(self, command: Dict[str, Any]) -> bool:
        vpath = self._path(command["path"])
        if vpath is None:
            return False
        view_range = command.get("view_range")
        if view_range is not None and not _is_range(view_range):
            return False
        if self._lookup(vpath.parts) == DIR:
            return view_range is None
        text = self._editable(vpath)
        if text is None:
            return False
        if view_range is None:
            return True
        start, end = view_range
        lines = n_lines(text)
        if not 1 <= start <= lines or end > lines:
            return False
        return bool(end == -1 or end >= start)

    def _create(self, command: Dict[str, Any]) -> bool:
        vpath = self._path(command["path"])
        if vpath is None or vpath.is_root or vpath.trailing_slash:
            return False
        if len(command["file_text"].encode("utf-8")) > MAX_FILE_BYTES:
            return False
        if not self._make_parents(vpath.parts):
            return False
        if vpath.parts in self.tree:
            return False
        self._commit_parents(vpath.parts)
        self.tree[vpath.parts] = file_node(command["file_text"])
        return True

    def _str_replace(self, command: Dict[str, Any]) -> bool:
        old, new = command["old_str"], command["new_str"]
        edited = self._edited(command)
        if edited is None or old == "":
            return False
        parts, work, crlf = edited
        if crlf:  # D-STR-CRLF: \r\n in a parameter is one line ending
            old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
        if count_overlapping(work, old) != 1:
            return False
        return self._write_text(parts, work.replace(old, new, 1), crlf)

    def _insert(self, command: Dict[str, Any]) -> bool:
        line, inserted = command["insert_line"], command["insert_text"]
        edited = self._edited(command)
        if edited is None:
            return False
        parts, work, crlf = edited
        if crlf:  # D-INSERT-CRLF: \r\n in insert_text is one line ending
            inserted = inserted.replace("\r\n", "\n")
        lines = work.split("\n")
        if work.endswith("\n"):
            lines.pop()
        if work == "":
            lines = []
        if line < 0 or line > len(lines):
            return False
        new_lines = (inserted[:-1] if inserted.endswith("\n") else inserted).split("\n")
        result_lines = lines[:line] + new_lines + lines[line:]
        final_newline = inserted.endswith("\n") if work == "" else work.endswith("\n")
        if not final_newline and result_lines[-1] == "":
            raise _Unknown()  # an empty last line without a newline cannot be told from no line
        return self._write_text(parts, "\n".join(result_lines) + ("\n" if final_newline else ""), crlf)

    def _delete(self, command: Dict[str, Any]) -> bool:
        vpath = self._path(command["path"])
        if vpath is None or vpath.is_root:
            return False
        if self._existing(vpath) is None:
            return False
        for key in [key for key in self.tree if key[: len(vpath.parts)] == vpath.parts]:
            del self.tree[key]
        return True

    def _rename(self, command: Dict[str, Any]) -> bool:
        old, new = self._path(command["old_path"]), self._path(command["new_path"])
        if old is None or new is None or old.is_root or new.is_root:
            return False
        node = self._existing(old)
        if node is None:
            return False
        if new.trailing_slash and node != DIR:
            raise _Unknown()
        if old.parts == new.parts or new.parts[: len(old.parts)] == old.parts:
            return False
        if not self._make_parents(new.parts) or new.parts in self.tree:
            return False
        moved = {key: value for key, value in self.tree.items() if key[: len(old.parts)] == old.parts}
        if node == DIR and not all(_within_limits(new.parts + key[len(old.parts) :]) for key in moved):
            return False  # D-RENAME-LIMITS: nothing moved may end up deeper or longer than a path may be
        self._commit_parents(new.parts)
        for key in moved:
            del self.tree[key]
        for key, value in moved.items():
            self.tree[new.parts + key[len(old.parts) :]] = value
        return True

    # --- helpers -----------------------------------------------------------------------------

    def _edited(self, command: Dict[str, Any]) -> Optional[Tuple[Parts, str, bool]]:
        """(parts, text with \\n line endings, whether the file's were \\r\\n) of the file str_replace or insert edits,
        or None (an error)."""
        vpath = self._path(command["path"])
        text = None if vpath is None else self._editable(vpath)
        if vpath is None or text is None:
            return None
        crlf = is_crlf(text)
        return vpath.parts, text.replace("\r\n", "\n") if crlf else text, crlf

    def _write_text(self, parts: Parts, text: str, crlf: bool) -> bool:
        """Write an edit's text back, in the file's own line endings."""
        return self._write(parts, text.replace("\n", "\r\n") if crlf else text)

    def _existing(self, vpath: Any) -> Optional[Node]:
        """What stands at the path a delete or rename acts on, or None where the command fails (nothing there, or a
        file named with a trailing slash); raises _Unknown where the model cannot tell (an opaque object)."""
        node = self._lookup(vpath.parts)
        if not isinstance(node, tuple):
            return None
        if vpath.trailing_slash and node != DIR:
            if node == OPAQUE:
                raise _Unknown()
            return None
        return node

    def _make_parents(self, parts: Parts) -> bool:
        """Could the missing parents of parts be created (no file or opaque object on the way)?"""
        for depth in range(1, len(parts)):
            node = self.tree.get(parts[:depth])
            if node is None:
                return True
            if node != DIR:
                return False
        return True

    def _commit_parents(self, parts: Parts) -> None:
        for depth in range(1, len(parts)):
            self.tree.setdefault(parts[:depth], DIR)

    def _write(self, parts: Parts, text: str) -> bool:
        if len(text.encode("utf-8")) > MAX_FILE_BYTES:
            return False
        self.tree[parts] = file_node(text)
        return True


def _within_limits(parts: Parts) -> bool:
    canonical = "/memories" + "".join("/" + part for part in parts)
    return len(parts) <= MAX_DEPTH and len(canonical.encode("utf-8", "surrogatepass")) <= MAX_PATH_BYTES


def _valid_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return len(value.encode("utf-8")) <= MAX_FILE_BYTES


def _is_range(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(item, int) and not isinstance(item, bool) for item in value)
    )


def render_tree(tree: Tree) -> Dict[str, Any]:
    """The tree as JSON data: {"a/b": "dir" | text | "<opaque>"}, for finding files."""
    out: Dict[str, Any] = {}
    for parts in sorted(tree):
        if not parts:
            continue
        node = tree[parts]
        out["/".join(parts)] = "<dir>" if node == DIR else "<opaque>" if node == OPAQUE else node[1]
    return out
