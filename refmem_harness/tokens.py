"""The fuzzer's dictionary: path names, prefixes, texts, and hostile payload seeds.

Bytes alone would take a long time to spell `memories_evil` or `%2e%2e`; the decoder picks from
these lists instead, and falls back to raw bytes for everything the lists do not cover. The
conformance suite's hostile payloads (`conformance/security/payloads.json`), when present, are added
as whole paths and as single names.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Iterator, List, Tuple

from .sequence_layout import HOSTILE_FIXTURES
from .suite_files import suite_path

PAYLOADS_FILE = suite_path("security", "payloads.json")
"""The suite's, under whichever name the suite is installed as (suite_files.py)."""

ROOT_PREFIXES: Tuple[str, ...] = (
    "/memories",
    "/memories",
    "/memories",
    "/memories",
    "/memories_evil",
    "/memoriesX",
    "/memories/..",
    "/memories/.",
    "/memories/%2e%2e",
    "/memories/..%2f..",
    "memories",
    "/Memories",
    "",
    "/",
    "//memories",
    "/memories/./..",
    "/memories\\..",
)

SAFE_NAMES: Tuple[str, ...] = (
    "a",
    "b",
    "a.md",
    "notes",
    "x.txt",
    "sub",
    ".hidden",
    "node_modules",
    "caf\u00e9.md",
    "\u65e5\u672c",
    "100%.md",
)

NAMES: Tuple[str, ...] = (
    "memories",
    "memories_evil",
    "_evil",
    "outside",
    "secret.txt",
    "..",
    ".",
    "",
    "...",
    "....//",
    "%2e%2e",
    "%2E%2E",
    "%252e%252e",
    "%2f",
    "%2e%2e%2f",
    "%c0%ae%c0%ae",
    "%u002e%u002e",
    "%00",
    "\x00",
    "a\nb",
    "a\tb",
    "\u202e",
    "\uff0e\uff0e",
    "\u2024\u2024",
    "\u2215",
    "\uff0f",
    "..\\..",
    "\\",
    "a.",
    "a ",
    "CON",
    "nul.txt",
    "a:b",
    ".refmem",
    ".refmem-tmp-1",
    "cafe\u0301.md",
    "\u65e5\u672c",
    "x" * 256,
    "proc",
    "self",
    "root",
    "etc",
    "passwd",
    "~",
    "$HOME",
)

TEXTS: Tuple[str, ...] = (
    "",
    "a",
    "a\n",
    "line1\nline2\nline3\n",
    "one\r\ntwo\r\n",
    "a\rb\n",
    "\n",
    "\n\n",
    "first line",
    "second",
    "line2",
    "alpha\r\n",
    "x\ny",
    "caf\u00e9\n",
    "$1 \\1 \\g<0>",
    "\ufeffbom\n",
    "aa",
    "aaa",
)


def fixture_names() -> Tuple[str, ...]:
    names: List[str] = []
    for fixture in HOSTILE_FIXTURES:
        names.extend(fixture["path"].split("/"))
    return tuple(dict.fromkeys(names))


@functools.lru_cache(maxsize=1)
def payload_seeds() -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(whole paths, single names) from the payload file's `path_template`s; empty without the file."""
    try:
        data = json.loads(PAYLOADS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ((), ())
    paths: List[str] = []
    names: List[str] = []
    for template in _templates(data, depth=0):
        path = _expand(template)
        if len(path) > 4096:
            continue
        paths.append(path)
        for name in path.split("/")[2:]:
            if name and len(name) <= 64:
                names.append(name)
    return (tuple(dict.fromkeys(paths)), tuple(dict.fromkeys(names)))


_REPEAT = re.compile(r"\{([^{}*]+)\*(\d+)\}")


def _expand(template: str) -> str:
    """`{TEXT*N}` stands for TEXT repeated N times (the payload file's only template syntax)."""
    return _REPEAT.sub(lambda m: m.group(1) * min(int(m.group(2)), 4096), template)


def _templates(value: Any, depth: int) -> Iterator[str]:
    if depth > 8:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("path_template", "path") and isinstance(item, str):
                yield item
            else:
                yield from _templates(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _templates(item, depth + 1)


@functools.lru_cache(maxsize=1)
def plain_names() -> Tuple[str, ...]:
    return SAFE_NAMES + fixture_names()


@functools.lru_cache(maxsize=1)
def hostile_names() -> Tuple[str, ...]:
    return NAMES + payload_seeds()[1]


@functools.lru_cache(maxsize=1)
def whole_paths() -> Tuple[str, ...]:
    return payload_seeds()[0] + (
        "/memories_evil/secret.txt",
        "/memories/../outside/secret.txt",
        "/memories/%2e%2e/outside/secret.txt",
        "/memories/%2e%2e/memories_evil/secret.txt",
        "/memories/link_out/secret.txt",
        "/memories/link_secret",
        "/memories/docs/link_up/outside/secret.txt",
        "/memories/",
        "/memories",
        "/etc/passwd",
        "/proc/self/root/etc/passwd",
    )
