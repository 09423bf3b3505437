"""The fuzzer's pure pieces: decoder, model, minimiser, and the vulnerable backend itself."""

from __future__ import annotations

import pathlib
import random

import pytest
from refmem_fuzz.minimise import ddmin, grow_texts, minimise

from refmem import tool
from refmem_harness import decode as decode_module
from refmem_harness.decode import decode
from refmem_harness.grow import MAX_EXPANDED
from refmem_harness.model import Model, Outcome, count_overlapping, n_lines
from refmem_harness.sequence_layout import HOSTILE_FIXTURES, Layout


def test_decoder_is_deterministic_and_bounded() -> None:
    rng = random.Random(5)
    for _ in range(300):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(300)))
        first, second = decode(data), decode(data)
        assert first == second
        assert 1 <= len(first) <= MAX_EXPANDED


def test_the_decoder_draws_every_command_of_the_tool_and_no_other() -> None:
    assert set(decode_module.COMMANDS) == set(tool.NAMES)


def test_short_inputs_decode_to_a_plain_view() -> None:
    assert decode(b"") == [{"command": "view", "path": "/memories"}]


def _model() -> Model:
    from refmem.paths import parse_path

    return Model(HOSTILE_FIXTURES, parse_path)


@pytest.mark.parametrize(
    "commands, outcomes",
    [
        ([{"command": "view", "path": "/memories"}], ["ok"]),
        ([{"command": "view", "path": "/memories/hard"}], ["error"]),
        ([{"command": "view", "path": "/memories/link_out/secret.txt"}], ["error"]),
        ([{"command": "delete", "path": "/memories/link_out"}], ["ok"]),
        ([{"command": "create", "path": "/memories/pipe", "file_text": ""}], ["error"]),
        ([{"command": "delete", "path": "/memories/"}], ["error"]),
        (
            [
                {"command": "create", "path": "/memories/d/f.md", "file_text": "aaa\n"},
                {"command": "str_replace", "path": "/memories/d/f.md", "old_str": "aa", "new_str": "b"},
                {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/d/e"},
                {"command": "insert", "path": "/memories/d/f.md", "insert_line": 2, "insert_text": "x"},
            ],
            ["ok", "error", "error", "error"],
        ),
        ([{"command": "view", "path": "/memories/notes.md", "view_range": [1, -1]}], ["ok"]),
        ([{"command": "view", "path": "/memories/notes.md", "view_range": [2, 1]}], ["error"]),
        ([{"command": "insert", "path": "/memories/notes.md", "insert_line": True, "insert_text": "x"}], ["error"]),
    ],
)
def test_model_outcomes(commands: list, outcomes: list) -> None:
    model = _model()
    assert [model.apply(command).value for command in commands] == outcomes


def test_model_keeps_crlf_on_insert() -> None:
    model = _model()
    command = {"command": "insert", "path": "/memories/docs/a.txt", "insert_line": 1, "insert_text": "mid"}
    assert model.apply(command) is Outcome.OK
    assert model.tree[("docs", "a.txt")] == ("file", "alpha\r\nmid\r\nbeta\r\n")


def test_model_follows_the_crlf_notes_for_carriage_returns_in_parameters() -> None:
    """D-STR-CRLF and D-INSERT-CRLF decide \r\n and lone \r in parameters; the model follows them."""
    model = _model()
    assert model.tree[("notes.md",)] == ("file", "first line\nsecond line\n")  # an LF file: verbatim
    command = {"command": "str_replace", "path": "/memories/notes.md", "old_str": "first", "new_str": "x\r\ny"}
    assert model.apply(command) is Outcome.OK
    assert model.tree[("notes.md",)] == ("file", "x\r\ny line\nsecond line\n")
    edit = {"command": "str_replace", "path": "/memories/docs/a.txt", "old_str": "alpha\r\nbeta", "new_str": "a\r\nb\r"}
    assert model.apply(edit) is Outcome.OK
    assert model.tree[("docs", "a.txt")] == ("file", "a\r\nb\r\r\n")
    insert = {"command": "insert", "path": "/memories/docs/a.txt", "insert_line": 0, "insert_text": "z\r\n"}
    assert model.apply(insert) is Outcome.OK
    assert model.tree[("docs", "a.txt")] == ("file", "z\r\na\r\nb\r\r\n")


def test_model_says_unknown_where_the_notes_are_silent() -> None:
    model = _model()
    assert model.apply({"command": "str_replace", "path": "/memories/notes.md", "old_str": "x"}) is Outcome.UNKNOWN
    # Once unsure of the tree, the model stays unsure: it never judges a later step on a guess.
    assert model.apply({"command": "view", "path": "/memories"}) is Outcome.UNKNOWN


def test_line_helpers() -> None:
    assert [n_lines(t) for t in ("", "\n", "a", "a\nb", "a\nb\n")] == [0, 1, 1, 2, 2]
    assert count_overlapping("aaa", "aa") == 2


def test_ddmin_finds_the_one_failing_command() -> None:
    items = list(range(40))
    assert ddmin(items, lambda xs: 17 in xs) == [17]
    assert sorted(ddmin(items, lambda xs: 3 in xs and 31 in xs)) == [3, 31]


def test_minimiser_shrinks_commands_paths_and_texts() -> None:
    commands = [
        {"command": "create", "path": "/memories/a/b/evil/c", "file_text": "long text here"},
        {"command": "view", "path": "/memories", "view_range": [1, 2]},
        {"command": "delete", "path": "/memories/x"},
    ]

    def fails(candidate: list) -> bool:
        return any("evil" in str(c.get("path", "")) for c in candidate if isinstance(c, dict))

    assert minimise(commands, fails) == [{"command": "create", "path": "/memories/evil", "file_text": "l"}]


def test_growing_a_cost_finding_doubles_its_texts_and_nothing_else() -> None:
    commands = [
        {"command": "create", "path": "/memories/a", "file_text": "ab\n"},
        {"command": "str_replace", "path": "/memories/a", "old_str": "b", "new_str": ""},
        "not an object",
    ]
    grown = grow_texts(commands)
    assert grown == [
        {"command": "create", "path": "/memories/a", "file_text": "ab\nab\n"},
        {"command": "str_replace", "path": "/memories/a", "old_str": "bb", "new_str": ""},
        "not an object",
    ]
    assert commands[0]["file_text"] == "ab\n"  # the finding's own commands are left as they were


def test_layout_snapshot_sees_changes_outside(tmp_path: pathlib.Path) -> None:
    layout = Layout(tmp_path / "w", hostile=True)
    layout.reset()
    assert layout.outside_changes() == []
    (layout.case / "memories_evil" / "new.txt").write_text("x")
    (layout.case / "outside" / "secret.txt").write_text("changed")
    assert len(layout.outside_changes()) == 2
    layout.reset()
    assert layout.outside_changes() == []


def test_vulnerable_backend_has_real_escapes(tmp_path: pathlib.Path) -> None:
    from vulnerable_backend import make, make_percent_only

    layout = Layout(tmp_path / "w", hostile=False)
    layout.reset()
    both = make(layout.root)
    leaked = both.execute({"command": "view", "path": "/memories_evil/secret.txt"})
    assert layout.canary in leaked.output
    percent = make_percent_only(layout.root)
    assert percent.execute({"command": "view", "path": "/memories_evil/secret.txt"}).is_error
    leaked = percent.execute({"command": "view", "path": "/memories/%2e%2e/outside/secret.txt"})
    assert layout.canary in leaked.output
    assert percent.execute({"command": "view", "path": "/memories/../outside/secret.txt"}).is_error


def test_libfuzzers_input_limit_stays_above_every_step_the_harness_may_measure() -> None:
    """libFuzzer's -timeout is a backstop: an input of the most steps, each cut at the step timeout and measured
    as often as a cost finding is confirmed, ends before it; without a step timeout the backstop is all there is."""
    from refmem_fuzz.cost import CONFIRM_RUNS

    from refmem_fuzz import engine_atheris
    from refmem_harness.decode import MAX_COMMANDS

    for step in (0.5, 5.0, 60.0):
        longest = (MAX_COMMANDS + 1) * (1 + CONFIRM_RUNS) * step
        assert engine_atheris.input_timeout(step) > longest
    assert engine_atheris.input_timeout(60.0) > 60
    assert engine_atheris.input_timeout(None) == engine_atheris.BACKSTOP_SECONDS


def test_the_dictionary_holds_the_suites_hostile_payloads() -> None:
    """The payloads are the suite's data file, read from beside the harness (refmem_harness/suite_files.py): a
    harness module that moves without it would fuzz with a smaller dictionary and say nothing."""
    from refmem_harness import tokens

    assert tokens.PAYLOADS_FILE.is_file()
    paths, names = tokens.payload_seeds()
    assert len(paths) > 10 and len(names) > 10
