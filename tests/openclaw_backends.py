"""OpenClaw-shaped backends (`memory_get`, `memory_search` over a workspace) with planted bugs, for the OpenClaw
conformance runner's and fuzzer's tests. They use the in-process tool convention of conformance/targets.py
(`tools` and `run_tool`, answering with the protocol's reply fields) and are reached as `python:` targets:

    python:openclaw_backends:careful         no planted bug: safe on every case and every fuzzed call
    python:openclaw_backends:follows_links   memory_get follows a symbolic link out of the workspace
    python:openclaw_backends:openclaw_like   OpenClaw 2026.9.6's three findings (fuzz/findings/openclaw): a hard link
                                            to a file outside is read and indexed; a path through a link to a
                                            folder outside is refused with the workspace's host path in the error

Each is careful everywhere but its planted bug (names checked one by one with lstat, never a FIFO opened, no host
path or exception text in a message), so that what a run reports is that bug and not noise.
"""

from __future__ import annotations

import json
import os
import pathlib
import stat
from typing import Any, Dict, List, Optional, Tuple

WORKSPACE_FILES = ("MEMORY.md", "USER.md", "dreams.md")
MAX_RESULTS = 6


class Refused(Exception):
    """A refusal whose message is safe to show."""


class PlantedOpenClaw:
    tools = ("memory_get", "memory_search")

    def __init__(self, root: pathlib.Path, follows_links: bool = False, hard_links: bool = False,
                 host_path_errors: bool = False) -> None:
        self.root = pathlib.Path(root)
        self.follows_links = follows_links
        self.hard_links = hard_links
        self.host_path_errors = host_path_errors

    def run_tool(self, tool: str, tool_input: Any) -> Dict[str, Any]:
        try:
            if not isinstance(tool_input, dict):
                raise Refused("the input must be an object")
            result = self._get(tool_input) if tool == "memory_get" else self._search(tool_input)
        except Refused as refusal:
            result = {"status": "error", "error": str(refusal)}
        except (OSError, ValueError, TypeError):
            result = {"status": "error", "error": "the file could not be read"}
        return {"output": json.dumps(result, indent=2), "is_error": result.get("status") == "error", "result": result}

    # --- memory_get ---------------------------------------------------------------------------------------

    def _get(self, tool_input: Dict[str, Any]) -> Dict[str, Any]:
        path = tool_input.get("path")
        if not isinstance(path, str):
            raise Refused("path must be a string")
        start, count = _number(tool_input, "from") or 1, _number(tool_input, "lines")
        parts = path.split("/")
        if any(part in ("", ".", "..") or "\\" in part or "\x00" in part for part in parts):
            raise Refused("path is not an allowed Markdown memory file")
        if not (path in WORKSPACE_FILES or (parts[0] == "memory" and len(parts) > 1 and path.endswith(".md"))):
            raise Refused("path is not an allowed Markdown memory file")
        found = self._walk(parts)
        if found is None:
            return {"status": "not_found", "path": path, "text": ""}
        lines = found.read_text(encoding="utf-8", errors="replace").split("\n")
        shown = lines[start - 1 : start - 1 + count] if count else lines[start - 1 :]
        return {"status": "ok", "path": path, "text": "\n".join(shown), "from": start, "lines": len(shown)}

    def _walk(self, parts: List[str]) -> Optional[pathlib.Path]:
        """The file `parts` names, one lstat a name; None when it is not there."""
        here = self.root
        for index, part in enumerate(parts):
            here = here / part
            try:
                info = os.lstat(here)
            except FileNotFoundError:
                return None
            last = index == len(parts) - 1
            if stat.S_ISLNK(info.st_mode):
                if self.host_path_errors and not last and here.resolve().is_dir():
                    raise Refused(f"Symlink escapes root ({self.root}): {here}")  # the planted leak
                if not self.follows_links:
                    raise Refused("path is a symbolic link")
                info = os.stat(here)  # the planted escape: what the link points to, wherever it is
            if not last and not stat.S_ISDIR(info.st_mode):
                raise Refused("a folder on the way is not a folder")
            if last and not stat.S_ISREG(info.st_mode):
                raise Refused("path is not a regular file")
            if last and info.st_nlink > 1 and not self.hard_links:
                raise Refused("path has other hard links")
        return here

    # --- memory_search ------------------------------------------------------------------------------------

    def _search(self, tool_input: Dict[str, Any]) -> Dict[str, Any]:
        query = tool_input.get("query")
        if not isinstance(query, str):
            raise Refused("query must be a string")
        limit = _number(tool_input, "maxResults") or MAX_RESULTS
        words = [word for word in query.lower().split() if word.isalnum()]
        hits: List[Tuple[int, Dict[str, Any]]] = []
        for relative, full in self._files():
            for number, line in enumerate(full.read_text(encoding="utf-8", errors="replace").split("\n"), 1):
                score = sum(word in line.lower() for word in words)
                if score:
                    hit = {"path": relative, "startLine": number, "endLine": number, "snippet": line, "score": score}
                    hits.append((-score, hit))
        hits.sort(key=lambda pair: (pair[0], pair[1]["path"], pair[1]["startLine"]))
        return {"results": [hit for _score, hit in hits[:limit]]}

    def _files(self) -> List[Tuple[str, pathlib.Path]]:
        """The memory files, no link followed, a file with other hard links only with the planted bug."""
        found: List[Tuple[str, pathlib.Path]] = []
        pending = [("", self.root)]
        while pending:
            prefix, folder = pending.pop()
            for entry in sorted(os.scandir(folder), key=lambda item: item.name):
                relative = prefix + entry.name
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    if relative == "memory" or relative.startswith("memory/"):
                        pending.append((relative + "/", pathlib.Path(entry.path)))
                    continue
                readable = stat.S_ISREG(info.st_mode) and (info.st_nlink == 1 or self.hard_links)
                wanted = relative in WORKSPACE_FILES or relative.startswith("memory/") and relative.endswith(".md")
                if readable and wanted:
                    found.append((relative, pathlib.Path(entry.path)))
        return found


def _number(tool_input: Dict[str, Any], key: str) -> Optional[int]:
    value = tool_input.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1 or value > 1_000_000:
        raise Refused(f"{key} must be a whole number from 1")
    return value


def careful(root: pathlib.Path) -> PlantedOpenClaw:
    return PlantedOpenClaw(root)


def follows_links(root: pathlib.Path) -> PlantedOpenClaw:
    return PlantedOpenClaw(root, follows_links=True)


def openclaw_like(root: pathlib.Path) -> PlantedOpenClaw:
    return PlantedOpenClaw(root, hard_links=True, host_path_errors=True)
