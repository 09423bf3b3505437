"""Random command sequences against the handler on a real folder and against the fuzzer's model.

There is one model of the handler's behaviour, `refmem_harness.model.Model` (written from docs/spec-notes.md and
used by the fuzzer's differential oracle); this state machine drives it with hypothesis. After every
step the outcome class (is_error) must agree unless the model says the notes leave the case open, and
the tree on disk must equal the model's tree. Wording is the conformance cases' business, not this one's.
Generated `old_str`, `new_str` and `insert_text` contain `\\n` but never `\\r` (files themselves may hold
`\\r\\n`): the rule for a `\\r\\n` inside `old_str` in a file that is not CRLF is pinned by crlf-013.
"""

from __future__ import annotations

import functools
import os
import tempfile
from typing import Dict

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from refmem import MemoryHandler
from refmem.messages import render
from refmem.paths import parse_path
from refmem_harness import hosttree
from refmem_harness.model import Model, Outcome, render_tree

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


class HandlerVersusModel(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="refmem-sm-")
        self.root = os.path.join(self.tmp, "memories")
        self.handler = MemoryHandler(self.root)
        self.model = Model([], functools.partial(parse_path, limits=self.handler.limits))

    def teardown(self) -> None:
        hosttree.remove(self.tmp)

    def run(self, params: dict) -> None:
        expected = self.model.apply(params)
        result = self.handler.execute(params)
        assert result.output != render("internal_error").output
        if expected is not Outcome.UNKNOWN:
            assert result.is_error is (expected is Outcome.ERROR), (params, result.output)

    @rule(path=paths, text=file_text)
    def create(self, path: str, text: str) -> None:
        self.run({"command": "create", "path": path, "file_text": text})

    @rule(path=paths, old=edit_text, new=edit_text, data=st.data())
    def str_replace(self, path: str, old: str, new: str, data) -> None:
        node = self.model.tree.get(tuple(part for part in path[len("/memories") :].split("/") if part))
        existing = node[1].replace("\r\n", "\n") if node and node[0] == "file" else ""
        if existing and data.draw(st.booleans()):  # often pick a real substring
            start = data.draw(st.integers(0, len(existing) - 1))
            old = existing[start : start + data.draw(st.integers(1, 6))]
        old = old.replace("\r", "")
        params = {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
        self.run(params)

    @rule(path=paths, line=st.integers(-1, 6), text=edit_text)
    def insert(self, path: str, line: int, text: str) -> None:
        params = {"command": "insert", "path": path, "insert_line": line, "insert_text": text}
        self.run(params)

    @rule(path=paths)
    def delete(self, path: str) -> None:
        self.run({"command": "delete", "path": path})

    @rule(old=paths, new=paths)
    def rename(self, old: str, new: str) -> None:
        self.run({"command": "rename", "old_path": old, "new_path": new})

    @rule(path=paths)
    def view(self, path: str) -> None:
        self.run({"command": "view", "path": path})

    @invariant()
    def same_tree(self) -> None:
        if not hasattr(self, "model"):
            return
        on_disk: Dict[str, str] = {}
        for relative, node in hosttree.read(self.root, skip=lambda relative: relative == ".refmem").tree.items():
            assert not relative.rpartition("/")[2].startswith(".refmem"), "a temp file was left behind"
            if node.kind == hosttree.DIR:
                on_disk[relative] = "<dir>"
            else:
                assert node.kind == hosttree.FILE and node.data is not None, (relative, node)
                on_disk[relative] = node.data.decode("utf-8")
        if not self.model.lost:
            assert on_disk == render_tree(self.model.tree)


HandlerVersusModel.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_handler_matches_model = HandlerVersusModel.TestCase
