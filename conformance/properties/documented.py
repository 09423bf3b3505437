"""What the documentation settles about one command on a known tree, read off the fuzzer's model.

The model (refmem_harness/model.py) is the reference's reading of every command. Where the documentation states the
outcome, the reference's reading is the documentation's, so the model's outcome and tree are what any backend
must produce: create never overwrites, a missing path is an error, a file or folder path that is not a file is
an error for the editing commands, delete removes recursively, rename never overwrites and moves, str_replace
replaces the one occurrence of old_str and refuses none or several, insert puts its lines after `insert_line`
and refuses a line outside the file, a view numbers a file's lines and a listing shows two levels without hidden
items. `statement` names the sentence a command falls under, or None where the documentation leaves it open:
any path that is not plain (`/memories` and lower-case ASCII names: every other spelling is a decision or a
hardening), a `\\r` (CRLF handling is the reference's decision), overlapping occurrences, a missing parent
folder, a link or special file, a range the documentation does not define, the root as a thing to delete or
move. Open commands are never judged here; the safety checks judge every command.

Pure functions: no target, no filesystem.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from refmem_harness import model

ROOT = "/memories"
PLAIN_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]{0,30}[a-z0-9_])?")
"""A name every reading of the documentation accepts as it is: lower-case ASCII (no case folding question),
not hidden, no trailing dot, at most 32 characters."""
DEVICE_NAME = re.compile(r"(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\..*)?")
"""Windows device names, which a backend may refuse on any platform (a hardening, not the documentation)."""
MAX_PLAIN_DEPTH = 8
NUMBERED_CHARS = 16_000
"""A file view is compared line by line only up to this size: the documentation suggests paginating long ones."""

Parts = Tuple[str, ...]


class PlainPath(NamedTuple):
    """A plain path as the model reads one (the parts it needs of refmem.paths' result)."""

    parts: Parts
    trailing_slash: bool = False

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def canonical(self) -> str:
        return ROOT + "".join("/" + part for part in self.parts)


def plain_name(name: str) -> bool:
    return bool(PLAIN_NAME.fullmatch(name)) and not DEVICE_NAME.fullmatch(name) and name != "node_modules"


def plain(path: Any) -> Optional[PlainPath]:
    """The path, when it is `/memories` or `/memories/` followed by plain names; None for anything else."""
    if path == ROOT:
        return PlainPath(())
    if not isinstance(path, str) or not path.startswith(ROOT + "/"):
        return None
    names = path[len(ROOT) + 1 :].split("/")
    if len(names) > MAX_PLAIN_DEPTH or not all(plain_name(name) for name in names):
        return None
    return PlainPath(tuple(names))


def parse(path: str) -> PlainPath:
    """The model's path parser: plain paths only (the model is only asked about settled commands)."""
    found = plain(path)
    if found is None:
        raise ValueError("not a plain path")
    return found


# --- the tree as the model holds it ---------------------------------------------------------------


def _node(tree: model.Tree, parts: Parts) -> Optional[model.Node]:
    """The node at `parts`; None when nothing is there or a file or special file stands on the way."""
    for depth in range(1, len(parts)):
        if tree.get(parts[:depth]) != model.DIR:
            return None
    return tree.get(parts)


def _missing(tree: model.Tree, parts: Parts) -> bool:
    """Nothing at `parts`, and no link or special file on the way that a backend could read otherwise."""
    for depth in range(1, len(parts) + 1):
        node = tree.get(parts[:depth])
        if node is None:
            return True
        if node == model.OPAQUE:
            return False
        if node != model.DIR and depth < len(parts):
            return True  # a file on the way: the path names nothing
    return False


def _text(node: Optional[model.Node]) -> Optional[str]:
    return node[1] if node is not None and node[0] == "file" else None


def _in_folder(tree: model.Tree, parts: Parts) -> bool:
    """`parts` names a place in a folder that exists."""
    return len(parts) == 1 or tree.get(parts[:-1]) == model.DIR


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    """A text parameter the documentation has something to say about: a string that is UTF-8 (no lone
    surrogate) and not over the size a file may have."""
    if not isinstance(value, str):
        return False
    try:
        return len(value.encode("utf-8")) <= model.MAX_FILE_BYTES
    except UnicodeEncodeError:
        return False


# --- the statements -------------------------------------------------------------------------------

MISSING = "a path that does not exist is an error"
NOT_A_FILE = "a folder is not a file: the editing commands report it as a missing file"


def statement(command: Any, tree: model.Tree) -> Optional[str]:
    """The documented sentence `command` falls under on `tree`, or None where the documentation leaves it open."""
    if not isinstance(command, dict) or command.get("command") not in model.REQUIRED:
        return None
    name = command["command"]
    for parameter in model.REQUIRED[name]:
        value = command.get(parameter)
        if not (_is_int(value) if parameter in model.INTEGERS else _is_str(value)):
            return None
    judge = _STATEMENTS[name]
    return judge(command, tree)


def _view(command: Dict[str, Any], tree: model.Tree) -> Optional[str]:
    path = plain(command["path"])
    if path is None:
        return None
    view_range = command.get("view_range")
    if _missing(tree, path.parts):
        return MISSING if view_range is None or _range(view_range) is not None else None
    node = _node(tree, path.parts)
    if view_range is None:
        if node == model.DIR:
            return "view lists a folder two levels deep, hidden items and node_modules left out"
        return "view shows a file's lines, numbered" if _text(node) is not None else None
    text, wanted = _text(node), _range(view_range)
    if text is None or wanted is None or "\r" in text or not text.endswith("\n"):
        return None
    start, end = wanted
    return "view_range shows those lines of the file" if 1 <= start <= end <= text.count("\n") else None


def _range(value: Any) -> Optional[Tuple[int, int]]:
    if isinstance(value, list) and len(value) == 2 and all(_is_int(item) for item in value):
        return value[0], value[1]
    return None


def _create(command: Dict[str, Any], tree: model.Tree) -> Optional[str]:
    path = plain(command["path"])
    if path is None or path.is_root:
        return None
    if _node(tree, path.parts) is not None:
        return "create never overwrites: the path exists"
    if _missing(tree, path.parts) and _in_folder(tree, path.parts):
        return "create makes a file holding exactly file_text"
    return None


def _edited(command: Dict[str, Any], tree: model.Tree) -> Tuple[Optional[str], Optional[str]]:
    """(a statement that settles the command whatever its other parameters, the file's text to edit)."""
    path = plain(command["path"])
    if path is None or path.is_root:
        return None, None
    if _missing(tree, path.parts):
        return MISSING, None
    node = _node(tree, path.parts)
    if node == model.DIR:
        return NOT_A_FILE, None
    return None, _text(node)


def _str_replace(command: Dict[str, Any], tree: model.Tree) -> Optional[str]:
    settled, text = _edited(command, tree)
    old, new = command["old_str"], command["new_str"]
    if settled is not None or text is None or not old or "\r" in text + old + new:
        return settled
    plain_count, overlapping = text.count(old), model.count_overlapping(text, old)
    if overlapping == 0:
        return "str_replace of text that does not appear is an error"
    if plain_count == overlapping == 1:
        return "str_replace replaces the one occurrence of old_str"
    return "str_replace of text that appears more than once is an error" if plain_count >= 2 else None


def _insert(command: Dict[str, Any], tree: model.Tree) -> Optional[str]:
    settled, text = _edited(command, tree)
    if settled is not None or text is None:
        return settled
    line, inserted = command["insert_line"], command["insert_text"]
    if "\r" in text + inserted:
        return None
    if line < 0 or line > text.count("\n") + 1:  # beyond the file in every reading of a final newline
        return "an insert_line outside [0, the file's lines] is an error"
    if inserted.endswith("\n\n"):  # a blank last line: whether it is kept is D-INSERT-SEMANTICS (insert-009)
        return None
    if text.endswith("\n") and inserted.endswith("\n") and line <= text.count("\n"):
        return "insert puts insert_text after line insert_line"
    return None


def _delete(command: Dict[str, Any], tree: model.Tree) -> Optional[str]:
    path = plain(command["path"])
    if path is None or path.is_root:
        return None
    if _missing(tree, path.parts):
        return MISSING
    node = _node(tree, path.parts)
    return "delete removes the path and everything under it" if node is not None and node != model.OPAQUE else None


def _rename(command: Dict[str, Any], tree: model.Tree) -> Optional[str]:
    old, new = plain(command["old_path"]), plain(command["new_path"])
    if old is None or new is None or old.is_root or new.is_root:
        return None
    if _missing(tree, old.parts):
        return MISSING
    source = _node(tree, old.parts)
    if source is None or source == model.OPAQUE or old.parts == new.parts:
        return None
    if _node(tree, new.parts) is not None:
        return "rename never overwrites: the destination exists"
    if new.parts[: len(old.parts)] == old.parts or not _missing(tree, new.parts) or not _in_folder(tree, new.parts):
        return None
    return "rename moves the path, and what is under it, to a new name"


_STATEMENTS = {
    "view": _view,
    "create": _create,
    "str_replace": _str_replace,
    "insert": _insert,
    "delete": _delete,
    "rename": _rename,
}


# --- what a view must show ------------------------------------------------------------------------


def view_match(command: Dict[str, Any], tree: model.Tree) -> Optional[Dict[str, Any]]:
    """A `match` (conformance/matchers.py) for a settled view that succeeds: the file's lines numbered (any
    reading of a final newline) or the folder's listing (any order, any human size, a folder's own size open);
    None where the documentation does not fix the text (a `\\r`, a byte-order mark, a file long enough to be
    paginated, a name a listing may draw otherwise)."""
    path = plain(command.get("path"))
    if path is None:
        return None
    node = _node(tree, path.parts)
    if node == model.DIR:
        return _listing(path.parts, tree)
    text = _text(node)
    if text is None or "\r" in text or "\ufeff" in text or len(text) > NUMBERED_CHARS:
        return None
    numbered: Dict[str, Any] = {"text": text}
    wanted = _range(command.get("view_range"))
    if wanted is not None:
        numbered["range"] = list(wanted)
    return {"numbered": numbered}


def _listing(parts: Parts, tree: model.Tree) -> Optional[Dict[str, Any]]:
    top = ROOT + "".join("/" + part for part in parts)
    entries: List[List[Any]] = [[top, None]]
    for key, node in sorted(tree.items()):
        below = key[len(parts) :]
        if key[: len(parts)] != parts or not below or len(below) > 2:
            continue
        if any(name.startswith(".") or name == "node_modules" for name in below):
            continue
        if node == model.OPAQUE or not all(plain_name(name) for name in below):
            return None
        shown = ROOT + "/" + "/".join(key)
        text = _text(node)
        entries.append([shown + "/", None] if text is None else [shown, len(text.encode("utf-8"))])
    return {"listing": {"entries": entries, "exact": True}}
