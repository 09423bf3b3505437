"""Matchers and checks that accept every reading the documentation allows, and no more; data-loss readings."""

from __future__ import annotations

from refmem_conformance.checks import reads_as_error
from refmem_conformance.dataloss import lost, readings, touched
from refmem_conformance.matchers import match_problem, size_fits

HEADER = "Here's the content of /memories/a.txt with line numbers:"


def test_human_readable_sizes_accept_roundings_and_refuse_other_values() -> None:
    for shown in ("5.5K", "6K", "5K", "5.5KiB", "5.5KB", "5632B"):
        assert size_fits(shown, 5632), shown
    for shown in ("7K", "5.4K", "5632", "5.5 kilobytes", "4.0K"):
        assert not size_fits(shown, 5632), shown
    assert size_fits("60B", None) and size_fits("4.0K", None) and not size_fits("4096", None)


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


def test_data_loss_spares_what_commands_act_on_and_follows_links_inside() -> None:
    tree = {"a.txt": ("file", b"a", 0o600), "link": ("symlink", "a.txt"), "keep": ("file", b"k", 0o600)}
    names = touched([{"command": "str_replace", "path": "/memories/link"}], tree, {})
    assert names == {"link", "a.txt"}
    after = {"link": ("symlink", "a.txt"), "a.txt": ("file", b"b", 0o600)}
    assert [path for path, _, _ in lost(tree, after, names)] == ["keep"]
    # create and rename's destination act on nothing that exists; the root is never acted on
    assert touched([{"command": "create", "path": "/memories/keep"}], tree, {}) == set()
    assert touched([{"command": "rename", "old_path": "/memories/a.txt", "new_path": "/memories/keep"}], tree, {}) == {"a.txt"}
    assert touched([{"command": "delete", "path": "/memories/"}], tree, {}) == set()
