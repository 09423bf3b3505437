"""Random command sequences against the handler on a real folder and against a small model.

The model is a dict of files (path -> text) and a set of folders, written from docs/spec-notes.md.
After every step the outcome class (is_error) and the whole tree must agree, and the handler's
listing of /memories must equal the model's rendering of it. Generated `old_str`, `new_str` and
`insert_text` contain `\\n` but never `\\r` (files themselves may hold `\\r\\n`): the rule for a
`\\r\\n` inside `old_str` in a file that is not CRLF is pinned by the conformance case crlf-013
instead, so a failure here points at something new. The model takes its sentences from
`refmem.messages`: their wording is pinned by the conformance cases, the model checks where they appear.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Dict, List, Optional, Set, Tuple

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from refmem import MemoryHandler
from refmem.messages import render
from refmem.text import human_size

PATHS = [
    "/memories/a.txt",
    "/memories/b.md",
    "/memories/d",
    "/memories/d/",
    "/memories/d/x.txt",
    "/memories/d/e",
    "/memories/d/e/y.txt",
    "/memories/d/e/f/z.txt",
    "/memories/a.txt/",
    "/memories/a.txt/q",
    "/memories/\u00e9t\u00e9.txt",
    "/memories",
    "/memories/",
]
paths = st.sampled_from(PATHS)
pieces = st.sampled_from(["a", "b", "line", " ", "\n", "\u00e9", "\U0001f600", "$1", "\\"])
edit_text = st.lists(pieces, max_size=8).map("".join)
file_text = st.lists(st.one_of(pieces, st.just("\r\n")), max_size=10).map("".join)


def parts(raw: str) -> Tuple[Tuple[str, ...], bool]:
    slash = raw.endswith("/")
    body = raw[len("/memories") :].strip("/")
    return (tuple(body.split("/")) if body else ()), slash


class Model:
    """The spec, small: files and folders keyed by tuples of names."""

    def __init__(self) -> None:
        self.files: Dict[Tuple[str, ...], str] = {}
        self.dirs: Set[Tuple[str, ...]] = set()

    def kind(self, key: Tuple[str, ...]) -> Optional[str]:
        if key == () or key in self.dirs:
            return "dir"
        return "file" if key in self.files else None

    def blocked(self, key: Tuple[str, ...]) -> bool:
        """A proper ancestor is a file: the path cannot exist or be created."""
        return any(key[:i] in self.files for i in range(1, len(key)))

    def make_parents(self, key: Tuple[str, ...]) -> None:
        for i in range(1, len(key)):
            self.dirs.add(key[:i])

    def subtree(self, key: Tuple[str, ...]) -> List[Tuple[str, ...]]:
        return [k for k in list(self.files) + list(self.dirs) if k[: len(key)] == key]

    # -- commands: return True for an error --

    def create(self, raw: str, text: str) -> bool:
        key, slash = parts(raw)
        if key == () or slash or self.kind(key) is not None or self.blocked(key):
            return True
        self.make_parents(key)
        self.files[key] = text
        return False

    def _file_for_edit(self, raw: str) -> Optional[Tuple[str, ...]]:
        key, slash = parts(raw)
        return key if (not slash and self.kind(key) == "file") else None

    def str_replace(self, raw: str, old: str, new: str) -> bool:
        key = self._file_for_edit(raw)
        if old == "" or key is None:
            return True
        content = self.files[key]
        crlf = content.count("\n") > 0 and content.count("\r\n") == content.count("\n")
        work = content.replace("\r\n", "\n") if crlf else content
        starts = [i for i in range(len(work)) if work.startswith(old, i)]
        if len(starts) != 1:
            return True
        work = work[: starts[0]] + new + work[starts[0] + len(old) :]
        self.files[key] = work.replace("\n", "\r\n") if crlf else work
        return False

    def insert(self, raw: str, line: int, text: str) -> bool:
        key = self._file_for_edit(raw)
        if key is None:
            return True
        content = self.files[key]
        crlf = content.count("\n") > 0 and content.count("\r\n") == content.count("\n")
        work = content.replace("\r\n", "\n") if crlf else content
        lines = work.split("\n")
        if lines[-1] == "":
            lines.pop()
        if not 0 <= line <= len(lines):
            return True
        new_lines = (text[:-1] if text.endswith("\n") else text).split("\n")
        final = work.endswith("\n") if lines else text.endswith("\n")
        work = "\n".join(lines[:line] + new_lines + lines[line:]) + ("\n" if final else "")
        self.files[key] = work.replace("\n", "\r\n") if crlf else work
        return False

    def delete(self, raw: str) -> bool:
        key, slash = parts(raw)
        kind = self.kind(key)
        if key == () or kind is None or (slash and kind != "dir"):
            return True
        for k in self.subtree(key):
            self.files.pop(k, None)
            self.dirs.discard(k)
        return False

    def rename(self, old_raw: str, new_raw: str) -> bool:
        old, old_slash = parts(old_raw)
        new, new_slash = parts(new_raw)
        kind = self.kind(old)
        if old == () or new == () or kind is None or (old_slash and kind != "dir"):
            return True
        if new_slash and kind != "dir":
            return True
        if old == new or self.kind(new) is not None:
            return True
        if kind == "dir" and new[: len(old)] == old:
            return True
        if self.blocked(new):
            return True
        moved = self.subtree(old)
        self.make_parents(new)
        for k in moved:
            target = new + k[len(old) :]
            if k in self.files:
                self.files[target] = self.files.pop(k)
            else:
                self.dirs.discard(k)
                self.dirs.add(target)
        return False

    def view(self, raw: str) -> Tuple[bool, Optional[str]]:
        key, slash = parts(raw)
        kind = self.kind(key)
        canonical = "/".join(("/memories",) + key)
        if kind is None or (slash and kind != "dir"):
            return True, None
        if kind == "dir":
            return False, self.listing(key)
        content = self.files[key]
        crlf = content.count("\n") > 0 and content.count("\r\n") == content.count("\n")
        lines = (content.replace("\r\n", "\n") if crlf else content).split("\n")
        if lines[-1] == "":
            lines.pop()
        head = render("view_file_header", path=canonical).output
        return False, "\n".join([head] + [f"{n:>6}\t{t}" for n, t in enumerate(lines, start=1)])

    def listing(self, key: Tuple[str, ...]) -> str:
        base = "/".join(("/memories",) + key)
        out = [render("view_dir_header", path=base).output, f"4.0K\t{base}"]

        def visit(folder: Tuple[str, ...], level: int) -> None:
            children = sorted(
                {
                    k[len(folder)]
                    for k in list(self.files) + list(self.dirs)
                    if len(k) > len(folder) and k[: len(folder)] == folder
                }
            )
            for name in children:
                child = folder + (name,)
                rel = "/".join(child[len(key) :])
                if child in self.dirs:
                    out.append(f"4.0K\t{base}/{rel}/")
                    if level < 2:
                        visit(child, level + 1)
                else:
                    out.append(f"{human_size(len(self.files[child].encode()))}\t{base}/{rel}")

        visit(key, 1)
        return "\n".join(out)


class HandlerVersusModel(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="refmem-sm-")
        self.root = os.path.join(self.tmp, "memories")
        self.handler = MemoryHandler(self.root)
        self.model = Model()

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, params: dict, model_error: bool) -> None:
        result = self.handler.execute(params)
        assert result.output != render("internal_error").output
        assert result.is_error is model_error, (params, result.output)

    @rule(path=paths, text=file_text)
    def create(self, path: str, text: str) -> None:
        self.run({"command": "create", "path": path, "file_text": text}, self.model.create(path, text))

    @rule(path=paths, old=edit_text, new=edit_text, data=st.data())
    def str_replace(self, path: str, old: str, new: str, data) -> None:
        key, _ = parts(path)
        existing = self.model.files.get(key, "").replace("\r\n", "\n")
        if existing and data.draw(st.booleans()):  # often pick a real substring
            start = data.draw(st.integers(0, len(existing) - 1))
            old = existing[start : start + data.draw(st.integers(1, 6))]
        old = old.replace("\r", "")
        params = {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
        self.run(params, self.model.str_replace(path, old, new))

    @rule(path=paths, line=st.integers(-1, 6), text=edit_text)
    def insert(self, path: str, line: int, text: str) -> None:
        params = {"command": "insert", "path": path, "insert_line": line, "insert_text": text}
        self.run(params, self.model.insert(path, line, text))

    @rule(path=paths)
    def delete(self, path: str) -> None:
        self.run({"command": "delete", "path": path}, self.model.delete(path))

    @rule(old=paths, new=paths)
    def rename(self, old: str, new: str) -> None:
        self.run({"command": "rename", "old_path": old, "new_path": new}, self.model.rename(old, new))

    @rule(path=paths)
    def view(self, path: str) -> None:
        model_error, model_output = self.model.view(path)
        result = self.handler.execute({"command": "view", "path": path})
        assert result.is_error is model_error, (path, result.output)
        if model_output is not None:
            assert result.output == model_output

    @invariant()
    def same_tree(self) -> None:
        if not hasattr(self, "model"):
            return
        files: Dict[Tuple[str, ...], str] = {}
        dirs: Set[Tuple[str, ...]] = set()
        for folder, subdirs, names in os.walk(self.root):
            rel = os.path.relpath(folder, self.root)
            key = () if rel == "." else tuple(rel.split(os.sep))
            if key == ():
                subdirs[:] = [s for s in subdirs if s != ".refmem"]
            for name in subdirs:
                dirs.add(key + (name,))
            for name in names:
                assert not name.startswith(".refmem"), "a temp file was left behind"
                with open(os.path.join(folder, name), "rb") as handle:
                    files[key + (name,)] = handle.read().decode("utf-8")
        assert files == self.model.files
        assert dirs == self.model.dirs
        listing = self.handler.execute({"command": "view", "path": "/memories"})
        assert listing.output == self.model.listing(())


HandlerVersusModel.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_handler_matches_model = HandlerVersusModel.TestCase
