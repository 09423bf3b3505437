"""Matchers and checks that accept every reading the documentation allows, and no more; data-loss readings."""

from __future__ import annotations

import hashlib

from refmem_conformance.checks import reads_as_error
from refmem_conformance.dataloss import lost, readings, shared_inodes, touched, why_lost
from refmem_conformance.matchers import match_problem, size_fits

from refmem_harness.hosttree import DIR, FILE, LINK, Node

HEADER = "Here's the content of /memories/a.txt with line numbers:"


def test_human_readable_sizes_accept_roundings_and_refuse_other_values() -> None:
    for shown in ("5.5K", "6K", "5K", "5.5KiB", "5.5KB", "5632B"):
        assert size_fits(shown, 5632), shown
    for shown in ("7K", "5.4K", "5632", "5.5 kilobytes", "4.0K"):
        assert not size_fits(shown, 5632), shown
    assert size_fits("60B", None) and size_fits("4.0K", None) and not size_fits("4096", None)
    # below 1K a bare count is what `ls -h` prints (a folder on tmpfs is 60, an empty one 0 for `du -h`)
    assert size_fits("60", None) and size_fits("0", None) and size_fits("60", 60) and not size_fits("61", 59)
    assert not size_fits("1024", None) and not size_fits("5.5", None)


def test_a_final_newline_may_end_the_last_line_or_show_as_an_empty_one() -> None:
    spec = {"numbered": {"text": "a\nb\n"}}
    assert match_problem(spec, f"{HEADER}\n     1\ta\n     2\tb") is None
    assert match_problem(spec, f"{HEADER}\n     1\ta\n     2\tb\n     3\t") is None
    assert match_problem(spec, f"{HEADER}\n     1\ta\n     2\tb\n") is None
    assert match_problem(spec, f"{HEADER}\n    1\ta\n    2\tb") is not None  # width 5
    assert match_problem(spec, f"{HEADER}\n     1 a\n     2 b") is not None  # no TAB
    assert match_problem(spec, "     1\ta\n     2\tb") is not None  # no header line
    assert match_problem({"numbered": {"text": ""}}, HEADER) is None
    assert match_problem({"numbered": {"text": "a\nb\nc\n", "range": [2, 3]}}, f"{HEADER}\n     2\tb\n     3\tc") is None


def test_listings_accept_any_order_and_human_size_but_not_hidden_or_missing_entries() -> None:
    spec = {"listing": {"entries": [["/memories", None], ["/memories/a/", None], ["/memories/a/x.txt", 1536]],
                        "exact": True}}
    assert match_problem(spec, "H:\n4.0K\t/memories\n4.0K\t/memories/a/\n1.5K\t/memories/a/x.txt") is None
    assert match_problem(spec, "H:\n60B\t/memories\n2K\t/memories/a/x.txt\n100B\t/memories/a") is None
    problem = match_problem(spec, "H:\n4.0K\t/memories\n1.5K\t/memories/a/x.txt\n1B\t/memories/.hidden")
    assert problem is not None and "/memories/a∎ is not listed" in problem and ".hidden∎ is listed" in problem
    assert match_problem(spec, "H:\n4.0K /memories\n4.0K\t/memories/a\n1.5K\t/memories/a/x.txt") is not None


def test_an_output_reads_as_an_error_by_its_words_not_by_echoed_names() -> None:
    assert reads_as_error("Error: whatever", {})
    assert reads_as_error("The path /memories/x does not exist. Please provide a valid path.", {})
    assert reads_as_error("Symlink loop from '/x'", {})
    assert not reads_as_error("Successfully deleted /memories/error.txt", {})
    assert not reads_as_error("File created at /memories/invalid.txt", {"path": "/memories/invalid.txt"})


def test_a_path_names_what_every_allowed_reading_makes_of_it() -> None:
    assert readings("/memories/./a//b/../c") == {"a/c"}
    assert readings("/memories/..") == set()  # climbs out: names nothing inside
    assert readings("/memories_evil/x") == {"_evil/x"}  # a string-prefix check that stays inside
    assert "a" in readings("/memories/a.")  # Windows drops a trailing dot
    assert readings("/memories/valid.txt\x00.md") == {"valid.txt\x00.md"}  # NUL truncation is not a reading


def _file(data: bytes, identity: int = 0, nlink: int = 1) -> Node:
    return Node(FILE, 0o600, len(data), digest=hashlib.sha256(data).hexdigest(), data=data, identity=(1, identity),
                nlink=nlink)


def test_data_loss_spares_what_commands_act_on_and_follows_links_inside() -> None:
    tree = {"a.txt": _file(b"a"), "link": Node(LINK, target="a.txt"), "keep": _file(b"k")}
    names = touched([{"command": "str_replace", "path": "/memories/link"}], tree, {})
    assert names == {"link", "a.txt"}
    after = {"link": Node(LINK, target="a.txt"), "a.txt": _file(b"b")}
    assert [path for path, _, _ in lost(tree, after, names)] == ["keep"]
    # create and rename's destination act on nothing that exists; the root is never acted on
    assert touched([{"command": "create", "path": "/memories/keep"}], tree, {}) == set()
    assert touched([{"command": "rename", "old_path": "/memories/a.txt", "new_path": "/memories/keep"}], tree, {}) == {"a.txt"}
    assert touched([{"command": "delete", "path": "/memories/"}], tree, {}) == set()


def test_deleting_or_renaming_a_link_names_the_link_not_its_target() -> None:
    """ "Delete this symlink" deleting its target is data loss: the command named the link (issue: a link's
    target lost came out as a reference finding)."""
    tree = {"a.txt": _file(b"a"), "link": Node(LINK, target="a.txt"), "dir": Node(DIR), "dir/x": _file(b"x"),
            "to_dir": Node(LINK, target="dir")}
    for command in ({"command": "delete", "path": "/memories/link"},
                    {"command": "rename", "old_path": "/memories/link", "new_path": "/memories/moved"}):
        names = touched([command], tree, {})
        assert names == {"link"}
        after = {"dir": Node(DIR), "dir/x": _file(b"x"), "to_dir": Node(LINK, target="dir")}
        assert [path for path, _, _ in lost(tree, after, names)] == ["a.txt"]
        assert "points to it" in why_lost("a.txt", [command], tree)
    # a link on the way to the last name may be followed (a canonicalising reading): dir/x is what it names
    assert touched([{"command": "delete", "path": "/memories/to_dir/x"}], tree, {}) == {"to_dir/x", "dir/x"}
    # create names what it must not overwrite: the message says so, not "no command acts on it"
    assert "never overwrite" in why_lost("a.txt", [{"command": "create", "path": "/memories/a.txt"}], tree)
    assert why_lost("keep", [{"command": "view", "path": "/memories"}], tree) == "no command of the case acts on it"


def test_an_edit_through_a_hard_link_touches_every_name_of_the_file_a_delete_only_its_own() -> None:
    tree = {"a": _file(b"same", identity=7, nlink=2), "b": _file(b"same", identity=7, nlink=2)}
    shared = shared_inodes(tree)
    assert touched([{"command": "str_replace", "path": "/memories/a"}], tree, shared) == {"a", "b"}
    assert touched([{"command": "delete", "path": "/memories/a"}], tree, shared) == {"a"}
