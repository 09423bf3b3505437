"""Every string the handler returns, against the documentation and docs/spec-notes.md.

Expected strings are written out here from the documentation and the spec notes, never taken from
refmem.messages, so a changed template fails. Test names carry the decision ID they pin.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from refmem import Limits, MemoryHandler, Result

SUCCESS_PREFIXES = (
    "Here're the files and directories up to 2 levels deep in ",
    "Here's the content of ",
    "File created successfully at: ",
    "The memory file has been edited.",
    "Successfully deleted ",
    "Successfully renamed ",
)
LIST_HEADER = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:"
INTERNAL = "Error: The command could not be completed because of an internal error."


class Mem:
    """A handler over tmp_path/memories with helpers to arrange and inspect the disk."""

    def __init__(self, tmp_path: Path, **options: Any) -> None:
        self.base = tmp_path
        self.dir = tmp_path / "memories"
        self.handler = MemoryHandler(self.dir, **options)

    def __call__(self, *given: Any, **params: Any) -> Result:
        tool_input = given[0] if given else params
        result = self.handler.execute(tool_input)
        assert isinstance(result.output, str)
        assert result.output != INTERNAL, f"D-INTERNAL finding for {tool_input!r}"
        assert str(self.base) not in result.output
        assert "Traceback" not in result.output
        result.output.encode("utf-8")  # every result is UTF-8 text
        assert result.is_error is (not result.output.startswith(SUCCESS_PREFIXES) and not _insert_ok(result.output))
        return result

    def put(self, rel: str, data: bytes | str) -> Path:
        path = self.dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    def bytes(self, rel: str) -> bytes:
        return (self.dir / rel).read_bytes()

    def tree(self) -> Dict[str, Optional[bytes]]:
        """Every name below the root (the handler's own .refmem folder aside): content, or None for folders."""
        found: Dict[str, Optional[bytes]] = {}
        for top, dirs, files in os.walk(self.dir):
            rel_top = os.path.relpath(top, self.dir)
            if rel_top == ".":
                dirs[:] = [d for d in dirs if d != ".refmem"]
            for name in dirs:
                found[os.path.normpath(os.path.join(rel_top, name))] = None
            for name in files:
                path = os.path.join(top, name)
                found[os.path.normpath(os.path.join(rel_top, name))] = (
                    Path(path).read_bytes() if not os.path.islink(path) else b"->" + os.readlink(path).encode()
                )
        return found


def _insert_ok(output: str) -> bool:
    return output.startswith("The file ") and output.endswith(" has been edited.")


@pytest.fixture
def mem(tmp_path: Path) -> Mem:
    return Mem(tmp_path)


def ok(result: Result) -> str:
    assert not result.is_error, result.output
    return result.output


def err(result: Result) -> str:
    assert result.is_error, result.output
    return result.output


# --- the documentation's worked examples, byte for byte -------------------------------------------


def test_doc_listing_example(mem: Mem) -> None:
    mem.put("customer_service_guidelines.xml", "x" * 1536)
    mem.put("refund_policies.xml", "y" * 2048)
    assert ok(mem(command="view", path="/memories")) == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and "
        "node_modules:\n4.0K\t/memories\n1.5K\t/memories/customer_service_guidelines.xml\n"
        "2.0K\t/memories/refund_policies.xml"
    )


def test_doc_file_view_example(mem: Mem) -> None:
    mem.put("customer_service_guidelines.xml", "<guidelines>\n<addressing_customers>\n</addressing_customers>\n")
    out = ok(mem(command="view", path="/memories/customer_service_guidelines.xml"))
    assert out.startswith(
        "Here's the content of /memories/customer_service_guidelines.xml with line numbers:\n"
        "     1\t<guidelines>\n     2\t<addressing_customers>\n"
    )


def _notes_100() -> str:
    lines = [f"filler {n}" for n in range(1, 101)]
    lines[0], lines[1], lines[9], lines[99] = "Hello World", "This is line two", "Line ten", "Line one hundred"
    return "\n".join(lines) + "\n"


def test_doc_notes_txt_example_lines_1_2_10_100(mem: Mem) -> None:
    mem.put("notes.txt", _notes_100())
    out = ok(mem(command="view", path="/memories/notes.txt"))
    shown = out.split("\n")
    assert shown[0] == "Here's the content of /memories/notes.txt with line numbers:"
    assert len(shown) == 101
    assert shown[1] == "     1\tHello World"
    assert shown[2] == "     2\tThis is line two"
    assert shown[10] == "    10\tLine ten"
    assert shown[100] == "   100\tLine one hundred"
    assert shown[50] == "    50\tfiller 50"


def test_doc_notes_txt_example_view_range(mem: Mem) -> None:
    mem.put("notes.txt", _notes_100())
    assert ok(mem(command="view", path="/memories/notes.txt", view_range=[100, 100])) == (
        "Here's the content of /memories/notes.txt with line numbers:\n   100\tLine one hundred"
    )
    assert ok(mem(command="view", path="/memories/notes.txt", view_range=[1, 2])) == (
        "Here's the content of /memories/notes.txt with line numbers:\n     1\tHello World\n     2\tThis is line two"
    )
    assert ok(mem(command="view", path="/memories/notes.txt", view_range=[99, -1])).endswith(
        "    99\tfiller 99\n   100\tLine one hundred"
    )


def test_doc_create_example(mem: Mem) -> None:
    text = "Meeting notes:\n- Discussed project timeline\n- Next steps defined\n"
    assert ok(mem(command="create", path="/memories/notes.txt", file_text=text)) == (
        "File created successfully at: /memories/notes.txt"
    )
    assert mem.bytes("notes.txt") == text.encode()


def test_doc_create_exists(mem: Mem) -> None:
    mem.put("notes.txt", "old")
    assert err(mem(command="create", path="/memories/notes.txt", file_text="new")) == (
        "Error: File /memories/notes.txt already exists"
    )
    assert mem.bytes("notes.txt") == b"old"


def test_doc_str_replace_example(mem: Mem) -> None:
    mem.put("preferences.txt", "Name: A\nFavorite color: blue\n")
    out = ok(
        mem(
            command="str_replace",
            path="/memories/preferences.txt",
            old_str="Favorite color: blue",
            new_str="Favorite color: green",
        )
    )
    assert out.startswith("The memory file has been edited.")
    assert mem.bytes("preferences.txt") == b"Name: A\nFavorite color: green\n"


def test_doc_str_replace_missing(mem: Mem) -> None:
    assert err(mem(command="str_replace", path="/memories/nope.txt", old_str="a", new_str="b")) == (
        "Error: The path /memories/nope.txt does not exist. Please provide a valid path."
    )


def test_doc_str_replace_not_found(mem: Mem) -> None:
    mem.put("p.txt", "abc\n")
    assert err(mem(command="str_replace", path="/memories/p.txt", old_str="zzz", new_str="b")) == (
        "No replacement was performed, old_str `zzz` did not appear verbatim in /memories/p.txt."
    )
    assert mem.bytes("p.txt") == b"abc\n"


def test_doc_str_replace_multiple(mem: Mem) -> None:
    mem.put("p.txt", "x\nb\nc\nx\n")
    assert err(mem(command="str_replace", path="/memories/p.txt", old_str="x", new_str="y")) == (
        "No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 4. Please ensure it is unique"
    )
    assert mem.bytes("p.txt") == b"x\nb\nc\nx\n"


def test_doc_insert_example(mem: Mem) -> None:
    mem.put("todo.txt", "- a\n- b\n- c\n")
    assert (
        ok(
            mem(
                command="insert",
                path="/memories/todo.txt",
                insert_line=2,
                insert_text="- Review memory tool documentation\n",
            )
        )
        == "The file /memories/todo.txt has been edited."
    )
    assert mem.bytes("todo.txt") == b"- a\n- b\n- Review memory tool documentation\n- c\n"


def test_doc_insert_missing(mem: Mem) -> None:
    assert err(mem(command="insert", path="/memories/todo.txt", insert_line=0, insert_text="x")) == (
        "Error: The path /memories/todo.txt does not exist"
    )


def test_doc_insert_bad_line(mem: Mem) -> None:
    mem.put("todo.txt", "a\nb\n")
    for line in (3, -1, 1000):
        assert err(mem(command="insert", path="/memories/todo.txt", insert_line=line, insert_text="x")) == (
            f"Error: Invalid `insert_line` parameter: {line}. "
            "It should be within the range of lines of the file: [0, 2]"
        )
    assert mem.bytes("todo.txt") == b"a\nb\n"


def test_doc_delete_example(mem: Mem) -> None:
    mem.put("old_file.txt", "x")
    assert ok(mem(command="delete", path="/memories/old_file.txt")) == "Successfully deleted /memories/old_file.txt"
    assert not (mem.dir / "old_file.txt").exists()


def test_doc_delete_missing(mem: Mem) -> None:
    assert (
        err(mem(command="delete", path="/memories/old_file.txt"))
        == "Error: The path /memories/old_file.txt does not exist"
    )


def test_doc_rename_example(mem: Mem) -> None:
    mem.put("draft.txt", "d")
    assert ok(mem(command="rename", old_path="/memories/draft.txt", new_path="/memories/final.txt")) == (
        "Successfully renamed /memories/draft.txt to /memories/final.txt"
    )
    assert mem.bytes("final.txt") == b"d" and not (mem.dir / "draft.txt").exists()


def test_doc_rename_missing(mem: Mem) -> None:
    assert err(mem(command="rename", old_path="/memories/draft.txt", new_path="/memories/final.txt")) == (
        "Error: The path /memories/draft.txt does not exist"
    )


def test_doc_rename_destination_exists(mem: Mem) -> None:
    mem.put("draft.txt", "d")
    mem.put("final.txt", "f")
    assert err(mem(command="rename", old_path="/memories/draft.txt", new_path="/memories/final.txt")) == (
        "Error: The destination /memories/final.txt already exists"
    )
    assert mem.bytes("draft.txt") == b"d" and mem.bytes("final.txt") == b"f"


def test_doc_view_missing(mem: Mem) -> None:
    assert err(mem(command="view", path="/memories/nope")) == (
        "The path /memories/nope does not exist. Please provide a valid path."
    )


# --- D-INPUT-* ------------------------------------------------------------------------------------

NOT_OBJECT = 'Error: The tool input must be a JSON object with a "command" field.'


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        ["view"],
        [{"command": "view", "path": "/memories"}],
        0,
        1,
        -1,
        1.5,
        True,
        False,
        "",
        "view",
        '{"command": "view"}',
        {1: "x"},
        {("command",): "view"},
        b"view",
        {"command", "view"},
    ],
    ids=lambda v: type(v).__name__ + "-" + repr(v)[:20],
)
def test_D_INPUT_OBJECT(mem: Mem, value: Any) -> None:
    assert err(mem.handler.execute(value)) == NOT_OBJECT


def test_D_INPUT_COMMAND_missing(mem: Mem) -> None:
    assert err(mem({"path": "/memories"})) == "Error: Parameter `command` is required."
    assert err(mem({})) == "Error: Parameter `command` is required."
    assert err(mem({"command": None})) == "Error: Parameter `command` is required."


@pytest.mark.parametrize("value", [1, 0, 1.5, True, [], ["view"], {"name": "view"}])
def test_D_INPUT_COMMAND_not_string(mem: Mem, value: Any) -> None:
    assert err(mem({"command": value, "path": "/memories"})) == "Error: Parameter `command` must be a string."


@pytest.mark.parametrize(
    "value, echoed",
    [
        ("list", "list"),
        ("VIEW", "VIEW"),
        ("view ", "view "),
        ("", ""),
        ("str-replace", "str-replace"),
        ("undo_edit", "undo_edit"),
        ("x\ny", "x\\ny"),
        ("a\\b", "a\\\\b"),
        ("t\tr\r", "t\\tr\\r"),
        ("\x00\x7f", "\\x00\\x7f"),
        ("\u202eevil", "\\u202eevil"),
        ("\u2028", "\\u2028"),
    ],
)
def test_D_INPUT_COMMAND_unknown_and_D_ECHO(mem: Mem, value: str, echoed: str) -> None:
    assert err(mem(command=value, path="/memories")) == (
        f"Error: Unrecognized command {echoed}. The allowed commands for the memory tool are: "
        "view, create, str_replace, insert, delete, rename"
    )


VALID = {
    "view": {"path": "/memories"},
    "create": {"path": "/memories/n.txt", "file_text": "t"},
    "str_replace": {"path": "/memories/n.txt", "old_str": "a", "new_str": "b"},
    "insert": {"path": "/memories/n.txt", "insert_line": 0, "insert_text": "x"},
    "delete": {"path": "/memories/n.txt"},
    "rename": {"old_path": "/memories/n.txt", "new_path": "/memories/m.txt"},
}
REQUIRED = [(c, p) for c, params in VALID.items() for p in params]
KINDS = {"insert_line": "an integer"}


@pytest.mark.parametrize("command, parameter", REQUIRED)
@pytest.mark.parametrize("how", ["absent", "null"])
def test_D_INPUT_MISSING(mem: Mem, command: str, parameter: str, how: str) -> None:
    tool_input: Dict[str, Any] = {"command": command, **VALID[command]}
    if how == "absent":
        del tool_input[parameter]
    else:
        tool_input[parameter] = None
    before = mem.tree()
    assert err(mem(tool_input)) == f"Parameter `{parameter}` is required for command: {command}"
    assert mem.tree() == before


WRONG_VALUES = [1, 0, -3, 2.0, 1.5, True, False, [], ["/memories"], {}, {"a": 1}, [[1]]]


def _wrong_for(parameter: str, value: Any) -> bool:
    if KINDS.get(parameter) == "an integer":
        return not (isinstance(value, int) and not isinstance(value, bool))
    return not isinstance(value, str)


WRONG = [(c, p, v) for c, p in REQUIRED for v in WRONG_VALUES + ["1"] if _wrong_for(p, v)]


@pytest.mark.parametrize("command, parameter, value", WRONG, ids=[f"{c}-{p}-{v!r}" for c, p, v in WRONG])
def test_D_INPUT_TYPE(mem: Mem, command: str, parameter: str, value: Any) -> None:
    kind = KINDS.get(parameter, "a string")
    tool_input = {"command": command, **VALID[command], parameter: value}
    assert err(mem(tool_input)) == f"Error: Parameter `{parameter}` must be {kind} for command: {command}"


@pytest.mark.parametrize(
    "value",
    [
        "1, 2",
        [1],
        [1, 2, 3],
        [],
        [1.0, 2],
        [1, 2.0],
        [True, 2],
        [1, False],
        ["1", "2"],
        {"start": 1, "end": 2},
        1,
        1.5,
        True,
        [[1], [2]],
        [None, 1],
        [1, None],
    ],
    ids=repr,
)
def test_D_INPUT_TYPE_view_range_shape(mem: Mem, value: Any) -> None:
    mem.put("f.txt", "a\nb\n")
    assert err(mem(command="view", path="/memories/f.txt", view_range=value)) == (
        "Invalid `view_range`. It should be a list of two integers."
    )


def test_D_INPUT_MISSING_view_range_null_is_absent(mem: Mem) -> None:
    mem.put("f.txt", "a\n")
    assert ok(mem(command="view", path="/memories/f.txt", view_range=None)) == (
        "Here's the content of /memories/f.txt with line numbers:\n     1\ta"
    )
    assert ok(mem(command="view", path="/memories", view_range=None)).startswith(LIST_HEADER.format("/memories"))


def test_D_INPUT_EXTRA_ignored(mem: Mem) -> None:
    assert ok(mem(command="create", path="/memories/a.txt", file_text="x", mode="w", overwrite=True, extra=[1])) == (
        "File created successfully at: /memories/a.txt"
    )
    assert ok(mem(command="view", path="/memories/a.txt", foo=None, view_range=None)).endswith("     1\tx")


def test_D_INPUT_ORDER_parameters_in_order(mem: Mem) -> None:
    assert err(mem(command="create", file_text=5)) == "Parameter `path` is required for command: create"
    assert err(mem(command="create", path=5)) == "Error: Parameter `path` must be a string for command: create"
    assert err(mem(command="create", path="/bad", file_text=5)) == (
        "Error: Parameter `file_text` must be a string for command: create"
    )
    assert err(mem(command="str_replace", path="/memories/a", new_str=1)) == (
        "Parameter `old_str` is required for command: str_replace"
    )
    assert err(mem(command="insert", path="/memories/a", insert_text=1, insert_line="x")) == (
        "Error: Parameter `insert_line` must be an integer for command: insert"
    )
    assert err(mem(command="rename", new_path=1)) == "Parameter `old_path` is required for command: rename"
    assert err(mem(command="rename", old_path="/x", new_path="/y")) == (
        "Error: Invalid path /x: it must be /memories or start with /memories/."
    )
    assert err(mem(command="rename", old_path="/memories/a", new_path="/y")) == (
        "Error: Invalid path /y: it must be /memories or start with /memories/."
    )


def test_D_INPUT_ORDER_path_syntax_before_empty_old_str(mem: Mem) -> None:
    assert err(mem(command="str_replace", path="/memories/../x", old_str="", new_str="")) == (
        'Error: Invalid path /memories/../x: "." and ".." segments are not allowed.'
    )


def test_D_INPUT_ORDER_read_only_before_path_syntax(tmp_path: Path) -> None:
    mem = Mem(tmp_path, read_only=True)
    assert err(mem(command="delete", path="/etc/passwd")) == (
        "Error: The memory directory is read-only; delete is not allowed."
    )
    assert err(mem(command="delete")) == "Parameter `path` is required for command: delete"


def test_D_INPUT_SIZE_over_the_write_limit(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_file_bytes=10))
    assert err(mem(command="create", path="/memories/a", file_text="x" * 11)) == (
        "Error: Parameter `file_text` is 11 bytes, over the limit of 10 bytes."
    )
    assert err(mem(command="create", path="/memories/a", file_text="\u00e9" * 6)) == (
        "Error: Parameter `file_text` is 12 bytes, over the limit of 10 bytes."
    )
    assert ok(mem(command="create", path="/memories/a", file_text="x" * 10))
    assert err(mem(command="str_replace", path="/memories/a", old_str="x" * 11, new_str="")) == (
        "Error: Parameter `old_str` is 11 bytes, over the limit of 10 bytes."
    )
    assert err(mem(command="str_replace", path="/memories/a", old_str="x", new_str="y" * 11)) == (
        "Error: Parameter `new_str` is 11 bytes, over the limit of 10 bytes."
    )
    assert err(mem(command="insert", path="/memories/a", insert_line=0, insert_text="y" * 11)) == (
        "Error: Parameter `insert_text` is 11 bytes, over the limit of 10 bytes."
    )
    assert mem.bytes("a") == b"x" * 10


@pytest.mark.parametrize(
    "command, parameter",
    [
        ("create", "file_text"),
        ("str_replace", "old_str"),
        ("str_replace", "new_str"),
        ("insert", "insert_text"),
        ("view", "path"),
        ("create", "path"),
        ("rename", "old_path"),
        ("rename", "new_path"),
    ],
)
def test_D_INPUT_SIZE_lone_surrogate(mem: Mem, command: str, parameter: str) -> None:
    tool_input = {"command": command, **VALID[command], parameter: "a\ud800b"}
    assert err(mem(tool_input)) == f"Error: Parameter `{parameter}` is not valid Unicode text."


# --- D-ECHO ---------------------------------------------------------------------------------------


def test_D_ECHO_invalid_path_is_escaped(mem: Mem) -> None:
    out = err(mem(command="view", path="/memories/x\n4.0K\t/memories/forged"))
    assert out == "Error: Invalid path /memories/x\\n4.0K\\t/memories/forged: control characters are not allowed."
    # the backslash rule comes first in rule order; the echo escapes both the backslash and the newline
    out = err(mem(command="view", path="/memories/a\n/b\\"))
    assert out == "Error: Invalid path /memories/a\\n/b\\\\: backslashes are not allowed."


def test_D_ECHO_valid_path_in_canonical_spelling(mem: Mem) -> None:
    mem.put("d/f.txt", "a\n")
    assert ok(mem(command="view", path="/memories/d/")).split("\n")[1] == "4.0K\t/memories/d"
    assert err(mem(command="view", path="/memories/nope/")) == (
        "The path /memories/nope does not exist. Please provide a valid path."
    )


def test_D_ECHO_old_str_verbatim_and_clipped(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_echo_chars=5))
    mem.put("a.txt", "hello\n")
    assert err(mem(command="str_replace", path="/memories/a.txt", old_str="a\tb\nc", new_str="")) == (
        "No replacement was performed, old_str `a\tb\nc` did not appear verbatim in /memories/a.txt."
    )
    assert err(mem(command="str_replace", path="/memories/a.txt", old_str="0123456789", new_str="")) == (
        "No replacement was performed, old_str `01234...[5 more characters]` "
        "did not appear verbatim in /memories/a.txt."
    )


def test_D_ECHO_long_invalid_path_is_clipped(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_echo_chars=12))
    assert err(mem(command="view", path="/etc/" + "p" * 20)) == (
        "Error: Invalid path /etc/ppppppp...[13 more characters]: it must be /memories or start with /memories/."
    )


def test_D_ECHO_listing_cannot_be_forged_by_a_name_on_disk(mem: Mem) -> None:
    """D-ECHO: "no echoed value can forge a line in a listing" -- also a name another program wrote."""
    mem.put("x\n9.9K\tforged", "x")
    lines = ok(mem(command="view", path="/memories")).split("\n")
    assert "9.9K\tforged" not in lines
    assert all(line.startswith(("4.0K\t/memories", "1B\t/memories")) for line in lines[1:])


def test_D_ECHO_listing_of_a_non_utf8_name_on_disk_is_utf8_text(mem: Mem) -> None:
    """Spec notes: "All text is UTF-8." A name of raw bytes on disk must not break the result."""
    (mem.dir).mkdir(exist_ok=True)
    with open(os.fsencode(mem.dir) + b"/\xff.txt", "wb") as handle:
        handle.write(b"x")
    result = mem.handler.execute({"command": "view", "path": "/memories"})
    assert not result.is_error
    result.output.encode("utf-8")


# --- D-PATH-* through the handler -----------------------------------------------------------------


@pytest.mark.parametrize("command", list(VALID))
def test_D_PATH_RULES_every_command_reports_the_rule(mem: Mem, command: str) -> None:
    key = "old_path" if command == "rename" else "path"
    tool_input = {"command": command, **VALID[command], key: "/memories/a/../../etc/passwd"}
    assert err(mem(tool_input)) == (
        'Error: Invalid path /memories/a/../../etc/passwd: "." and ".." segments are not allowed.'
    )
    assert not (mem.base / "etc").exists()


def test_D_PATH_CANON_create_with_trailing_slash(mem: Mem) -> None:
    assert err(mem(command="create", path="/memories/notes/", file_text="x")) == (
        'Error: Invalid path /memories/notes/: a file path must not end with "/".'
    )
    assert mem.tree() == {}


def test_D_PATH_CANON_trailing_slash_on_a_file_does_not_exist(mem: Mem) -> None:
    mem.put("f.txt", "a\n")
    assert err(mem(command="view", path="/memories/f.txt/")) == (
        "The path /memories/f.txt does not exist. Please provide a valid path."
    )
    assert err(mem(command="str_replace", path="/memories/f.txt/", old_str="a", new_str="b")) == (
        "Error: The path /memories/f.txt does not exist. Please provide a valid path."
    )
    assert err(mem(command="insert", path="/memories/f.txt/", insert_line=0, insert_text="b")) == (
        "Error: The path /memories/f.txt does not exist"
    )
    assert err(mem(command="delete", path="/memories/f.txt/")) == "Error: The path /memories/f.txt does not exist"
    assert err(mem(command="rename", old_path="/memories/f.txt/", new_path="/memories/g")) == (
        "Error: The path /memories/f.txt does not exist"
    )
    assert mem.bytes("f.txt") == b"a\n"


def test_D_PATH_HIDDEN_reachable_but_not_listed(mem: Mem) -> None:
    assert ok(mem(command="create", path="/memories/.secret-notes", file_text="h\n"))
    assert ok(mem(command="view", path="/memories/.secret-notes")).endswith("     1\th")
    assert ok(mem(command="view", path="/memories")) == LIST_HEADER.format("/memories") + "\n4.0K\t/memories"


def test_D_PATH_UNICODE_names_stored_as_given(mem: Mem) -> None:
    for name in ("caf\u00e9.md", "cafe\u0301.md", "\u65e5\u672c\u8a9e/\u30e1\u30e2.md", "\U0001f9e0.md"):
        assert ok(mem(command="create", path=f"/memories/{name}", file_text=name)) == (
            f"File created successfully at: /memories/{name}"
        )
        assert mem.bytes(name) == name.encode()
    assert sorted(os.listdir(mem.dir)) == sorted(
        [".refmem", "caf\u00e9.md", "cafe\u0301.md", "\u65e5\u672c\u8a9e", "\U0001f9e0.md"]
    ) or sorted(os.listdir(mem.dir)) == sorted(["caf\u00e9.md", "cafe\u0301.md", "\u65e5\u672c\u8a9e", "\U0001f9e0.md"])


# --- D-FS-* (simple cases; tests/test_attacks.py has the full table) ------------------------------


def test_D_FS_SYMLINK_messages(mem: Mem) -> None:
    mem.put("real.txt", "r\n")
    os.symlink("real.txt", mem.dir / "link")
    path = "/memories/link"
    expected = "Error: The path /memories/link is a symbolic link; links are not followed."
    assert err(mem(command="view", path=path)) == expected
    assert err(mem(command="str_replace", path=path, old_str="r", new_str="s")) == expected
    assert err(mem(command="insert", path=path, insert_line=0, insert_text="s")) == expected
    assert err(mem(command="create", path=path, file_text="s")) == "Error: File /memories/link already exists"
    assert ok(mem(command="rename", old_path=path, new_path="/memories/moved")) == (
        "Successfully renamed /memories/link to /memories/moved"
    )
    assert os.readlink(mem.dir / "moved") == "real.txt"
    assert ok(mem(command="delete", path="/memories/moved")) == "Successfully deleted /memories/moved"
    assert mem.bytes("real.txt") == b"r\n"


def test_D_FS_SPECIAL_messages(mem: Mem) -> None:
    mem.dir.mkdir(exist_ok=True)
    os.mkfifo(mem.dir / "pipe")
    path = "/memories/pipe"
    expected = "Error: The path /memories/pipe is not a regular file."
    assert err(mem(command="view", path=path)) == expected
    assert err(mem(command="str_replace", path=path, old_str="r", new_str="s")) == expected
    assert err(mem(command="insert", path=path, insert_line=0, insert_text="s")) == expected
    assert err(mem(command="create", path=path, file_text="s")) == "Error: File /memories/pipe already exists"
    assert ok(mem(command="rename", old_path=path, new_path="/memories/p2"))
    assert stat.S_ISFIFO(os.lstat(mem.dir / "p2").st_mode)
    assert ok(mem(command="delete", path="/memories/p2")) == "Successfully deleted /memories/p2"


def test_D_FS_HARDLINK_messages(mem: Mem) -> None:
    outside = mem.base / "outside.txt"
    outside.write_text("secret\n")
    mem.dir.mkdir(exist_ok=True)
    os.link(outside, mem.dir / "h.txt")
    path = "/memories/h.txt"
    expected = (
        "Error: The path /memories/h.txt has more than one hard link and is refused: its content may be shared "
        "with a file outside /memories."
    )
    assert err(mem(command="view", path=path)) == expected
    assert err(mem(command="str_replace", path=path, old_str="secret", new_str="x")) == expected
    assert err(mem(command="insert", path=path, insert_line=0, insert_text="x")) == expected
    assert ok(mem(command="delete", path=path))
    assert outside.read_text() == "secret\n"


def test_D_FS_RESERVED_delete_leaves_nothing_behind(mem: Mem) -> None:
    assert ok(mem(command="create", path="/memories/d/a.txt", file_text="a"))
    assert ok(mem(command="str_replace", path="/memories/d/a.txt", old_str="a", new_str="b"))
    assert ok(mem(command="insert", path="/memories/d/a.txt", insert_line=1, insert_text="c"))
    assert [n for n in os.listdir(mem.dir / "d")] == ["a.txt"]  # no temp files left
    assert ok(mem(command="delete", path="/memories/d"))
    assert [n for n in os.listdir(mem.dir) if not n == ".refmem"] == []
    assert ".refmem" not in ok(mem(command="view", path="/memories"))


# --- view: listings -------------------------------------------------------------------------------


def test_D_VIEW_LIST_order_depth_and_omissions(mem: Mem) -> None:
    mem.put("b.txt", "b" * 5)
    mem.put("Z.txt", "")
    mem.put("\u00e9.txt", "e")
    mem.put("a/x.txt", "x" * 1536)
    mem.put("a/deep/z.txt", "too deep")
    mem.put("a/deep/deeper/q.txt", "too deep")
    mem.put("a/.hidden/h.txt", "hidden")
    mem.put(".hidden.txt", "h")
    mem.put("node_modules/m.js", "m")
    mem.put("a/node_modules/m.js", "m")
    (mem.dir / "empty").mkdir()
    os.symlink("b.txt", mem.dir / "link")
    os.symlink(mem.base, mem.dir / "outlink")
    os.mkfifo(mem.dir / "fifo")
    assert ok(mem(command="view", path="/memories")) == "\n".join(
        [
            LIST_HEADER.format("/memories"),
            "4.0K\t/memories",
            "0B\t/memories/Z.txt",
            "4.0K\t/memories/a/",
            "4.0K\t/memories/a/deep/",
            "1.5K\t/memories/a/x.txt",
            "5B\t/memories/b.txt",
            "4.0K\t/memories/empty/",
            "1B\t/memories/\u00e9.txt",
        ]
    )


def test_D_VIEW_LIST_subfolder(mem: Mem) -> None:
    mem.put("a/x.txt", "x")
    mem.put("a/deep/z.txt", "z")
    mem.put("a/deep/deeper/q.txt", "q")
    assert ok(mem(command="view", path="/memories/a/")) == "\n".join(
        [
            LIST_HEADER.format("/memories/a"),
            "4.0K\t/memories/a",
            "4.0K\t/memories/a/deep/",
            "4.0K\t/memories/a/deep/deeper/",
            "1B\t/memories/a/deep/z.txt",
            "1B\t/memories/a/x.txt",
        ]
    )


def test_D_VIEW_DIR_SIZE_always_4_0K(mem: Mem) -> None:
    for n in range(50):
        mem.put(f"big/{'n' * 100}{n}", "")
    lines = ok(mem(command="view", path="/memories")).split("\n")
    assert lines[1] == "4.0K\t/memories"
    assert lines[2] == "4.0K\t/memories/big/"


def test_D_VIEW_LIST_CAP(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_listing_entries=3))
    for name in "abcde":
        mem.put(f"{name}.txt", "")
    lines = ok(mem(command="view", path="/memories")).split("\n")
    assert len(lines) == 2 + 3 + 1
    assert lines[-1] == "[Listing truncated at 3 entries. View a subfolder to see more.]"
    assert all(line.startswith("0B\t/memories/") for line in lines[2:5])


def test_D_VIEW_LIST_CAP_not_truncated_when_exactly_full(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_listing_entries=3))
    for name in "abc":
        mem.put(f"{name}.txt", "")
    assert not ok(mem(command="view", path="/memories")).endswith("more.]")


def test_D_VIEW_RANGE_on_directory(mem: Mem) -> None:
    mem.put("d/f", "x")
    for path in ("/memories", "/memories/", "/memories/d", "/memories/d/"):
        assert err(mem(command="view", path=path, view_range=[1, 2])) == (
            "Error: The `view_range` parameter is not allowed when `path` points to a directory."
        )


# --- view: files ----------------------------------------------------------------------------------


def test_D_VIEW_FILE_empty_file_shows_header_alone(mem: Mem) -> None:
    mem.put("e.txt", "")
    assert ok(mem(command="view", path="/memories/e.txt")) == "Here's the content of /memories/e.txt with line numbers:"


@pytest.mark.parametrize(
    "content, shown",
    [
        ("a\nb\n", ["a", "b"]),
        ("a\nb", ["a", "b"]),
        ("\n", [""]),
        ("a\n\n", ["a", ""]),
        ("\ttab\n", ["\ttab"]),
    ],
)
def test_D_VIEW_LINES(mem: Mem, content: str, shown: List[str]) -> None:
    mem.put("f.txt", content)
    out = ok(mem(command="view", path="/memories/f.txt"))
    assert out.split("\n")[1:] == [f"{n:>6}\t{t}" for n, t in enumerate(shown, start=1)]


def test_D_VIEW_CRLF(mem: Mem) -> None:
    mem.put("crlf.txt", b"a\r\nb\r\n")
    assert ok(mem(command="view", path="/memories/crlf.txt")).endswith("     1\ta\n     2\tb")
    mem.put("mixed.txt", b"a\r\nb\n")
    assert ok(mem(command="view", path="/memories/mixed.txt")).endswith("     1\ta\r\n     2\tb")
    mem.put("cr.txt", b"a\rb\n")
    assert ok(mem(command="view", path="/memories/cr.txt")).endswith("     1\ta\rb")


def test_D_VIEW_RANGE_errors_in_order(mem: Mem) -> None:
    mem.put("f.txt", "".join(f"{n}\n" for n in range(1, 11)))
    path = "/memories/f.txt"
    assert err(mem(command="view", path=path, view_range=[0, 5])) == (
        "Invalid `view_range`: [0, 5]. Its first element `0` should be within the range of lines of the file: [1, 10]"
    )
    assert err(mem(command="view", path=path, view_range=[11, 12])) == (
        "Invalid `view_range`: [11, 12]. "
        "Its first element `11` should be within the range of lines of the file: [1, 10]"
    )
    assert err(mem(command="view", path=path, view_range=[-1, 5])) == (
        "Invalid `view_range`: [-1, 5]. Its first element `-1` should be within the range of lines of the file: [1, 10]"
    )
    assert err(mem(command="view", path=path, view_range=[2, 11])) == (
        "Invalid `view_range`: [2, 11]. "
        "Its second element `11` should be smaller than the number of lines in the file: `10`"
    )
    assert err(mem(command="view", path=path, view_range=[5, 4])) == (
        "Invalid `view_range`: [5, 4]. Its second element `4` should be larger or equal than its first `5`"
    )
    assert err(mem(command="view", path=path, view_range=[5, -2])) == (
        "Invalid `view_range`: [5, -2]. Its second element `-2` should be larger or equal than its first `5`"
    )
    # first check wins
    assert err(mem(command="view", path=path, view_range=[0, 99])).startswith(
        "Invalid `view_range`: [0, 99]. Its first element"
    )


def test_D_VIEW_RANGE_valid_edges(mem: Mem) -> None:
    mem.put("f.txt", "".join(f"L{n}\n" for n in range(1, 11)))
    path = "/memories/f.txt"
    head = "Here's the content of /memories/f.txt with line numbers:\n"
    assert ok(mem(command="view", path=path, view_range=[1, 1])) == head + "     1\tL1"
    assert ok(mem(command="view", path=path, view_range=[10, 10])) == head + "    10\tL10"
    assert ok(mem(command="view", path=path, view_range=[10, -1])) == head + "    10\tL10"
    assert ok(mem(command="view", path=path, view_range=[9, 10])) == head + "     9\tL9\n    10\tL10"
    assert ok(mem(command="view", path=path, view_range=[1, -1])) == ok(mem(command="view", path=path))


def test_D_VIEW_RANGE_empty_file_has_no_valid_range(mem: Mem) -> None:
    mem.put("e.txt", "")
    assert err(mem(command="view", path="/memories/e.txt", view_range=[1, -1])) == (
        "Invalid `view_range`: [1, -1]. Its first element `1` should be within the range of lines of the file: [1, 0]"
    )


def test_D_VIEW_LIMIT_999999_lines(mem: Mem) -> None:
    path = mem.put("big.txt", b"\n" * 1_000_000)
    expected = "File /memories/big.txt exceeds maximum line limit of 999,999 lines."
    assert err(mem(command="view", path="/memories/big.txt")) == expected
    assert err(mem(command="view", path="/memories/big.txt", view_range=[1, 1])) == expected
    with open(path, "r+b") as handle:
        handle.truncate(999_999)
    out = ok(mem(command="view", path="/memories/big.txt", view_range=[999_999, -1]))
    assert out.endswith("\n999999\t")


PAGE = 30  # "     1\tline 1" is 13 characters: two lines and the \n between them fit in 30, three do not


def test_D_VIEW_PAGINATE_truncated(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_view_chars=PAGE))
    mem.put("n.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    head = "Here's the content of /memories/n.txt with line numbers:\n"
    assert ok(mem(command="view", path="/memories/n.txt")) == head + (
        "     1\tline 1\n     2\tline 2\n"
        "[Output truncated after line 2 of 10. To see more, view with view_range [3, -1].]"
    )
    assert ok(mem(command="view", path="/memories/n.txt", view_range=[3, 9])) == head + (
        "     3\tline 3\n     4\tline 4\n"
        "[Output truncated after line 4 of 10. To see more, view with view_range [5, 9].]"
    )
    assert ok(mem(command="view", path="/memories/n.txt", view_range=[9, 10])) == head + (
        "     9\tline 9\n    10\tline 10"
    )


def test_D_VIEW_PAGINATE_budget_counts_lines_and_newlines_only(tmp_path: Path) -> None:
    exact = len("     1\tline 1\n     2\tline 2")
    mem = Mem(tmp_path, limits=Limits(max_view_chars=exact))
    mem.put("n.txt", "line 1\nline 2\n")
    assert ok(mem(command="view", path="/memories/n.txt")).endswith("     2\tline 2")
    mem2 = Mem(tmp_path / "other", limits=Limits(max_view_chars=exact - 1))
    mem2.put("n.txt", "line 1\nline 2\n")
    assert ok(mem2(command="view", path="/memories/n.txt")).endswith(
        "[Output truncated after line 1 of 2. To see more, view with view_range [2, -1].]"
    )


def test_D_VIEW_PAGINATE_line_cut(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_view_chars=20))
    mem.put("long.txt", "a" * 50 + "\nb\n")
    head = "Here's the content of /memories/long.txt with line numbers:\n"
    assert ok(mem(command="view", path="/memories/long.txt")) == head + (
        "     1\t"
        + "a" * 13
        + "\n[Line 1 is 50 characters long and was cut at 13. Lines after it: view_range [2, -1].]"
    )
    assert ok(mem(command="view", path="/memories/long.txt", view_range=[1, 2])) == head + (
        "     1\t" + "a" * 13 + "\n[Line 1 is 50 characters long and was cut at 13. Lines after it: view_range [2, 2].]"
    )


def test_D_VIEW_PAGINATE_last_line_cut(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_view_chars=20))
    mem.put("long.txt", "b\n" + "a" * 50)
    head = "Here's the content of /memories/long.txt with line numbers:\n"
    assert ok(mem(command="view", path="/memories/long.txt", view_range=[2, -1])) == head + (
        "     2\t" + "a" * 13 + "\n[Line 2 is 50 characters long and was cut at 13.]"
    )


@pytest.mark.parametrize("big", [False, True], ids=["small-file", "streamed-file"])
def test_D_VIEW_PAGINATE_crlf_line_cut_reports_the_shown_length(tmp_path: Path, big: bool) -> None:
    """D-VIEW-CRLF shows a CRLF line without its \\r, so the cut note counts the line as shown."""
    mem = Mem(tmp_path, limits=Limits(max_view_chars=20))
    filler = b"x\r\n" * (200_000 if big else 0)
    mem.put("long.txt", b"a" * 50 + b"\r\n" + filler + b"b\r\n")
    out = ok(mem(command="view", path="/memories/long.txt", view_range=[1, -1]))
    assert out.endswith("[Line 1 is 50 characters long and was cut at 13. Lines after it: view_range [2, -1].]")


def test_D_VIEW_ENCODING_not_utf8_untouched(mem: Mem) -> None:
    data = b"caf\xe9\nline\n"
    mem.put("latin1.txt", data)
    expected = "Error: The file /memories/latin1.txt is not valid UTF-8 text and cannot be shown or edited."
    assert err(mem(command="view", path="/memories/latin1.txt")) == expected
    assert err(mem(command="str_replace", path="/memories/latin1.txt", old_str="line", new_str="x")) == expected
    assert err(mem(command="insert", path="/memories/latin1.txt", insert_line=0, insert_text="x")) == expected
    assert mem.bytes("latin1.txt") == data
    assert ok(mem(command="rename", old_path="/memories/latin1.txt", new_path="/memories/l.txt"))
    assert mem.bytes("l.txt") == data


def test_D_VIEW_ENCODING_bom_is_text(mem: Mem) -> None:
    mem.put("bom.txt", b"\xef\xbb\xbfhi\n")
    assert ok(mem(command="view", path="/memories/bom.txt")).endswith("     1\t\ufeffhi")
    assert ok(mem(command="str_replace", path="/memories/bom.txt", old_str="hi", new_str="yo"))
    assert mem.bytes("bom.txt") == b"\xef\xbb\xbfyo\n"


# --- create ---------------------------------------------------------------------------------------


def test_D_CREATE_PARENTS_made_with_mode_0700(mem: Mem) -> None:
    assert ok(mem(command="create", path="/memories/a/b/c.txt", file_text="c")) == (
        "File created successfully at: /memories/a/b/c.txt"
    )
    assert stat.S_IMODE(os.stat(mem.dir / "a").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(mem.dir / "a" / "b").st_mode) == 0o700
    assert mem.bytes("a/b/c.txt") == b"c"


def test_D_CREATE_PARENTS_file_as_parent(mem: Mem) -> None:
    mem.put("f", "x")
    assert err(mem(command="create", path="/memories/f/c.txt", file_text="c")) == (
        "Error: Cannot create /memories/f/c.txt: /memories/f is not a directory."
    )
    assert err(mem(command="create", path="/memories/f/g/c.txt", file_text="c")) == (
        "Error: Cannot create /memories/f/g/c.txt: /memories/f is not a directory."
    )
    assert mem.tree() == {"f": b"x"}


def test_D_CREATE_EXISTS_file_folder_link_special_root(mem: Mem) -> None:
    mem.put("f", "x")
    (mem.dir / "d").mkdir()
    os.symlink("nowhere", mem.dir / "l")
    os.mkfifo(mem.dir / "p")
    for name in ("f", "d", "l", "p"):
        assert err(mem(command="create", path=f"/memories/{name}", file_text="new")) == (
            f"Error: File /memories/{name} already exists"
        )
    for root in ("/memories", "/memories/"):
        assert err(mem(command="create", path=root, file_text="new")) == "Error: File /memories already exists"
    assert mem.bytes("f") == b"x" and os.readlink(mem.dir / "l") == "nowhere"


def test_D_CREATE_MODE_0600(mem: Mem) -> None:
    assert ok(mem(command="create", path="/memories/m.txt", file_text="m"))
    assert stat.S_IMODE(os.stat(mem.dir / "m.txt").st_mode) == 0o600


def test_D_CREATE_EMPTY(mem: Mem) -> None:
    assert (
        ok(mem(command="create", path="/memories/e.txt", file_text=""))
        == "File created successfully at: /memories/e.txt"
    )
    assert mem.bytes("e.txt") == b""


def test_create_keeps_bytes_exactly(mem: Mem) -> None:
    text = "a\r\nb\n\u00e9\U0001f600\x00end"
    assert ok(mem(command="create", path="/memories/x.bin", file_text=text))
    assert mem.bytes("x.bin") == text.encode()


# --- str_replace ----------------------------------------------------------------------------------


def test_D_STR_EMPTY(mem: Mem) -> None:
    mem.put("a.txt", "abc")
    assert err(mem(command="str_replace", path="/memories/a.txt", old_str="", new_str="x")) == (
        "Error: Parameter `old_str` must not be empty."
    )
    assert err(mem(command="str_replace", path="/memories/missing.txt", old_str="", new_str="x")) == (
        "Error: Parameter `old_str` must not be empty."
    )
    assert mem.bytes("a.txt") == b"abc"


def test_D_STR_COUNT_overlapping(mem: Mem) -> None:
    mem.put("a.txt", "aaa\n")
    assert err(mem(command="str_replace", path="/memories/a.txt", old_str="aa", new_str="b")) == (
        "No replacement was performed. Multiple occurrences of old_str `aa` in lines: 1. Please ensure it is unique"
    )
    mem.put("b.txt", "xx\ny\nxy\nx\n")
    assert err(mem(command="str_replace", path="/memories/b.txt", old_str="x", new_str="z")) == (
        "No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 3, 4. "
        "Please ensure it is unique"
    )


def test_D_STR_SNIPPET(mem: Mem) -> None:
    """new_str "X\\nY\\n" occupies lines 10 and 11: context runs from line 6 to line 15."""
    mem.put("s.txt", "".join(f"l{n}\n" for n in range(1, 21)))
    out = ok(mem(command="str_replace", path="/memories/s.txt", old_str="l10\n", new_str="X\nY\n"))
    assert out == "\n".join(
        ["The memory file has been edited. Here is a snippet of /memories/s.txt around the edit, with line numbers:"]
        + [f"{n:>6}\tl{n}" for n in range(6, 10)]
        + ["    10\tX", "    11\tY"]
        + [f"{n:>6}\tl{n - 1}" for n in range(12, 16)]
    )


def test_D_STR_SNIPPET_clipped_to_the_file(mem: Mem) -> None:
    mem.put("s.txt", "a\nb\n")
    assert ok(mem(command="str_replace", path="/memories/s.txt", old_str="a", new_str="A")) == (
        "The memory file has been edited. Here is a snippet of /memories/s.txt around the edit, with line numbers:\n"
        "     1\tA\n     2\tb"
    )


def test_D_STR_SNIPPET_file_left_empty(mem: Mem) -> None:
    mem.put("s.txt", "only")
    assert ok(mem(command="str_replace", path="/memories/s.txt", old_str="only", new_str="")) == (
        "The memory file has been edited. Here is a snippet of /memories/s.txt around the edit, with line numbers:"
    )
    assert mem.bytes("s.txt") == b""


def test_D_STR_SNIPPET_capped_like_a_view(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_view_chars=30))
    mem.put("s.txt", "".join(f"line {n}\n" for n in range(1, 10)))
    out = ok(mem(command="str_replace", path="/memories/s.txt", old_str="line 5", new_str="five"))
    body = out.split("\n", 1)[1]
    assert len(body) <= 30
    assert "[" not in body  # no note


def test_D_STR_DIR(mem: Mem) -> None:
    mem.put("d/f", "x")
    for path in ("/memories/d", "/memories/d/"):
        assert err(mem(command="str_replace", path=path, old_str="x", new_str="y")) == (
            "Error: The path /memories/d does not exist. Please provide a valid path."
        )
    assert err(mem(command="str_replace", path="/memories", old_str="x", new_str="y")) == (
        "Error: The path /memories does not exist. Please provide a valid path."
    )


def test_D_STR_CRLF_preserved(mem: Mem) -> None:
    mem.put("c.txt", b"one\r\ntwo\r\nthree\r\n")
    assert ok(mem(command="str_replace", path="/memories/c.txt", old_str="one\ntwo", new_str="1\n2\n2b"))
    assert mem.bytes("c.txt") == b"1\r\n2\r\n2b\r\nthree\r\n"
    assert ok(mem(command="str_replace", path="/memories/c.txt", old_str="2b\r\nthree", new_str="3"))
    assert mem.bytes("c.txt") == b"1\r\n2\r\n3\r\n"


def test_D_STR_CRLF_only_in_crlf_files_old_str_found_verbatim(mem: Mem) -> None:
    """D-STR-CRLF applies to CRLF files; in any other file old_str is matched verbatim (documented:
    "did not appear verbatim"), so a `\\r\\n` that is in the file is found."""
    mem.put("mixed.txt", b"x\r\ny\nz\n")
    assert ok(mem(command="str_replace", path="/memories/mixed.txt", old_str="x\r\ny", new_str="Q"))
    assert mem.bytes("mixed.txt") == b"Q\nz\n"


def test_D_STR_CRLF_only_in_crlf_files_new_str_written_verbatim(mem: Mem) -> None:
    mem.put("lf.txt", b"a\nb\n")
    assert ok(mem(command="str_replace", path="/memories/lf.txt", old_str="b", new_str="c\r\nd"))
    assert mem.bytes("lf.txt") == b"a\nc\r\nd\n"


@pytest.mark.parametrize("new", ["$1", "\\1", "\\g<0>", "$&", "\\n", "${x}", "\\", "%s", "{0}", "$$"])
def test_D_STR_SPECIAL_literal(mem: Mem, new: str) -> None:
    mem.put("s.txt", "(a)b\n")
    assert ok(mem(command="str_replace", path="/memories/s.txt", old_str="(a)", new_str=new))
    assert mem.bytes("s.txt") == (new + "b\n").encode()


def test_D_STR_NEW_empty_deletes(mem: Mem) -> None:
    mem.put("s.txt", "keep drop keep")
    assert ok(mem(command="str_replace", path="/memories/s.txt", old_str=" drop", new_str=""))
    assert mem.bytes("s.txt") == b"keep keep"


def test_str_replace_old_str_regex_chars_are_literal(mem: Mem) -> None:
    mem.put("s.txt", "a.c abc\n")
    assert ok(mem(command="str_replace", path="/memories/s.txt", old_str="a.c", new_str="X"))
    assert mem.bytes("s.txt") == b"X abc\n"


def test_str_replace_keeps_mode(mem: Mem) -> None:
    path = mem.put("m.txt", "a")
    os.chmod(path, 0o640)
    assert ok(mem(command="str_replace", path="/memories/m.txt", old_str="a", new_str="b"))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


# --- insert ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, line, insert, result",
    [
        (b"a\nb\n", 0, "x", b"x\na\nb\n"),
        (b"a\nb\n", 2, "x\n", b"a\nb\nx\n"),
        (b"a\nb", 2, "x", b"a\nb\nx"),
        (b"a\nb\n", 1, "", b"a\n\nb\n"),
        (b"a\nb\n", 1, "\n", b"a\n\nb\n"),
        (b"", 0, "x\n", b"x\n"),
        (b"", 0, "x", b"x"),
    ],
)
def test_D_INSERT_SEMANTICS(mem: Mem, content: bytes, line: int, insert: str, result: bytes) -> None:
    mem.put("i.txt", content)
    assert ok(mem(command="insert", path="/memories/i.txt", insert_line=line, insert_text=insert)) == (
        "The file /memories/i.txt has been edited."
    )
    assert mem.bytes("i.txt") == result


def test_D_INSERT_RANGE(mem: Mem) -> None:
    mem.put("i.txt", "a\nb")
    assert err(mem(command="insert", path="/memories/i.txt", insert_line=3, insert_text="x")) == (
        "Error: Invalid `insert_line` parameter: 3. It should be within the range of lines of the file: [0, 2]"
    )
    mem.put("e.txt", "")
    assert err(mem(command="insert", path="/memories/e.txt", insert_line=1, insert_text="x")) == (
        "Error: Invalid `insert_line` parameter: 1. It should be within the range of lines of the file: [0, 0]"
    )


def test_D_INSERT_CRLF(mem: Mem) -> None:
    mem.put("c.txt", b"a\r\nb\r\n")
    assert ok(mem(command="insert", path="/memories/c.txt", insert_line=1, insert_text="x\ny\n"))
    assert mem.bytes("c.txt") == b"a\r\nx\r\ny\r\nb\r\n"
    assert ok(mem(command="insert", path="/memories/c.txt", insert_line=4, insert_text="z\r\n"))
    assert mem.bytes("c.txt") == b"a\r\nx\r\ny\r\nb\r\nz\r\n"


def test_D_INSERT_DIR(mem: Mem) -> None:
    mem.put("d/f", "x")
    assert err(mem(command="insert", path="/memories/d", insert_line=0, insert_text="x")) == (
        "Error: The path /memories/d does not exist"
    )
    assert err(mem(command="insert", path="/memories", insert_line=0, insert_text="x")) == (
        "Error: The path /memories does not exist"
    )


# --- delete ---------------------------------------------------------------------------------------


def test_D_DELETE_RECURSIVE(mem: Mem) -> None:
    mem.put("d/a.txt", "a")
    mem.put("d/.hidden", "h")
    mem.put("d/sub/node_modules/x.js", "x")
    mem.put("d/sub/deeper/deepest/z", "z")
    os.symlink(mem.base, mem.dir / "d" / "sub" / "out")
    os.mkfifo(mem.dir / "d" / "fifo")
    mem.put("keep.txt", "k")
    assert ok(mem(command="delete", path="/memories/d")) == "Successfully deleted /memories/d"
    assert mem.tree() == {"keep.txt": b"k"}


def test_D_DELETE_RECURSIVE_trailing_slash(mem: Mem) -> None:
    mem.put("d/a.txt", "a")
    assert ok(mem(command="delete", path="/memories/d/")) == "Successfully deleted /memories/d"
    assert mem.tree() == {}


def test_D_DELETE_ROOT(mem: Mem) -> None:
    mem.put("a.txt", "a")
    for path in ("/memories", "/memories/"):
        assert err(mem(command="delete", path=path)) == "Error: Cannot delete the memory root /memories."
    assert mem.tree() == {"a.txt": b"a"}


def test_delete_empty_file_and_folder(mem: Mem) -> None:
    mem.put("e.txt", "")
    (mem.dir / "ed").mkdir()
    assert ok(mem(command="delete", path="/memories/e.txt"))
    assert ok(mem(command="delete", path="/memories/ed"))
    assert mem.tree() == {}


# --- rename ---------------------------------------------------------------------------------------


def test_D_RENAME_PARENTS_into_a_new_folder(mem: Mem) -> None:
    mem.put("a.txt", "a")
    assert ok(mem(command="rename", old_path="/memories/a.txt", new_path="/memories/new/deeper/a.txt")) == (
        "Successfully renamed /memories/a.txt to /memories/new/deeper/a.txt"
    )
    assert mem.tree() == {"new": None, "new/deeper": None, "new/deeper/a.txt": b"a"}
    assert stat.S_IMODE(os.stat(mem.dir / "new").st_mode) == 0o700


def test_D_RENAME_PARENTS_file_as_parent(mem: Mem) -> None:
    mem.put("a.txt", "a")
    mem.put("f", "f")
    assert err(mem(command="rename", old_path="/memories/a.txt", new_path="/memories/f/a.txt")) == (
        "Error: Cannot move /memories/a.txt to /memories/f/a.txt: /memories/f is not a directory."
    )
    assert mem.tree() == {"a.txt": b"a", "f": b"f"}


def test_D_RENAME_PARENTS_trailing_slash_on_new_path_for_a_file(mem: Mem) -> None:
    mem.put("a.txt", "a")
    assert err(mem(command="rename", old_path="/memories/a.txt", new_path="/memories/b/")) == (
        'Error: Invalid path /memories/b/: a file path must not end with "/".'
    )
    assert mem.tree() == {"a.txt": b"a"}


def test_rename_folder_with_trailing_slashes(mem: Mem) -> None:
    mem.put("d/a.txt", "a")
    assert ok(mem(command="rename", old_path="/memories/d/", new_path="/memories/e/")) == (
        "Successfully renamed /memories/d to /memories/e"
    )
    assert mem.tree() == {"e": None, "e/a.txt": b"a"}


@pytest.mark.parametrize("destination", ["file", "folder", "link", "empty-folder"])
def test_D_RENAME_NOREPLACE(mem: Mem, destination: str) -> None:
    mem.put("a.txt", "a")
    mem.put("d/x", "x")
    if destination == "file":
        mem.put("t", "t")
    elif destination == "folder":
        mem.put("t/y", "y")
    elif destination == "empty-folder":
        (mem.dir / "t").mkdir()
    else:
        os.symlink("a.txt", mem.dir / "t")
    before = mem.tree()
    for source in ("/memories/a.txt", "/memories/d"):
        assert err(mem(command="rename", old_path=source, new_path="/memories/t")) == (
            "Error: The destination /memories/t already exists"
        )
    assert mem.tree() == before


def test_D_RENAME_ROOT(mem: Mem) -> None:
    mem.put("a.txt", "a")
    for old, new in [
        ("/memories", "/memories/x"),
        ("/memories/", "/memories/x"),
        ("/memories/a.txt", "/memories"),
        ("/memories/a.txt", "/memories/"),
    ]:
        assert (
            err(mem(command="rename", old_path=old, new_path=new)) == "Error: Cannot rename the memory root /memories."
        )
    assert mem.tree() == {"a.txt": b"a"}


def test_D_RENAME_INTO_SELF(mem: Mem) -> None:
    mem.put("d/a.txt", "a")
    for new in ("/memories/d/sub", "/memories/d/sub/deeper", "/memories/d/a.txt/x"):
        assert err(mem(command="rename", old_path="/memories/d", new_path=new)) == (
            f"Error: Cannot move /memories/d into itself ({new})."
        )
    assert mem.tree() == {"d": None, "d/a.txt": b"a"}


def test_rename_sibling_with_common_prefix_is_not_into_self(mem: Mem) -> None:
    mem.put("d/a.txt", "a")
    assert ok(mem(command="rename", old_path="/memories/d", new_path="/memories/dd"))
    assert mem.tree() == {"dd": None, "dd/a.txt": b"a"}


def test_D_RENAME_SAME(mem: Mem) -> None:
    mem.put("a.txt", "a")
    mem.put("d/x", "x")
    assert err(mem(command="rename", old_path="/memories/a.txt", new_path="/memories/a.txt")) == (
        "Error: The destination /memories/a.txt already exists"
    )
    assert err(mem(command="rename", old_path="/memories/d", new_path="/memories/d/")) == (
        "Error: The destination /memories/d already exists"
    )
    assert mem.tree() == {"a.txt": b"a", "d": None, "d/x": b"x"}


def test_rename_empty_file(mem: Mem) -> None:
    mem.put("e", "")
    assert ok(mem(command="rename", old_path="/memories/e", new_path="/memories/f"))
    assert mem.tree() == {"f": b""}


# --- results --------------------------------------------------------------------------------------


def test_D_IS_ERROR_every_result_type(tmp_path: Path) -> None:
    """One command per result the handler can give; Mem checks is_error against the success forms."""
    mem = Mem(tmp_path, limits=Limits(max_file_bytes=64))
    results = []

    def run(**params: Any) -> None:
        results.append(mem(**params))

    mem.put("f.txt", "a\nb\na\n")
    mem.put("d/x", "x")
    mem.put("bad.txt", b"\xff")
    os.symlink("f.txt", mem.dir / "l")
    os.mkfifo(mem.dir / "p")
    mem.put("big.txt", "z" * 100)
    run(command="view", path="/memories")
    run(command="view", path="/memories/f.txt")
    run(command="view", path="/memories/nope")
    run(command="view", path="/memories/f.txt", view_range=[9, 9])
    run(command="view", path="/memories/f.txt", view_range=[1, 9])
    run(command="view", path="/memories/f.txt", view_range=[2, 1])
    run(command="view", path="/memories/f.txt", view_range="x")
    run(command="view", path="/memories/d", view_range=[1, 1])
    run(command="view", path="/memories/l")
    run(command="view", path="/memories/p")
    run(command="view", path="/memories/bad.txt")
    run(command="create", path="/memories/n.txt", file_text="n")
    run(command="create", path="/memories/n.txt", file_text="n")
    run(command="create", path="/memories/f.txt/x", file_text="n")
    run(command="str_replace", path="/memories/f.txt", old_str="b", new_str="B")
    run(command="str_replace", path="/memories/f.txt", old_str="zz", new_str="B")
    run(command="str_replace", path="/memories/f.txt", old_str="a", new_str="B")
    run(command="str_replace", path="/memories/f.txt", old_str="", new_str="B")
    run(command="str_replace", path="/memories/nope", old_str="a", new_str="B")
    mem.put("w.txt", "0123456789")
    run(command="str_replace", path="/memories/w.txt", old_str="0", new_str="x" * 60)
    run(command="str_replace", path="/memories/big.txt", old_str="z", new_str="y")
    run(command="insert", path="/memories/f.txt", insert_line=1, insert_text="i")
    run(command="insert", path="/memories/f.txt", insert_line=99, insert_text="i")
    run(command="insert", path="/memories/nope", insert_line=0, insert_text="i")
    run(command="delete", path="/memories/n.txt")
    run(command="delete", path="/memories/n.txt")
    run(command="delete", path="/memories")
    run(command="rename", old_path="/memories/f.txt", new_path="/memories/g.txt")
    run(command="rename", old_path="/memories/f.txt", new_path="/memories/g.txt")
    run(command="rename", old_path="/memories/d", new_path="/memories/g.txt")
    run(command="rename", old_path="/memories/d", new_path="/memories/d/e")
    run(command="rename", old_path="/memories", new_path="/memories/e")
    run(command="rename", old_path="/memories/g.txt", new_path="/memories/p/q")
    run(command="frobnicate")
    run(command=7)
    run(path="/memories")
    run(command="view")
    run(command="view", path=7)
    run(command="view", path="/x")
    run(command="view", path="/memories/\ud800")
    run(command="create", path="/memories/huge", file_text="h" * 65)
    results.append(mem.handler.execute(None))
    assert sum(not r.is_error for r in results) == 7
    assert all(r.output for r in results)


def test_D_LIMIT_WRITE_would_be_too_big(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_file_bytes=10))
    mem.put("a.txt", "12345678")
    assert err(mem(command="str_replace", path="/memories/a.txt", old_str="8", new_str="8901")) == (
        "Error: The file /memories/a.txt would be 11 bytes, over the limit of 10 bytes."
    )
    assert err(mem(command="insert", path="/memories/a.txt", insert_line=1, insert_text="xy")) == (
        "Error: The file /memories/a.txt would be 11 bytes, over the limit of 10 bytes."
    )
    assert mem.bytes("a.txt") == b"12345678"
    assert ok(mem(command="str_replace", path="/memories/a.txt", old_str="8", new_str="89"))


def test_D_LIMIT_WRITE_would_be_too_big_counts_crlf_bytes(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_file_bytes=10))
    mem.put("c.txt", b"a\r\nb\r\n")  # 6 bytes
    assert err(mem(command="insert", path="/memories/c.txt", insert_line=2, insert_text="x\ny")) == (
        "Error: The file /memories/c.txt would be 12 bytes, over the limit of 10 bytes."
    )
    assert mem.bytes("c.txt") == b"a\r\nb\r\n"


def test_D_LIMIT_WRITE_editing_a_file_over_the_limit(tmp_path: Path) -> None:
    mem = Mem(tmp_path, limits=Limits(max_file_bytes=10))
    mem.put("big.txt", "z" * 25)
    expected = "Error: The file /memories/big.txt is 25 bytes, over the limit of 10 bytes for editing."
    assert err(mem(command="str_replace", path="/memories/big.txt", old_str="z", new_str="y")) == expected
    assert err(mem(command="insert", path="/memories/big.txt", insert_line=0, insert_text="y")) == expected
    assert ok(mem(command="view", path="/memories/big.txt")).endswith("\t" + "z" * 25)
    assert mem.bytes("big.txt") == b"z" * 25


@pytest.mark.parametrize(
    "params",
    [
        {"command": "create", "path": "/memories/x", "file_text": "x"},
        {"command": "str_replace", "path": "/memories/f.txt", "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": "/memories/f.txt", "insert_line": 0, "insert_text": "b"},
        {"command": "delete", "path": "/memories/f.txt"},
        {"command": "rename", "old_path": "/memories/f.txt", "new_path": "/memories/g.txt"},
    ],
    ids=lambda p: p["command"],
)
def test_D_READ_ONLY(tmp_path: Path, params: Dict[str, Any]) -> None:
    mem = Mem(tmp_path, read_only=True)
    mem.put("f.txt", "a\n")
    before = mem.tree()
    assert err(mem(params)) == f"Error: The memory directory is read-only; {params['command']} is not allowed."
    assert mem.tree() == before
    assert ok(mem(command="view", path="/memories/f.txt")).endswith("     1\ta")
    assert ok(mem(command="view", path="/memories"))


def test_D_ALLOW(tmp_path: Path) -> None:
    mem = Mem(tmp_path, allow=["*.md"])
    refused = "Error: The path /memories/a.txt is not one of the allowed memory paths."
    assert ok(mem(command="create", path="/memories/a.md", file_text="a\n"))
    assert ok(mem(command="create", path="/memories/d/b.md", file_text="b\n"))
    assert err(mem(command="create", path="/memories/a.txt", file_text="x")) == refused
    mem.put("a.txt", "host wrote this\n")
    assert err(mem(command="view", path="/memories/a.txt")) == refused
    assert err(mem(command="str_replace", path="/memories/a.txt", old_str="host", new_str="x")) == refused
    assert err(mem(command="insert", path="/memories/a.txt", insert_line=0, insert_text="x")) == refused
    assert err(mem(command="delete", path="/memories/a.txt")) == refused
    assert err(mem(command="rename", old_path="/memories/a.txt", new_path="/memories/a2.md")) == refused
    assert err(mem(command="rename", old_path="/memories/a.md", new_path="/memories/a2.txt")) == (
        "Error: The path /memories/a2.txt is not one of the allowed memory paths."
    )
    assert err(mem(command="delete", path="/memories/d")) == (
        "Error: The path /memories/d is not one of the allowed memory paths."
    )
    assert err(mem(command="rename", old_path="/memories/d", new_path="/memories/e")) == (
        "Error: The path /memories/d is not one of the allowed memory paths."
    )
    assert ok(mem(command="view", path="/memories")) == "\n".join(
        [
            LIST_HEADER.format("/memories"),
            "4.0K\t/memories",
            "2B\t/memories/a.md",
            "4.0K\t/memories/d/",
            "2B\t/memories/d/b.md",
        ]
    )
    assert ok(mem(command="str_replace", path="/memories/a.md", old_str="a", new_str="A"))
    assert ok(mem(command="rename", old_path="/memories/a.md", new_path="/memories/d/c.md"))
    assert ok(mem(command="delete", path="/memories/d/c.md"))
    assert mem.bytes("a.txt") == b"host wrote this\n"


def _no_keys(text: str):
    return text, (["a private key block"] if "PRIVATE KEY" in text else [])


def test_D_POLICY_content_policy_hook(tmp_path: Path) -> None:
    mem = Mem(tmp_path, content_policy=_no_keys)
    key = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
    refused = "Error: The text was not saved: it appears to contain a private key block. Remove it and try again."
    assert err(mem(command="create", path="/memories/k.txt", file_text=key)) == refused
    assert mem.tree() == {}
    assert ok(mem(command="create", path="/memories/k.txt", file_text="fine\n"))
    assert err(mem(command="str_replace", path="/memories/k.txt", old_str="fine", new_str=key)) == refused
    assert err(mem(command="insert", path="/memories/k.txt", insert_line=0, insert_text=key)) == refused
    assert mem.bytes("k.txt") == b"fine\n"


def test_D_POLICY_cleaning_policy_and_list_of_kinds(tmp_path: Path) -> None:
    def clean(text: str):
        refused = [k for k in ("card", "jwt", "card") if k.upper() in text]
        return text.replace("secret", "[removed]"), refused

    mem = Mem(tmp_path, content_policy=clean)
    assert ok(mem(command="create", path="/memories/c.txt", file_text="a secret b\n"))
    assert mem.bytes("c.txt") == b"a [removed] b\n"
    assert err(mem(command="create", path="/memories/d.txt", file_text="CARD JWT")) == (
        "Error: The text was not saved: it appears to contain card and jwt. Remove it and try again."
    )


def test_D_INTERNAL_never_raises(tmp_path: Path) -> None:
    def broken(text: str):
        raise RuntimeError("policy bug " + str(tmp_path))

    handler = MemoryHandler(tmp_path / "memories", content_policy=broken)
    result = handler.execute({"command": "create", "path": "/memories/a", "file_text": "x"})
    assert result.output == INTERNAL
    assert result.is_error
    assert not (tmp_path / "memories" / "a").exists()


def test_D_IO_message_shape_on_a_read_only_folder(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores permissions; tests/test_faults_fakefs.py covers D-IO")
    mem = Mem(tmp_path)
    mem.put("d/a.txt", "a")
    os.chmod(mem.dir / "d", 0o500)
    try:
        assert err(mem(command="create", path="/memories/d/b.txt", file_text="b")) == (
            "Error: Could not create /memories/d/b.txt: permission denied."
        )
    finally:
        os.chmod(mem.dir / "d", 0o700)
