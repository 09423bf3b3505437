"""The commands a sequence is made of: the fuzzer's vocabulary (refmem_harness/: tokens.py, decode.py, model.py),
decided by the fuzzer's byte reader (refmem_harness/byte_reader.py) and aimed at the tree the sequence has built so far.

A step is one byte string that hypothesis draws (`STEP_BYTES` of them), read as small decisions: when the bytes
are zeros every decision is its first choice, so hypothesis shrinks a step towards the simplest command by
lowering its bytes, and a sequence towards the fewest steps by deleting a step whole (a step is one choice for
hypothesis: a few choices per step are what its shrinker deletes; a step drawn as many choices is never deleted).

Most paths are aimed (a new name in a folder that exists, for create and a rename's destination; what exists,
for the others; a file, for the edits), so that sequences meet their own files: create what exists, rename onto
a file, delete a folder with files in it. Then plain paths from the fuzzer's safe names, the root, names the
documentation says nothing about (hidden, `node_modules`, accents, a percent sign), and the fuzzer's hostile
paths (the security matrix's payloads whole, or a traversal prefix followed by hostile and plain names).
`old_str` is often a piece of the file's own text, so that edits succeed; `insert_line` is near the file's
length. One input in 64 is malformed (a missing or mistyped parameter, an unknown command, no object at all).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from refmem_harness import byte_reader, decode, model, tokens

from .documented import ROOT, plain_name

Reader = byte_reader.ByteReader

STEP_BYTES = 16
"""Bytes one step is decided by: more than the longest command needs, so every decision is drawn."""
PLAIN_NAMES: Tuple[str, ...] = tuple(name for name in tokens.SAFE_NAMES if plain_name(name))
OTHER_NAMES: Tuple[str, ...] = tuple(name for name in tokens.SAFE_NAMES if name not in PLAIN_NAMES)
WRONG_VALUES: Tuple[Any, ...] = (None, 1, True, ["x"], {"p": 1})
WRONG_COMMANDS: Tuple[Any, ...] = ("View", "list", "", "view ", "delete\x00", 1, None)
NOT_OBJECTS: Tuple[Any, ...] = (None, [], "view", 3)
HUGE_LINES: Tuple[int, ...] = (10**6, 2**31, 10**20, -(10**20))
MAX_NAMES = 3

ESCAPES: Tuple[str, ...] = tuple(
    dict.fromkeys(
        [prefix for prefix in tokens.ROOT_PREFIXES if prefix != ROOT]
        + [
            f"{ROOT}/{name}"
            for name in tokens.NAMES
            if any(mark in name.lower() for mark in ("..", "%2e", "%c0", "%u00", "\uff0e", "\u2024"))
        ]
    )
)
"""Ways out of the root under some reading of a path: the fuzzer's traversal prefixes, and its dot-dot names
(plain, percent-encoded once or twice, overlong UTF-8, full-width, one-dot leaders) below the root."""
TAILS: Tuple[str, ...] = ("", "outside", "memories_evil", "outside/secret.txt", "new.txt")
"""What lies one level above the root in the case layout (refmem_harness/layout.py), and a name that does not."""

NEW, EXISTING, FILE = "new", "existing", "file"
AIM = {"view": EXISTING, "create": NEW, "str_replace": FILE, "insert": FILE, "delete": EXISTING}
"""What a command's path is mostly aimed at: a new name in a folder that exists, anything that exists, a file."""


def command(reader: Reader, tree: model.Tree) -> Any:
    """One tool input; one in 64 is malformed."""
    if reader.below(64) == 63:
        return malformed(reader, tree)
    return well_formed(reader, tree, reader.pick(decode.COMMANDS))


def well_formed(reader: Reader, tree: model.Tree, name: str) -> Dict[str, Any]:
    found: Dict[str, Any] = {"command": name}
    if name == "rename":
        found["old_path"] = path(reader, tree, EXISTING)
        found["new_path"] = path(reader, tree, EXISTING if reader.chance(1, 2) else NEW, avoid=found["old_path"])
        return found
    found["path"] = path(reader, tree, AIM[name])
    text = _file_text(tree, found["path"])
    if name == "view" and reader.chance(1, 5):
        found["view_range"] = [_between(reader, -1, 6), _between(reader, -1, 8)]
    elif name == "create":
        found["file_text"] = lines(reader)
    elif name == "str_replace":
        found["old_str"] = _old_str(reader, text)
        found["new_str"] = texts(reader)
    elif name == "insert":
        found["insert_line"] = _line(reader, text)
        found["insert_text"] = lines(reader)
    return found


def path(reader: Reader, tree: model.Tree, aim: str, avoid: str = "") -> str:
    """Half the time aimed (`aim`; not at `avoid`), else a plain path, anything that exists, the root, names
    the documentation says nothing about, or a hostile path."""
    kind = reader.below(20)
    if kind < 10:
        aimed = _aimed(reader, tree, aim, avoid)
        if aimed is not None:
            return aimed
    if kind < 12 or (kind < 14 and len(tree) < 2):
        count = reader.pick((1, 1, 1, 1, 2, 3))
        return ROOT + "/" + "/".join(reader.pick(PLAIN_NAMES) for _ in range(count))
    if kind < 14:
        return reader.pick(_shown(tree, lambda node: True))
    if kind == 14:
        return ROOT
    if kind == 15:
        return ROOT + "/" + "/".join(reader.pick(OTHER_NAMES + PLAIN_NAMES) for _ in range(1 + reader.below(2)))
    return hostile(reader)


def hostile(reader: Reader) -> str:
    """A way out of the root followed by what lies there (the place itself, the canary tree, the sibling, a new
    name); a payload path whole; or a traversal prefix followed by hostile and plain names."""
    kind = reader.below(4)
    if kind < 2:
        tail = reader.pick(TAILS)
        return reader.pick(ESCAPES) + ("/" + tail if tail else "")
    if kind == 2:
        return reader.pick(tokens.whole_paths())
    names = [reader.pick(tokens.hostile_names() + PLAIN_NAMES) for _ in range(reader.below(MAX_NAMES + 1))]
    return "/".join([reader.pick(tokens.ROOT_PREFIXES), *names]) + ("/" if reader.chance(1, 8) else "")


def texts(reader: Reader) -> str:
    if not reader.chance(1, 4):
        return reader.pick(tokens.TEXTS)
    return "".join(reader.pick(tokens.TEXTS) for _ in range(2 + reader.below(2)))


def lines(reader: Reader) -> str:
    """A text for a file or an insert: three times in four ending with a line break (the shape the
    documentation's insert example has), else as drawn."""
    text = texts(reader)
    return text + "\n" if not reader.chance(1, 4) and not text.endswith("\n") else text


def _aimed(reader: Reader, tree: model.Tree, aim: str, avoid: str) -> Optional[str]:
    if aim == NEW:
        folder = reader.pick([ROOT] + _shown(tree, lambda node: node == model.DIR))
        return f"{folder}/{reader.pick(PLAIN_NAMES)}"
    chosen = _shown(tree, (lambda node: node[0] == "file") if aim == FILE else (lambda node: True))
    chosen = [shown for shown in chosen if shown != avoid]
    return reader.pick(chosen) if chosen else None


def _shown(tree: model.Tree, keep: Callable[[model.Node], bool]) -> List[str]:
    """The paths of the tree's entries that `keep` accepts, the root left out, in order."""
    return sorted(ROOT + "/" + "/".join(parts) for parts, node in tree.items() if parts and keep(node))


def _file_text(tree: model.Tree, where: str) -> str:
    if not where.startswith(ROOT + "/"):
        return ""
    node = tree.get(tuple(where[len(ROOT) + 1 :].split("/")))
    return node[1] if node is not None and node[0] == "file" else ""


def _between(reader: Reader, low: int, high: int) -> int:
    return low + reader.below(high - low + 1)


def _old_str(reader: Reader, text: str) -> str:
    """Two times in three a piece of the file's own text (so that the edit can succeed), else a text."""
    if text and not reader.chance(1, 3):
        start = reader.below(len(text))
        return text[start : start + 1 + reader.below(min(8, len(text) - start))]
    return texts(reader)


def _line(reader: Reader, text: str) -> int:
    """Three times in four a line of the file (0 to its line count), else just outside it or far beyond."""
    kind = reader.below(16)
    if kind < 12:
        return reader.below(text.count("\n") + 1)
    return reader.pick(HUGE_LINES) if kind == 15 else _between(reader, -1, text.count("\n") + 2)


def malformed(reader: Reader, tree: model.Tree) -> Any:
    """A parameter left out or of the wrong type, a command that does not exist, or not an object at all."""
    kind = reader.below(4)
    if kind == 3:
        return reader.pick(NOT_OBJECTS)
    found = well_formed(reader, tree, reader.pick(tuple(model.REQUIRED)))
    if kind == 2:
        found["command"] = reader.pick(WRONG_COMMANDS)
        return found
    parameter = reader.pick(model.REQUIRED[found["command"]])
    if kind == 0:
        del found[parameter]
    else:
        found[parameter] = reader.pick(WRONG_VALUES)
    return found
