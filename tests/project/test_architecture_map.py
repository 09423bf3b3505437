"""docs/architecture.md is a true map: every module it names exists, and every module is named in it.

The map is the document's first code block: a line that starts with a name (`kernel.py`, `stores/`) is an entry,
its indentation putting it in the folder above it; a `name.py` in an entry's text is a module of that entry's
folder (or, with a slash, a path from the repository's top). Paths elsewhere in the document
(`conformance/runner.py`) must exist too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, List, Set, Tuple

REPO = Path(__file__).resolve().parents[2]
MAP = REPO / "docs" / "architecture.md"
PACKAGES = ("refmem", "refmem_harness", "refmem_mcp", "conformance", "fuzz", "bench")
"""The folders whose every module the map names."""

ENTRY = re.compile(r"^( *)([\w.-]+(?:\.py|/))(?:\s|$)")
MENTION = re.compile(r"(?<![\w*/.-])((?:[\w-]+/)*[\w-]+\.py)\b")
PATH = re.compile(r"(?<![\w*/.-])((?:" + "|".join(PACKAGES) + r"|tests|docs)/(?:[\w-]+/)*[\w-]+\.py)\b")


def map_block(text: str) -> List[str]:
    start = text.index("```\n") + 4
    return text[start : text.index("```", start)].splitlines()


def named(lines: List[str], repo: Path = REPO) -> Iterator[Tuple[str, Path]]:
    """(the line, a path the line names) for every entry and every module mentioned in an entry's text."""
    stack: List[Tuple[int, Path]] = []
    folder = repo
    for line in lines:
        entry = ENTRY.match(line)
        if entry:
            indent, name = len(entry.group(1)), entry.group(2)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1] if stack else repo
            path = parent / name.rstrip("/")
            yield line, path
            if name.endswith("/"):
                stack.append((indent, path))
                folder = path
            else:
                folder = parent
            rest = line[entry.end() :]
        else:
            rest = line
        for mention in MENTION.findall(rest):
            yield line, (repo / mention if "/" in mention else folder / mention)


def modules(repo: Path = REPO) -> Set[Path]:
    return {
        path
        for package in PACKAGES
        for path in (repo / package).rglob("*.py")
        if path.name != "__init__.py" and "node_modules" not in path.parts and "oss-fuzz" not in path.parts
    }


def test_every_module_the_map_names_exists() -> None:
    text = MAP.read_text("utf-8")
    missing = [f"{path.relative_to(REPO)} ({line.strip()[:60]})" for line, path in named(map_block(text))
               if not path.exists()]
    missing += [f"{path} (in the text)" for path in PATH.findall(text) if not (REPO / path).exists()]
    assert missing == []


def test_every_module_is_named_in_the_map() -> None:
    seen = {path for _, path in named(map_block(MAP.read_text("utf-8")))}
    assert sorted(str(path.relative_to(REPO)) for path in modules() - seen) == []


def test_the_reader_of_the_map(tmp_path: Path) -> None:
    """Entries nest by indentation; a bare name in an entry's text is of that entry's folder."""
    for name in ("a/b/c.py", "a/d.py", "a/e.py", "f/g.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    lines = ["a/     top", "  b/   inner", "    c.py  deep", "  d.py  beside e.py, and f/g.py", "x/  *_support.py"]
    paths = [path.relative_to(tmp_path).as_posix() for _, path in named(lines, tmp_path)]
    assert paths == ["a", "a/b", "a/b/c.py", "a/d.py", "a/e.py", "f/g.py", "x"]
