"""The handler's results where a conformance case cannot say it, by the decision ID each test pins.

The documented and decided strings are held once, in conformance/cases/, which
tests/conformance/test_conformance_suite.py runs against this handler. The tests here check what a
case cannot express (Python values, file modes, names no JSON string can spell, a content policy that
is a function, a failure made on purpose) or what no case pins yet. Their expected results come from
`refmem.messages.render`, so they check that the right message is chosen and filled, not its wording.
"""

from __future__ import annotations

import os
import stat
from typing import Any, Dict, List, Tuple

import pytest
from memory_support import Memory

from refmem import Limits, MemoryHandler
from refmem.messages import IO_REASONS, KIND_INTEGER, KIND_STRING, RULE_BACKSLASH, RULE_DOTS, render

VALID: Dict[str, Dict[str, Any]] = {
    "view": {"path": "/memories"},
    "create": {"path": "/memories/n.txt", "file_text": "t"},
    "str_replace": {"path": "/memories/n.txt", "old_str": "a", "new_str": "b"},
    "insert": {"path": "/memories/n.txt", "insert_line": 0, "insert_text": "x"},
    "delete": {"path": "/memories/n.txt"},
    "rename": {"old_path": "/memories/n.txt", "new_path": "/memories/m.txt"},
}
REQUIRED = [(command, name) for command, parameters in VALID.items() for name in parameters]
KINDS = {"insert_line": KIND_INTEGER}


# --- D-INPUT-* ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [{1: "x"}, {("command",): "view"}, b"view", {"command", "view"}], ids=lambda v: type(v).__name__
)
def test_D_INPUT_OBJECT_python_values_no_json_can_spell(memory: Memory, value: Any) -> None:
    assert memory.run(value) == render("input_not_object")


def test_D_INPUT_COMMAND_null_is_missing(memory: Memory) -> None:
    assert memory.run({"command": None}) == render("command_missing")


WRONG_VALUES = [1, 0, -3, 2.0, 1.5, True, False, [], ["/memories"], {}, {"a": 1}, [[1]], "1"]


def _wrong_for(name: str, value: Any) -> bool:
    if KINDS.get(name) == KIND_INTEGER:
        return not (isinstance(value, int) and not isinstance(value, bool))
    return not isinstance(value, str)


WRONG = [(command, name, value) for command, name in REQUIRED for value in WRONG_VALUES if _wrong_for(name, value)]


@pytest.mark.parametrize("command, name, value", WRONG, ids=[f"{c}-{n}-{v!r}" for c, n, v in WRONG])
def test_D_INPUT_TYPE_every_parameter_every_wrong_type(memory: Memory, command: str, name: str, value: Any) -> None:
    kind = KINDS.get(name, KIND_STRING)
    assert memory.run({"command": command, **VALID[command], name: value}) == render(
        "param_type", name=name, kind=kind, command=command
    )


def test_D_INPUT_MISSING_view_range_null_on_a_folder_is_absent(memory: Memory) -> None:
    memory.put("d/f.txt", "a\n")
    assert memory.run(command="view", path="/memories", view_range=None) == memory.run(command="view", path="/memories")


@pytest.mark.parametrize(
    "tool_input, key, values",
    [
        ({"command": "create", "file_text": 5}, "param_missing", {"name": "path", "command": "create"}),
        ({"command": "create", "path": 5}, "param_type", {"name": "path", "kind": KIND_STRING, "command": "create"}),
        (
            {"command": "str_replace", "path": "/memories/a", "new_str": 1},
            "param_missing",
            {"name": "old_str", "command": "str_replace"},
        ),
        (
            {"command": "insert", "path": "/memories/a", "insert_text": 1, "insert_line": "x"},
            "param_type",
            {"name": "insert_line", "kind": KIND_INTEGER, "command": "insert"},
        ),
        ({"command": "rename", "new_path": 1}, "param_missing", {"name": "old_path", "command": "rename"}),
    ],
    ids=["create-path", "create-path-type", "str_replace-old_str", "insert-insert_line", "rename-old_path"],
)
def test_D_INPUT_ORDER_parameters_in_table_order(
    memory: Memory, tool_input: Dict[str, Any], key: str, values: Dict[str, str]
) -> None:
    assert memory.run(tool_input) == render(key, **values)


def test_D_INPUT_ORDER_parameters_before_read_only(memory: Memory) -> None:
    read_only = memory.with_options(read_only=True)
    assert read_only.run(command="delete") == render("param_missing", name="path", command="delete")


def test_D_INPUT_SIZE_counts_bytes_in_every_text_parameter(memory: Memory) -> None:
    small = memory.with_options(limits=Limits(max_file_bytes=10))
    memory.put("a", "x" * 10)

    def too_big(name: str, size: int) -> object:
        return render("param_too_big", name=name, n=size, max=10)

    assert small.run(command="create", path="/memories/b", file_text="\u00e9" * 6) == too_big("file_text", 12)
    assert small.run(command="str_replace", path="/memories/a", old_str="x" * 11, new_str="") == too_big("old_str", 11)
    assert small.run(command="insert", path="/memories/a", insert_line=0, insert_text="y" * 11) == too_big(
        "insert_text", 11
    )
    assert memory.tree() == {"a": b"x" * 10}


@pytest.mark.parametrize("command, name", [("create", "path"), ("rename", "old_path"), ("rename", "new_path")])
def test_D_INPUT_SIZE_lone_surrogate_in_a_path(memory: Memory, command: str, name: str) -> None:
    tool_input = {"command": command, **VALID[command], name: "/memories/a\ud800b"}
    assert memory.run(tool_input) == render("param_not_unicode", name=name)


# --- D-ECHO and D-PATH-* --------------------------------------------------------------------------


def test_D_PATH_RULES_backslash_is_reported_before_a_control_character(memory: Memory) -> None:
    assert memory.run(command="view", path="/memories/a\n/b\\") == render(
        "path_invalid", path="/memories/a\\n/b\\\\", rule=RULE_BACKSLASH
    )


def test_D_ECHO_listing_cannot_be_forged_by_a_name_on_disk(memory: Memory) -> None:
    """D-ECHO: "no echoed value can forge a line in a listing" -- also a name another program wrote."""
    memory.put("x\n9.9K\tforged", "x")
    lines = memory.run(command="view", path="/memories").output.split("\n")
    assert "9.9K\tforged" not in lines
    assert all(line.startswith(("4.0K\t/memories", "1B\t/memories")) for line in lines[1:])


def test_D_ECHO_listing_of_a_non_utf8_name_on_disk_is_utf8_text(memory: Memory) -> None:
    """Spec notes: "All text is UTF-8." A name of raw bytes on disk must not break the result."""
    memory.root.mkdir(exist_ok=True)
    with open(os.fsencode(memory.root) + b"/\xff.txt", "wb") as handle:
        handle.write(b"x")
    assert not memory.run(command="view", path="/memories").is_error


@pytest.mark.parametrize("command", list(VALID))
def test_D_PATH_RULES_every_command_reports_the_rule(memory: Memory, command: str) -> None:
    key = "old_path" if command == "rename" else "path"
    raw = "/memories/a/../../etc/passwd"
    assert memory.run({"command": command, **VALID[command], key: raw}) == render(
        "path_invalid", path=raw, rule=RULE_DOTS
    )
    assert not (memory.base / "etc").exists()


def test_D_PATH_CANON_trailing_slash_on_a_file_does_not_exist_for_insert_and_rename(memory: Memory) -> None:
    memory.put("f.txt", "a\n")
    assert memory.run(command="insert", path="/memories/f.txt/", insert_line=0, insert_text="b") == render(
        "insert_missing", path="/memories/f.txt"
    )
    assert memory.run(command="rename", old_path="/memories/f.txt/", new_path="/memories/g") == render(
        "rename_missing", old_path="/memories/f.txt"
    )
    assert memory.tree() == {"f.txt": b"a\n"}


# --- D-FS-* (tests/filesystem/test_attacks.py has the full table) --------------------------------------------


def test_D_FS_rename_and_delete_move_links_and_special_files_as_they_are(memory: Memory) -> None:
    memory.put("real.txt", "r\n")
    os.symlink("real.txt", memory.root / "link")
    os.mkfifo(memory.root / "pipe")
    assert not memory.run(command="rename", old_path="/memories/link", new_path="/memories/moved").is_error
    assert not memory.run(command="rename", old_path="/memories/pipe", new_path="/memories/p2").is_error
    assert memory.tree() == {"real.txt": b"r\n", "moved": b"->real.txt", "p2": b"<special>"}
    assert stat.S_ISFIFO(os.lstat(memory.root / "p2").st_mode)
    assert not memory.run(command="delete", path="/memories/moved").is_error
    assert not memory.run(command="delete", path="/memories/p2").is_error
    assert memory.tree() == {"real.txt": b"r\n"}


def test_D_FS_RESERVED_edits_leave_no_temporary_files(memory: Memory) -> None:
    assert not memory.run(command="create", path="/memories/d/a.txt", file_text="a").is_error
    assert not memory.run(command="str_replace", path="/memories/d/a.txt", old_str="a", new_str="b").is_error
    assert not memory.run(command="insert", path="/memories/d/a.txt", insert_line=1, insert_text="c").is_error
    assert os.listdir(memory.root / "d") == ["a.txt"]
    assert not memory.run(command="delete", path="/memories/d").is_error
    assert [name for name in os.listdir(memory.root) if name != ".refmem"] == []


# --- view -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/memories", "/memories/"])
def test_D_VIEW_RANGE_on_the_root(memory: Memory, path: str) -> None:
    memory.put("f.txt", "a\nb\n")
    assert memory.run(command="view", path=path, view_range=[1, 2]) == render("view_range_on_dir")


def _page(path: str, *lines: str) -> str:
    return "\n".join([render("view_file_header", path=path).output, *lines])


def test_D_VIEW_PAGINATE_line_cut_note_names_the_end_of_the_range(memory: Memory) -> None:
    small = memory.with_options(limits=Limits(max_view_chars=20))
    memory.put("long.txt", "a" * 50 + "\nb\n")
    note = render("view_line_cut", n=1, length=50, shown=13, next=2, end=2).output
    assert small.run(command="view", path="/memories/long.txt", view_range=[1, 2]).output == _page(
        "/memories/long.txt", "     1\t" + "a" * 13, note
    )


@pytest.mark.parametrize("big", [False, True], ids=["small-file", "streamed-file"])
def test_D_VIEW_PAGINATE_crlf_line_cut_reports_the_shown_length(memory: Memory, big: bool) -> None:
    """D-VIEW-CRLF shows a CRLF line without its \\r, so the cut note counts the line as shown."""
    small = memory.with_options(limits=Limits(max_view_chars=20))
    filler = b"x\r\n" * (200_000 if big else 0)
    memory.put("long.txt", b"a" * 50 + b"\r\n" + filler + b"b\r\n")
    out = small.run(command="view", path="/memories/long.txt", view_range=[1, -1]).output
    assert out.endswith("\n" + render("view_line_cut", n=1, length=50, shown=13, next=2, end=-1).output)


# --- create, str_replace, rename: what stays on disk ---------------------------------------------


def test_D_CREATE_PARENTS_made_with_mode_0700(memory: Memory) -> None:
    assert not memory.run(command="create", path="/memories/a/b/c.txt", file_text="c").is_error
    assert stat.S_IMODE(os.stat(memory.root / "a").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(memory.root / "a" / "b").st_mode) == 0o700


def test_D_CREATE_PARENTS_a_file_further_up_is_named(memory: Memory) -> None:
    memory.put("f", "x")
    assert memory.run(command="create", path="/memories/f/g/c.txt", file_text="c") == render(
        "create_parent_not_dir", path="/memories/f/g/c.txt", parent="/memories/f"
    )
    assert memory.tree() == {"f": b"x"}


def test_D_CREATE_MODE_0600(memory: Memory) -> None:
    assert not memory.run(command="create", path="/memories/m.txt", file_text="m").is_error
    assert stat.S_IMODE(os.stat(memory.root / "m.txt").st_mode) == 0o600


def test_create_keeps_bytes_exactly(memory: Memory) -> None:
    text = "a\r\nb\n\u00e9\U0001f600\x00end"
    assert not memory.run(command="create", path="/memories/x.bin", file_text=text).is_error
    assert memory.read("x.bin") == text.encode()


def test_D_STR_SNIPPET_capped_like_a_view(memory: Memory) -> None:
    small = memory.with_options(limits=Limits(max_view_chars=30))
    memory.put("s.txt", "".join(f"line {n}\n" for n in range(1, 10)))
    out = small.run(command="str_replace", path="/memories/s.txt", old_str="line 5", new_str="five").output
    body = out.split("\n", 1)[1]
    assert len(body) <= 30
    assert "[" not in body  # no note


@pytest.mark.parametrize("new", ["%s", "{0}", "${x}"])
def test_D_STR_SPECIAL_format_specifiers_are_literal(memory: Memory, new: str) -> None:
    memory.put("s.txt", "(a)b\n")
    assert not memory.run(command="str_replace", path="/memories/s.txt", old_str="(a)", new_str=new).is_error
    assert memory.read("s.txt") == (new + "b\n").encode()


def test_str_replace_keeps_mode(memory: Memory) -> None:
    path = memory.put("m.txt", "a")
    os.chmod(path, 0o640)
    assert not memory.run(command="str_replace", path="/memories/m.txt", old_str="a", new_str="b").is_error
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_D_RENAME_PARENTS_made_with_mode_0700(memory: Memory) -> None:
    memory.put("a.txt", "a")
    assert not memory.run(command="rename", old_path="/memories/a.txt", new_path="/memories/new/deeper/a.txt").is_error
    assert memory.tree() == {"new": None, "new/deeper": None, "new/deeper/a.txt": b"a"}
    assert stat.S_IMODE(os.stat(memory.root / "new").st_mode) == 0o700


def test_rename_folder_with_trailing_slashes_on_both_paths(memory: Memory) -> None:
    memory.put("d/a.txt", "a")
    assert memory.run(command="rename", old_path="/memories/d/", new_path="/memories/e/") == render(
        "rename_ok", old_path="/memories/d", new_path="/memories/e"
    )
    assert memory.tree() == {"e": None, "e/a.txt": b"a"}


def test_D_RENAME_NOREPLACE_an_empty_folder_is_not_replaced(memory: Memory) -> None:
    """rename(2) replaces an empty folder; the handler must not."""
    memory.put("a.txt", "a")
    memory.put("d/x", "x")
    (memory.root / "t").mkdir()
    before = memory.tree()
    for source in ("/memories/a.txt", "/memories/d"):
        assert memory.run(command="rename", old_path=source, new_path="/memories/t") == render(
            "rename_exists", new_path="/memories/t"
        )
    assert memory.tree() == before


def test_D_RENAME_INTO_SELF_is_reported_before_a_file_on_the_way(memory: Memory) -> None:
    memory.put("d/a.txt", "a")
    assert memory.run(command="rename", old_path="/memories/d", new_path="/memories/d/a.txt/x") == render(
        "rename_into_self", old_path="/memories/d", new_path="/memories/d/a.txt/x"
    )
    assert memory.tree() == {"d": None, "d/a.txt": b"a"}


# --- results --------------------------------------------------------------------------------------


def test_D_IS_ERROR_every_result_type(memory: Memory) -> None:
    """One command per result the handler can give; `Memory.run` checks is_error against the success forms."""
    small = memory.with_options(limits=Limits(max_file_bytes=64))
    memory.put("f.txt", "a\nb\na\n")
    memory.put("d/x", "x")
    memory.put("bad.txt", b"\xff")
    os.symlink("f.txt", memory.root / "l")
    os.mkfifo(memory.root / "p")
    memory.put("big.txt", "z" * 100)
    memory.put("w.txt", "0123456789")
    results = [
        small.run(tool_input)
        for tool_input in [
            {"command": "view", "path": "/memories"},
            {"command": "view", "path": "/memories/f.txt"},
            {"command": "view", "path": "/memories/nope"},
            {"command": "view", "path": "/memories/f.txt", "view_range": [9, 9]},
            {"command": "view", "path": "/memories/f.txt", "view_range": [1, 9]},
            {"command": "view", "path": "/memories/f.txt", "view_range": [2, 1]},
            {"command": "view", "path": "/memories/f.txt", "view_range": "x"},
            {"command": "view", "path": "/memories/d", "view_range": [1, 1]},
            {"command": "view", "path": "/memories/l"},
            {"command": "view", "path": "/memories/p"},
            {"command": "view", "path": "/memories/bad.txt"},
        ]
    ]
    for tool_input in [
        {"command": "create", "path": "/memories/n.txt", "file_text": "n"},
        {"command": "create", "path": "/memories/n.txt", "file_text": "n"},
        {"command": "create", "path": "/memories/f.txt/x", "file_text": "n"},
        {"command": "str_replace", "path": "/memories/f.txt", "old_str": "b", "new_str": "B"},
        {"command": "str_replace", "path": "/memories/f.txt", "old_str": "zz", "new_str": "B"},
        {"command": "str_replace", "path": "/memories/f.txt", "old_str": "a", "new_str": "B"},
        {"command": "str_replace", "path": "/memories/f.txt", "old_str": "", "new_str": "B"},
        {"command": "str_replace", "path": "/memories/nope", "old_str": "a", "new_str": "B"},
        {"command": "str_replace", "path": "/memories/w.txt", "old_str": "0", "new_str": "x" * 60},
        {"command": "str_replace", "path": "/memories/big.txt", "old_str": "z", "new_str": "y"},
        {"command": "insert", "path": "/memories/f.txt", "insert_line": 1, "insert_text": "i"},
        {"command": "insert", "path": "/memories/f.txt", "insert_line": 99, "insert_text": "i"},
        {"command": "insert", "path": "/memories/nope", "insert_line": 0, "insert_text": "i"},
        {"command": "delete", "path": "/memories/n.txt"},
        {"command": "delete", "path": "/memories/n.txt"},
        {"command": "delete", "path": "/memories"},
        {"command": "rename", "old_path": "/memories/f.txt", "new_path": "/memories/g.txt"},
        {"command": "rename", "old_path": "/memories/f.txt", "new_path": "/memories/g.txt"},
        {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/g.txt"},
        {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/d/e"},
        {"command": "rename", "old_path": "/memories", "new_path": "/memories/e"},
        {"command": "rename", "old_path": "/memories/g.txt", "new_path": "/memories/p/q"},
        {"command": "frobnicate"},
        {"command": 7},
        {"path": "/memories"},
        {"command": "view"},
        {"command": "view", "path": 7},
        {"command": "view", "path": "/x"},
        {"command": "view", "path": "/memories/\ud800"},
        {"command": "create", "path": "/memories/huge", "file_text": "h" * 65},
        None,
    ]:
        results.append(small.run(tool_input))
    assert sum(not result.is_error for result in results) == 7
    assert all(result.output for result in results)


def test_D_LIMIT_WRITE_would_be_too_big_counts_crlf_bytes(memory: Memory) -> None:
    small = memory.with_options(limits=Limits(max_file_bytes=10))
    memory.put("c.txt", b"a\r\nb\r\n")  # 6 bytes; "x\ny" goes in as "x\r\ny\r\n", 12 in all
    assert small.run(command="insert", path="/memories/c.txt", insert_line=2, insert_text="x\ny") == render(
        "file_too_big", path="/memories/c.txt", n=12, max=10
    )
    assert memory.read("c.txt") == b"a\r\nb\r\n"


def _no_keys(text: str) -> Tuple[str, List[str]]:
    return text, (["a private key block"] if "PRIVATE KEY" in text else [])


def test_D_POLICY_content_policy_hook(memory: Memory) -> None:
    vetted = memory.with_options(content_policy=_no_keys)
    key = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
    refused = render("content_refused", what="a private key block")
    assert vetted.run(command="create", path="/memories/k.txt", file_text=key) == refused
    assert memory.tree() == {}
    assert not vetted.run(command="create", path="/memories/k.txt", file_text="fine\n").is_error
    assert vetted.run(command="str_replace", path="/memories/k.txt", old_str="fine", new_str=key) == refused
    assert vetted.run(command="insert", path="/memories/k.txt", insert_line=0, insert_text=key) == refused
    assert memory.read("k.txt") == b"fine\n"


def test_D_POLICY_cleaning_policy_and_list_of_kinds(memory: Memory) -> None:
    def clean(text: str) -> Tuple[str, List[str]]:
        refused = [kind for kind in ("card", "jwt", "card") if kind.upper() in text]
        return text.replace("secret", "[removed]"), refused

    cleaning = memory.with_options(content_policy=clean)
    assert not cleaning.run(command="create", path="/memories/c.txt", file_text="a secret b\n").is_error
    assert memory.read("c.txt") == b"a [removed] b\n"
    assert cleaning.run(command="create", path="/memories/d.txt", file_text="CARD JWT") == render(
        "content_refused", what="card and jwt"
    )


def test_D_INTERNAL_never_raises(memory: Memory) -> None:
    def broken(text: str) -> Tuple[str, List[str]]:
        raise RuntimeError("policy bug " + str(memory.base))

    with MemoryHandler(memory.root, content_policy=broken) as handler:
        result = handler.execute({"command": "create", "path": "/memories/a", "file_text": "x"})
    assert result == render("internal_error")
    assert not (memory.root / "a").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions; tests/filesystem/test_faults_fakefs.py covers D-IO")
def test_D_IO_message_shape_on_a_read_only_folder(memory: Memory) -> None:
    memory.put("d/a.txt", "a")
    os.chmod(memory.root / "d", 0o500)
    try:
        assert memory.run(command="create", path="/memories/d/b.txt", file_text="b") == render(
            "io_error", action="create", path="/memories/d/b.txt", reason=IO_REASONS["denied"]
        )
    finally:
        os.chmod(memory.root / "d", 0o700)
