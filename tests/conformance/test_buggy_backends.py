"""Each buggy backend really has its bug, and only that one; the clean backend has none of them.

Every demonstration is run against every backend of both error conventions: the evidence must show for
exactly the backend whose bug it demonstrates. The runner is not involved: the backends are called directly
in the layout a conformance case runs in (CASE/memories, the canary tree CASE/outside, the sibling
CASE/memories_evil).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import buggy_backends
import plain_backends
import pytest

from refmem_harness.hosttree import read as read_host_tree
from refmem_harness.layout import CaseDir, make_case_dir, outside_snapshot

CANARY = "CANARY-buggy-5e1f"
HANG_SECONDS = 3.0
"""A call that has not returned after this long is taken as hung (and unblocked). Only the FIFO demonstration on
the FIFO backend ever waits it out; every other call returns in milliseconds, so on a busy machine a slow call
still comes back long before it would be mistaken for a hang (0.5 s was close enough to be)."""

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the backends and fixtures are POSIX only")


class Outcome(NamedTuple):
    text: str
    is_error: bool


def _raising_call(backend: Any, command: Dict[str, Any]) -> Outcome:
    try:
        return Outcome(backend.execute(command), False)
    except buggy_backends.BackendError as error:
        return Outcome(str(error), True)


def _plain_call(backend: Any, command: Dict[str, Any]) -> Outcome:
    text = backend.execute(command)
    assert isinstance(text, str)
    return Outcome(text, text.startswith("Error:"))


CONVENTIONS = {"raising": (buggy_backends, _raising_call), "plain": (plain_backends, _plain_call)}


class Demo(NamedTuple):
    setup: Callable[[CaseDir], None]
    command: Dict[str, Any]
    shows_bug: Callable[[CaseDir, Optional[Outcome]], bool]
    """Given the outcome (None: the call hung), whether the bug happened."""
    unblock: Callable[[CaseDir], None] = lambda case: None
    refused: bool = True
    """Whether a backend without this bug refuses the command (a delete of a link, a listing, succeed)."""


def _nothing(case: CaseDir) -> None:
    pass


def _files(**files: str) -> Callable[[CaseDir], None]:
    def setup(case: CaseDir) -> None:
        for name, text in files.items():
            (case.root / name).write_text(text)

    return setup


def _symlink(case: CaseDir) -> None:
    os.symlink("../outside/secret.txt", case.root / "link.txt")


def _inside_link(case: CaseDir) -> None:
    (case.root / "a.txt").write_text("keep me\n")
    os.symlink("a.txt", case.root / "link.txt")


def _folder_link(case: CaseDir) -> None:
    os.symlink("../outside", case.root / "out")


def _hard_link(case: CaseDir) -> None:
    os.link(case.path / "outside" / "secret.txt", case.root / "hard.txt")


def _fifo(case: CaseDir) -> None:
    os.mkfifo(case.root / "pipe")


def _open_fifo_for_writing(case: CaseDir) -> None:
    """A writer arriving lets a reader blocked in open() go on (it then reads end-of-file)."""
    os.close(os.open(case.root / "pipe", os.O_WRONLY | os.O_NONBLOCK))


def _leaks_canary(case: CaseDir, outcome: Optional[Outcome]) -> bool:
    return outcome is not None and CANARY in outcome.text


def _view(path: str) -> Dict[str, Any]:
    return {"command": "view", "path": path}


DEMOS: Dict[str, Demo] = {
    "prefix_no_separator": Demo(_nothing, _view("/memories/../memories_evil/secret.txt"), _leaks_canary),
    "decode_after_dotdot_check": Demo(_nothing, _view("/memories/%2e%2e/outside/secret.txt"), _leaks_canary),
    "backslash_after_check": Demo(_nothing, _view("/memories/..\\outside\\secret.txt"), _leaks_canary),
    "nfkc_after_check": Demo(_nothing, _view("/memories/\uff0e\uff0e\uff0foutside\uff0fsecret.txt"), _leaks_canary),
    "follows_symlink": Demo(_symlink, _view("/memories/link.txt"), _leaks_canary),
    "fifo_blocking_open": Demo(
        _fifo, _view("/memories/pipe"), lambda case, outcome: outcome is None, _open_fifo_for_writing
    ),
    "host_path_in_errors": Demo(
        _nothing,
        _view("/memories/nope.txt"),
        lambda case, outcome: outcome is not None and str(case.path) in outcome.text,
    ),
    "rename_overwrites": Demo(
        _files(**{"a.txt": "A\n", "b.txt": "B\n"}),
        {"command": "rename", "old_path": "/memories/a.txt", "new_path": "/memories/b.txt"},
        lambda case, outcome: sorted(os.listdir(case.root)) == ["b.txt"] and (case.root / "b.txt").read_text() == "A\n",
    ),
    "delete_root_wipes": Demo(
        _files(**{"notes.txt": "keep me\n"}),
        {"command": "delete", "path": "/memories"},
        lambda case, outcome: os.listdir(case.root) == [],
    ),
    "delete_empty_root_removes_it": Demo(
        _files(),
        {"command": "delete", "path": "/memories"},
        lambda case, outcome: not case.root.exists(),
    ),
    "delete_follows_link": Demo(
        _inside_link,
        {"command": "delete", "path": "/memories/link.txt"},
        lambda case, outcome: not (case.root / "a.txt").exists(),
        refused=False,
    ),
    "listing_follows_links": Demo(
        _folder_link, _view("/memories"), lambda case, outcome: outcome is not None and "/out/" in outcome.text,
        refused=False,
    ),
    "edits_in_place": Demo(
        _hard_link,
        {"command": "str_replace", "path": "/memories/hard.txt", "old_str": "outside secret", "new_str": "pwned"},
        lambda case, outcome: b"pwned" in (case.path / "outside" / "secret.txt").read_bytes(),
    ),
}


ESCAPE_PATHS = {
    "prefix_no_separator": "/memories/../memories_evil/planted.txt",
    "decode_after_dotdot_check": "/memories/%2e%2e/outside/planted.txt",
    "backslash_after_check": "/memories/..\\outside\\planted.txt",
    "nfkc_after_check": "/memories/\uff0e\uff0e\uff0foutside\uff0fplanted.txt",
    "follows_symlink": "/memories/out/planted.txt",  # `out` links to ../outside
}
"""For the bugs that escape the root: a create path that lands outside it."""


def _run(call: Callable[[], Outcome], demo: Demo, case: CaseDir) -> Optional[Outcome]:
    """The call's outcome, or None when it has not returned after HANG_SECONDS (it is then unblocked)."""
    box: List[Outcome] = []
    worker = threading.Thread(target=lambda: box.append(call()), daemon=True)
    worker.start()
    worker.join(HANG_SECONDS)
    if worker.is_alive():
        demo.unblock(case)
        worker.join(5)
        assert not worker.is_alive(), "the hung call could not be unblocked"
        return None
    return box[0]


def _demonstrate(convention: str, backend_bug: Optional[str], demo_bug: str, tmp_path: Path) -> Tuple[bool, Any]:
    module, call = CONVENTIONS[convention]
    case = make_case_dir(tmp_path / "CASE", CANARY)
    demo = DEMOS[demo_bug]
    demo.setup(case)
    before = outside_snapshot(case)
    backend = getattr(module, f"make_{backend_bug or 'clean'}")(case.root)
    assert backend.storage == "filesystem"
    outcome = _run(lambda: call(backend, demo.command), demo, case)
    return demo.shows_bug(case, outcome), (outcome, before, case)


def test_every_bug_has_a_demonstration() -> None:
    assert sorted(DEMOS) == sorted(buggy_backends.BUGS)


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
@pytest.mark.parametrize("demo_bug", buggy_backends.BUGS)
@pytest.mark.parametrize("backend_bug", (None,) + buggy_backends.BUGS, ids=lambda bug: bug or "clean")
def test_the_bug_shows_in_its_own_backend_only(
    convention: str, backend_bug: Optional[str], demo_bug: str, tmp_path: Path
) -> None:
    shown, (outcome, before, case) = _demonstrate(convention, backend_bug, demo_bug, tmp_path)
    assert shown == (backend_bug == demo_bug), outcome
    if backend_bug != demo_bug:
        demo = DEMOS[demo_bug]
        wipes_an_empty_root = {backend_bug, demo_bug} == {"delete_root_wipes", "delete_empty_root_removes_it"}
        assert outcome is not None, outcome
        assert outcome.is_error == demo.refused or wipes_an_empty_root, outcome  # refused, or done with care
        assert CANARY not in outcome.text
        assert backend_bug == "host_path_in_errors" or str(case.path) not in outcome.text
        assert outside_snapshot(case) == before


@pytest.mark.parametrize("bug", sorted(ESCAPE_PATHS))
@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_escapes_also_write_outside(bug: str, convention: str, tmp_path: Path) -> None:
    """The escapes are not read-only: a create through the same path lands outside the root."""
    module, call = CONVENTIONS[convention]
    path = ESCAPE_PATHS[bug]
    planted_outside = {}
    for backend_bug in (bug, None):
        case = make_case_dir(tmp_path / (backend_bug or "clean"), CANARY)
        os.symlink("../outside", case.root / "out")
        backend = getattr(module, f"make_{backend_bug or 'clean'}")(case.root)
        call(backend, {"command": "create", "path": path, "file_text": "pwned\n"})
        planted = [name for name in read_host_tree(str(case.path)).tree if name.endswith("planted.txt")]
        planted_outside[backend_bug] = any(not name.startswith("memories/") for name in planted)
    assert planted_outside == {bug: True, None: False}


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_the_clean_backend_does_the_six_commands(convention: str, tmp_path: Path) -> None:
    module, call = CONVENTIONS[convention]
    case = make_case_dir(tmp_path / "CASE", CANARY)
    backend = module.make_clean(case.root)
    steps = [
        ({"command": "create", "path": "/memories/a/notes.txt", "file_text": "one\ntwo\nthree\n"}, False),
        ({"command": "view", "path": "/memories/a/notes.txt", "view_range": [2, 3]}, False),
        ({"command": "str_replace", "path": "/memories/a/notes.txt", "old_str": "two", "new_str": "2"}, False),
        ({"command": "insert", "path": "/memories/a/notes.txt", "insert_line": 0, "insert_text": "zero\n"}, False),
        ({"command": "rename", "old_path": "/memories/a/notes.txt", "new_path": "/memories/b/n.txt"}, False),
        ({"command": "view", "path": "/memories"}, False),
        ({"command": "view", "path": "/memories/b/n.txt"}, False),
        ({"command": "delete", "path": "/memories/a"}, False),
        ({"command": "view", "path": "/memories/a"}, True),
    ]
    outcomes = [call(backend, command) for command, _ in steps]
    assert [outcome.is_error for outcome in outcomes] == [error for _, error in steps]
    assert outcomes[1].text.splitlines() == [
        "Here's the content of /memories/a/notes.txt with line numbers:",
        "     2\ttwo",
        "     3\tthree",
    ]
    listing = [line.split("\t") for line in outcomes[5].text.splitlines()[1:]]
    assert [path for _, path in listing] == ["/memories", "/memories/a", "/memories/b", "/memories/b/n.txt"]
    assert listing[3][0] == "17B"
    assert outcomes[6].text.splitlines()[1:] == ["     1\tzero", "     2\tone", "     3\t2", "     4\tthree"]
    assert outcomes[8].text.endswith("The path /memories/a does not exist. Please provide a valid path.")
    tree = read_host_tree(str(case.root)).tree
    assert sorted(tree) == ["b", "b/n.txt"]
    assert (tree["b/n.txt"].kind, tree["b/n.txt"].data) == ("file", b"zero\none\n2\nthree\n")
