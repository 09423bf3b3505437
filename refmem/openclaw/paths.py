"""Which paths are OpenClaw memory files, and how a memory_get path string becomes a location.

OpenClaw (2026.9.6, `isMemoryPath` and `readMemoryFile`) reads `MEMORY.md`, `USER.md`, `dreams.md`
in any letter case, and Markdown files (`.md`) anywhere below `memory/`; it indexes `MEMORY.md`,
`USER.md` and the Markdown files below `memory/` (not `dreams.md`, not folders named
`.openclaw-repair`). The workspace is the memory tool's `/memories`, so `MEMORY.md` and
`/memories/MEMORY.md` name one file. Path syntax is the memory tool's (`refmem.paths`): one
spelling per location, no dot segments, no host paths (D-OPENCLAW-GET-PATH). Pure functions.
"""

from __future__ import annotations

from typing import Optional, Tuple, Union

from ..limits import DEFAULT_LIMITS, Limits
from ..messages import (
    RULE_BACKSLASH,
    RULE_CONTROL,
    RULE_DOTS,
    RULE_EMPTY,
    is_unsafe_char,
    rule_name_too_long,
    rule_too_deep,
    rule_too_long,
)
from ..paths import ROOT, VirtualPath
from .messages import Refusal, refuse

MEMORY_DIR = "memory"
MARKDOWN_SUFFIX = ".md"
ROOT_FILES = frozenset({"MEMORY.md", "USER.md"})
"""Root-level memory files read and indexed, exact letter case."""
DREAMS = "dreams"
"""`dreams.md`, its name in any letter case and its `.md` exact, read and never indexed (OpenClaw's own
asymmetry)."""
REPAIR_DIR = ".openclaw-repair"
"""OpenClaw's migration folder: never descended into by the index."""


def is_readable(parts: Tuple[str, ...]) -> bool:
    """May memory_get read the file at `parts` (names below the workspace)?"""
    if len(parts) == 1:
        name = parts[0]
        dreams = name.endswith(MARKDOWN_SUFFIX) and name[: -len(MARKDOWN_SUFFIX)].lower() == DREAMS
        return name in ROOT_FILES or dreams
    return len(parts) >= 2 and parts[0] == MEMORY_DIR and parts[-1].endswith(MARKDOWN_SUFFIX)


def is_indexed(parts: Tuple[str, ...]) -> bool:
    """Does memory_search index the file at `parts`? A subset of the readable files."""
    if len(parts) == 1:
        return parts[0] in ROOT_FILES
    return is_readable(parts) and REPAIR_DIR not in parts[1:-1]


def is_curated(parts: Tuple[str, ...]) -> bool:
    """Is it a curated file (`MEMORY.md`, `USER.md`), chunked per entry?"""
    return len(parts) == 1 and parts[0] in ROOT_FILES


def enters(parts: Tuple[str, ...], name: str) -> bool:
    """Does the index scan enter the folder `name` inside the folder at `parts`?"""
    if not parts:
        return name == MEMORY_DIR
    return name != REPAIR_DIR


def relative(parts: Tuple[str, ...]) -> str:
    """OpenClaw's spelling of a location: relative to the workspace, `/`-separated."""
    return "/".join(parts)


# The rules a note that already exists is read under (D-OPENCLAW-GET-PATH): the host's own bounds and
# the syntax rules that keep one spelling per file; not the memory tool's rules for names a model
# creates (Windows names, trailing dots, `%` escapes, look-alike slashes, `.refmem` prefixes), which
# OpenClaw does not have and which hid existing notes. The bookkeeping folder `.refmem/` stays out of
# reach: at the top only MEMORY.md, USER.md and dreams.md are memory files.
READ_MAX_DEPTH = 64
READ_MAX_PATH_BYTES = 4_096
READ_MAX_NAME_BYTES = 255


def name_problem(name: str) -> Optional[str]:
    """The rule a name found on disk or in a path breaks for the OpenClaw tools, or None."""
    if not name:
        return RULE_EMPTY
    if name in (".", ".."):
        return RULE_DOTS
    if "\\" in name:
        return RULE_BACKSLASH
    if any(is_unsafe_char(char) for char in name):
        return RULE_CONTROL  # control, line-separator and bidi characters, lone surrogates
    if len(name.encode("utf-8")) > READ_MAX_NAME_BYTES:
        return rule_name_too_long(READ_MAX_NAME_BYTES)
    return None


def readable_name(name: str) -> bool:
    return name_problem(name) is None


def within_bounds(parts: Tuple[str, ...]) -> bool:
    """Within the host's bounds: at most 64 levels and 4,096 bytes as a `/memories/...` path."""
    size = len(ROOT) + sum(len(part.encode("utf-8", "surrogatepass")) + 1 for part in parts)
    return len(parts) <= READ_MAX_DEPTH and size <= READ_MAX_PATH_BYTES


def parse_memory_path(raw: str, limits: Limits = DEFAULT_LIMITS) -> Union[VirtualPath, Refusal]:
    """The location a memory_get `path` names, or why it names none.

    Surrounding whitespace is ignored (as OpenClaw trims). `MEMORY.md` and `/memories/MEMORY.md`
    are accepted; any other absolute path is not a memory file. Names follow `name_problem`, not the
    memory tool's rules for names a model creates (`limits` are those and are not used here).
    """
    text = raw.strip()
    if not text:
        return refuse("path_required")
    if text == ROOT or text.startswith(ROOT + "/"):
        rest = text[len(ROOT) + 1 :]
    elif text.startswith("/"):
        return refuse("not_memory")
    else:
        rest = text
    if not rest or rest.endswith("/"):
        return refuse("not_memory")
    names = rest.split("/")
    for name in names:
        problem = name_problem(name)
        if problem is not None:
            return refuse("path_invalid", rule=problem)
    if len(ROOT.encode()) + 1 + len(rest.encode("utf-8")) > READ_MAX_PATH_BYTES:
        return refuse("path_invalid", rule=rule_too_long(READ_MAX_PATH_BYTES))
    if len(names) > READ_MAX_DEPTH:
        return refuse("path_invalid", rule=rule_too_deep(READ_MAX_DEPTH))
    if not is_readable(tuple(names)):
        return refuse("not_memory")
    return VirtualPath(tuple(names))
