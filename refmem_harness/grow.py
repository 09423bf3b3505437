"""Structured growth: forms that turn a byte or two into an input that makes a command work hard.

PerfFuzz and SlowFuzz look for inputs that maximise work. A byte mutator almost never spells a
megabyte of `a\\n` or a folder of 256 files, so the decoder has forms that expand a few decisions
into large, repetitive inputs, the shapes that break implementations with superlinear costs:

- a text that repeats a short unit up to a megabyte (many occurrences of `old_str`, many lines,
  one long line), its unit remembered so that a later `str_replace` can ask for it;
- a path that nests one name many times, and a chain of renames that moves a tree one level
  deeper each time (deep trees);
- many files created in one folder (long listings, deletes of large trees);
- parameters nested many levels deep, and `view_range` / `insert_line` values far beyond any file.

Sizes are powers of two, so the engines climb from small to large by changing one byte.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .byte_reader import ByteReader

UNITS: Tuple[str, ...] = (
    "a",
    "a\n",
    "\n",
    "aa",
    "ab\n",
    "x" * 79 + "\n",
    "line\n",
    "a\r\n",
    "\r\n",
    "\u00e9",
    "\t",
    " ",
    "\u65e5\u672c\n",
    "%2e",
)
MAX_SHIFT = 20
"""Repetitions are 2**0 .. 2**20 (times the unit's length, cut at MAX_CHARS), the smaller of two
draws: large sizes are rarer than small ones, so a superlinear cost shows as a cost finding at a
middling size before it shows as a hang at the largest."""
MAX_CHARS = (1 << 20) + 1024
"""A little over the reference's 1 MiB file limit, so the size check is exercised too."""
DEPTHS = (4, 8, 15, 16, 17, 32, 100, 400)
DEEP_NAMES = ("a", "d", "deep", "x" * 50)
BATCH_SIZES = (8, 16, 32, 128)
CHAIN_LENGTHS = (2, 4, 8, 16, 24)
NESTING = (2, 8, 32, 128, 256)
"""Deep enough to catch recursive checks, shallow enough for any JSON library and for finding files."""
HUGE_INTS = (
    999_999,
    1_000_000,
    2**31 - 1,
    2**31,
    2**32,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    10**18,
    10**100,
    -(2**31),
    -(2**63),
    -(10**100),
)
MAX_EXPANDED = 160
"""Most commands one input may decode to once batches and chains are expanded."""


def repeated_text(reader: ByteReader) -> Tuple[str, str]:
    """(text, unit): the unit repeated 2**k times, cut at MAX_CHARS."""
    unit = reader.pick(UNITS)
    count = 1 << min(reader.below(MAX_SHIFT + 1), reader.below(MAX_SHIFT + 1))
    return unit * min(count, MAX_CHARS // len(unit)), unit


def deep_path(reader: ByteReader) -> str:
    name = reader.pick(DEEP_NAMES)
    depth = reader.pick(DEPTHS)
    path = "/memories/" + "/".join([name] * depth)
    return path + "/f.md" if reader.chance(1, 2) else path


def nested(reader: ByteReader) -> Any:
    value: Any = reader.pick((1, "a", None, "/memories", [1, 2]))
    as_dict = reader.chance(1, 2)
    for _ in range(reader.pick(NESTING)):
        value = {"a": value} if as_dict else [value]
    return value


def huge_int(reader: ByteReader) -> int:
    return reader.pick(HUGE_INTS)


def huge_range(reader: ByteReader) -> List[int]:
    start = reader.pick((1, 2, 500_000) + HUGE_INTS)
    end = reader.pick((-1,) + HUGE_INTS)
    return [start, end]


def batch(reader: ByteReader) -> Tuple[str, List[Dict[str, Any]]]:
    """(folder, creates): many small files in one folder."""
    folder = "/memories/" + reader.pick(("many", "a", "d/e"))
    size = reader.pick(BATCH_SIZES)
    text = reader.pick(("", "x\n", "line 1\nline 2\n"))
    return folder, [{"command": "create", "path": f"{folder}/f{i:04d}.md", "file_text": text} for i in range(size)]


def rename_chain(reader: ByteReader) -> Tuple[str, List[Dict[str, Any]]]:
    """(top folder, commands): a file in n0, then n0 moved into n1, n1 into n2, ... one level deeper each time."""
    length = reader.pick(CHAIN_LENGTHS)
    commands: List[Dict[str, Any]] = [{"command": "create", "path": "/memories/n0/f.md", "file_text": "x\n"}]
    for i in range(length):
        commands.append({"command": "rename", "old_path": f"/memories/n{i}", "new_path": f"/memories/n{i + 1}/n{i}"})
    return f"/memories/n{length}", commands
