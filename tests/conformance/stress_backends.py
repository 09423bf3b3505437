"""Backends that fail one stress check each (conformance/stress.py), built on the careful backend.

- `make_whole_file_view`: a view_range reads the whole file and keeps several copies of it (the bytes,
  the text, its lines, every line numbered) before cutting out the window: memory grows with the file;
- `make_quadratic_str_replace`: the line numbers of a repeated old_str are found by counting newlines from
  the start of the file once per occurrence: time grows with the square of the number of occurrences;
- `make_path_string_race`: folders are checked by name (`os.path.realpath` inside the root, no name on
  the way a link) and then opened by their path string, so a folder swapped for a link between the
  checks and the open is followed out of the root.

`make_careful` is the careful backend itself, which passes every stress check. All return
`Result(output, is_error)`. `python stress_backends.py NAME` serves `make_NAME` over the adapter protocol
(conformance/PROTOCOL.md), so that the stress tier can measure one in its own process as a `cmd:` target.
POSIX only; never use any of this as a real backend.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

if __package__:
    from .buggy_backends import MAX_VIEW_CHARS, CarefulMemory, Missing, Refusal, numbered, split_lines
else:  # imported as a top-level module, with this folder on sys.path
    from buggy_backends import MAX_VIEW_CHARS, CarefulMemory, Missing, Refusal, numbered, split_lines


class WholeFileView(CarefulMemory):
    def _view_file(self, file_fd: int, shown: str, names: Sequence[str], view_range: Optional[List[int]]) -> str:
        data = b"".join(self._chunks(file_fd))
        text = data.decode("utf-8", "replace")
        lines = split_lines(text)
        every_line = [numbered(number, line) for number, line in enumerate(lines, 1)]
        first, last = (view_range[0], view_range[1]) if view_range else (1, -1)
        window = every_line[first - 1 : None if last == -1 else last]
        body = "\n".join(window)[:MAX_VIEW_CHARS]
        return f"Here's the content of {shown} with line numbers:\n{body}"


class QuadraticStrReplace(CarefulMemory):
    def occurrence_lines(self, text: str, old: str) -> List[int]:
        lines: List[int] = []
        position = text.find(old)
        while position != -1:
            line = text.count("\n", 0, position) + 1  # from the start, every time
            if line not in lines[-1:]:
                lines.append(line)
            position = text.find(old, position + len(old))
        return lines


class PathStringRace(CarefulMemory):
    def __init__(self, root: Path, bug: Optional[str] = None) -> None:
        super().__init__(root, bug)
        self.real_root = os.path.realpath(self.root)

    @contextlib.contextmanager
    def _folder(self, names: Sequence[str], shown: str, create: bool = False) -> Iterator[int]:
        host = os.path.join(self.root, *names)
        if create:
            os.makedirs(host, exist_ok=True)
        resolved = os.path.realpath(host)
        if resolved != self.real_root and not resolved.startswith(self.real_root + os.sep):
            raise Refusal(f"Error: The path {shown} leads outside /memories.")
        for depth in range(1, len(names) + 1):  # no links on the way (checked by name, so only for now)
            if os.path.islink(os.path.join(self.root, *names[:depth])):
                raise Refusal(f"Error: The path {shown} goes through a symbolic link.")
        if not os.path.isdir(resolved):
            raise Missing(shown, names)
        fd = os.open(host, os.O_RDONLY | os.O_DIRECTORY)  # by its string: whatever `host` is by now
        try:
            yield fd
        finally:
            os.close(fd)


class OwnStorage(CarefulMemory):
    """Declares storage of its own (it still uses the root): the stress tier must make inputs with create."""

    storage = "own"


def _named(backend: CarefulMemory, name: str) -> CarefulMemory:
    backend.implementation = dict(backend.implementation, name=f"stress-{name}")
    return backend


def make_careful(root: Path) -> CarefulMemory:
    return _named(CarefulMemory(root), "careful")


def make_own_storage(root: Path) -> CarefulMemory:
    return _named(OwnStorage(root), "own-storage")


def make_whole_file_view(root: Path) -> CarefulMemory:
    return _named(WholeFileView(root), "whole-file-view")


def make_quadratic_str_replace(root: Path) -> CarefulMemory:
    return _named(QuadraticStrReplace(root), "quadratic-str-replace")


def make_path_string_race(root: Path) -> CarefulMemory:
    return _named(PathStringRace(root), "path-string-race")


def serve(make: Callable[[Path], CarefulMemory], name: str) -> None:
    """The adapter protocol on standard input and output: start, reset, execute, stop."""
    backend: Optional[CarefulMemory] = None
    for line in sys.stdin:
        request = json.loads(line)
        reply: Dict[str, Any] = {"seq": request.get("seq")}
        if request["cmd"] == "stop":
            return
        if request["cmd"] == "start":
            implementation = {"name": name, "language": "python", "version": "", "homepage": ""}
            reply = {"ready": True, "version": 1, "implementation": implementation, "storage": "filesystem"}
        elif request["cmd"] == "reset":
            backend = make(Path(request["root"]))
            reply["ok"] = True
        elif backend is None:
            reply["error"] = {"code": "no-root", "message": "send reset before execute"}
        else:
            result = backend.execute(request["input"])
            reply.update(output=result.output, is_error=result.is_error)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve(globals()["make_" + sys.argv[1]], sys.argv[1])
