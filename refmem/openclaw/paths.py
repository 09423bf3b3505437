"""Which paths are OpenClaw memory files, and how a memory_get path string becomes a location.

OpenClaw (2026.9.6, `isMemoryPath` and `readMemoryFile`) reads `MEMORY.md`, `USER.md`, `dreams.md`
in any letter case, and Markdown files (`.md`) anywhere below `memory/`; it indexes `MEMORY.md`,
`USER.md` and the Markdown files below `memory/` (not `dreams.md`, not folders named
`.openclaw-repair`). The workspace is the memory tool's `/memories`, so `MEMORY.md` and
`/memories/MEMORY.md` name one file. Path syntax is the memory tool's (`refmem.paths`): one
spelling per location, no dot segments, no host paths (D-OPENCLAW-GET-PATH). Pure functions.
"""

from __future__ import annotations

from typing import Tuple, Union

from ..limits import DEFAULT_LIMITS, Limits
from ..paths import ROOT, PathError, VirtualPath, parse_path
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


def parse_memory_path(raw: str, limits: Limits = DEFAULT_LIMITS) -> Union[VirtualPath, Refusal]:
    """The location a memory_get `path` names, or why it names none.

    Surrounding whitespace is ignored (as OpenClaw trims). `MEMORY.md` and `/memories/MEMORY.md`
    are accepted; any other absolute path is not a memory file.
    """
    text = raw.strip()
    if not text:
        return refuse("path_required")
    if text == ROOT or text.startswith(ROOT + "/"):
        virtual = text
    elif text.startswith("/"):
        return refuse("not_memory")
    else:
        virtual = ROOT + "/" + text
    try:
        path = parse_path(virtual, limits)
    except PathError as error:
        return refuse("path_invalid", rule=error.rule)
    if path.trailing_slash or not is_readable(path.parts):
        return refuse("not_memory")
    return path
