"""memory_get: paths, windows, budgets, notices, not-found, encodings, and the hostile filesystem."""

from __future__ import annotations

import json
import os
import pathlib
import threading
from typing import Any, Dict, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refmem._text import ViewWindow
from refmem.openclaw import OpenClawLimits, OpenClawMemory, render
from refmem.openclaw.paths import is_indexed, is_readable
from refmem.openclaw.window import excerpt_from_text, read_excerpt

from .openclaw_support import CANARY, write


def workspace(case: pathlib.Path, **kwargs: Any) -> OpenClawMemory:
    return OpenClawMemory(case / "memories", **kwargs)


def ok(text: str, path: str, start: int, lines: int) -> Dict[str, Any]:
    """A whole window's reply: no truncation keys."""
    return {"status": "ok", "text": text, "path": path, "from": start, "lines": lines}


def no_leak(result: Dict[str, Any], case: pathlib.Path) -> None:
    text = json.dumps(result)
    assert CANARY not in text
    assert str(case) not in text
    assert "Traceback" not in text


# --- the defaults and the window ------------------------------------------------------------------


def test_whole_small_file(case: pathlib.Path) -> None:
    write(case, "MEMORY.md", "# Prefs\n- green\n")
    assert workspace(case).memory_get("MEMORY.md") == ok("# Prefs\n- green", "MEMORY.md", 1, 2)


def test_default_window_is_120_lines_with_notice(case: pathlib.Path) -> None:
    write(case, "memory/long.md", "".join(f"line {n}\n" for n in range(1, 301)))
    result = workspace(case).memory_get("memory/long.md")
    assert result["lines"] == 120
    assert result["truncated"] is True and result["nextFrom"] == 121
    assert result["text"].endswith("line 120\n\n[More content available. Use from=121 to continue.]")
    following = workspace(case).memory_get("memory/long.md", 121)
    assert following["text"].startswith("line 121\n") and following["nextFrom"] == 241


def test_last_window_has_no_truncation_keys(case: pathlib.Path) -> None:
    write(case, "memory/long.md", "".join(f"line {n}\n" for n in range(1, 11)))
    result = workspace(case).memory_get("memory/long.md", 8, 5)
    assert result == ok("line 8\nline 9\nline 10", "memory/long.md", 8, 3)


def test_from_past_the_end_is_an_empty_ok(case: pathlib.Path) -> None:
    write(case, "MEMORY.md", "a\nb\n")
    assert workspace(case).memory_get("MEMORY.md", 9) == ok("", "MEMORY.md", 9, 0)


def test_empty_file(case: pathlib.Path) -> None:
    write(case, "USER.md", "")
    assert workspace(case).memory_get("USER.md") == ok("", "USER.md", 1, 0)


def test_character_budget_keeps_whole_lines(case: pathlib.Path) -> None:
    line = "x" * 99
    write(case, "memory/wide.md", (line + "\n") * 200)
    result = workspace(case).memory_get("memory/wide.md", lines=200)
    # 120 lines of 99 characters joined by newlines: 100 per line, the first without a newline.
    assert result["lines"] == 120
    assert result["nextFrom"] == 121 and result["truncated"] is True
    assert len(result["text"].split("\n\n[")[0]) == 120 * 100 - 1


def test_budget_from_limits(case: pathlib.Path) -> None:
    write(case, "memory/a.md", "aaaa\nbbbb\ncccc\n")
    memory = workspace(case, limits=OpenClawLimits(get_max_chars=9))
    result = memory.memory_get("memory/a.md")
    assert result["text"] == "aaaa\nbbbb\n\n[More content available. Use from=3 to continue.]"
    assert result["lines"] == 2


def test_line_longer_than_the_budget_is_cut_and_can_be_passed(case: pathlib.Path) -> None:
    write(case, "memory/a.md", "y" * 50 + "\nshort\n")
    memory = workspace(case, limits=OpenClawLimits(get_max_chars=20))
    result = memory.memory_get("memory/a.md")
    assert result["text"] == "y" * 20 + "\n\n[Line 1 is 50 characters long and was cut at 20. Use from=2 to continue.]"
    assert result["nextFrom"] == 2 and result["lines"] == 1
    assert memory.memory_get("memory/a.md", 2)["text"] == "short"


def test_last_line_longer_than_the_budget(case: pathlib.Path) -> None:
    write(case, "memory/a.md", "z" * 30)
    result = workspace(case, limits=OpenClawLimits(get_max_chars=10)).memory_get("memory/a.md")
    assert result["text"] == "z" * 10 + "\n\n[Line 1 is 30 characters long and was cut at 10.]"
    assert "nextFrom" not in result and result["truncated"] is True


def test_truncated_empty_first_line_still_gets_the_notice(case: pathlib.Path) -> None:
    # OpenClaw gives no notice here (its text is empty); D-OPENCLAW-GET-NOTICE gives one.
    write(case, "memory/a.md", "\nabc\n")
    result = workspace(case).memory_get("memory/a.md", 1, 1)
    assert result["text"] == "\n\n[More content available. Use from=2 to continue.]"
    assert result["nextFrom"] == 2


def test_crlf_file_keeps_its_carriage_returns(case: pathlib.Path) -> None:
    # As OpenClaw shows it: lines are split at \n alone (D-OPENCLAW-GET-TEXT).
    write(case, "memory/a.md", "one\r\ntwo\r\n")
    assert workspace(case).memory_get("memory/a.md")["text"] == "one\r\ntwo\r"


def test_dreams_is_read_in_any_case_but_its_suffix(case: pathlib.Path) -> None:
    write(case, "DREAMS.md", "night\n")
    write(case, "dreams.MD", "night\n")
    memory = workspace(case)
    assert memory.memory_get("DREAMS.md")["status"] == "ok"
    assert memory.memory_get("dreams.MD")["code"] == "MEMORY_PATH_NOT_ALLOWED"


def test_numbers_past_what_json_holds_exactly_are_refused(case: pathlib.Path) -> None:
    write(case, "MEMORY.md", "a\n")
    memory = workspace(case)
    assert memory.get({"path": "MEMORY.md", "from": 2**53 - 1})["status"] == "ok"
    assert memory.get({"path": "MEMORY.md", "from": 2**53})["error"] == "from must be a positive integer"
    assert memory.get({"path": "MEMORY.md", "lines": 2**60})["error"] == "lines must be a positive integer"


def test_mixed_line_endings_keep_the_carriage_return(case: pathlib.Path) -> None:
    write(case, "memory/a.md", "one\r\ntwo\n")
    assert workspace(case).memory_get("memory/a.md")["text"] == "one\r\ntwo"


def test_not_utf8_anywhere_is_an_error(case: pathlib.Path) -> None:
    write(case, "memory/a.md", b"fine\n" * 5000 + b"\xff\xfe\n")
    result = workspace(case).memory_get("memory/a.md", 1, 1)
    assert result["status"] == "error" and result["code"] == "MEMORY_NOT_UTF8"
    assert result["text"] == "" and result["path"] == "memory/a.md"


# --- inputs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_input", "message"),
    [
        ([], "the tool input must be a JSON object"),
        ({}, "path required"),
        ({"path": "   "}, "path required"),
        ({"path": 3}, "path required"),
        ({"path": "MEMORY.md", "from": 0}, "from must be a positive integer"),
        ({"path": "MEMORY.md", "from": -2}, "from must be a positive integer"),
        ({"path": "MEMORY.md", "from": 1.5}, "from must be a positive integer"),
        ({"path": "MEMORY.md", "from": 2.0}, "from must be a positive integer"),
        ({"path": "MEMORY.md", "from": "2"}, "from must be a positive integer"),
        ({"path": "MEMORY.md", "from": True}, "from must be a positive integer"),
        ({"path": "MEMORY.md", "lines": 0}, "lines must be a positive integer"),
        ({"path": "MEMORY.md", "corpus": "wiki"}, "corpus must be one of: memory, all"),
    ],
)
def test_bad_input(case: pathlib.Path, tool_input: Any, message: str) -> None:
    result = workspace(case).get(tool_input)
    assert result["status"] == "error" and result["code"] == "INVALID_INPUT" and result["error"] == message
    assert render(result)[1] is True


def test_null_means_absent_and_extra_fields_are_ignored(case: pathlib.Path) -> None:
    write(case, "MEMORY.md", "a\n")
    result = workspace(case).get({"path": "MEMORY.md", "from": None, "lines": None, "corpus": "all", "x": 1})
    assert result["status"] == "ok" and result["text"] == "a"


# --- paths ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "found"),
    [
        ("MEMORY.md", "MEMORY.md"),
        ("/memories/MEMORY.md", "MEMORY.md"),
        ("  MEMORY.md\n", "MEMORY.md"),
        ("USER.md", "USER.md"),
        ("dreams.md", "dreams.md"),
        ("DREAMS.md", "DREAMS.md"),
        ("memory/2026-01-05.md", "memory/2026-01-05.md"),
        ("memory/projects/deep/notes.md", "memory/projects/deep/notes.md"),
        ("/memories/memory/x.md", "memory/x.md"),
    ],
)
def test_memory_files_are_read(case: pathlib.Path, asked: str, found: str) -> None:
    write(case, found, "content\n")
    result = workspace(case).memory_get(asked)
    assert result["status"] == "ok" and result["path"] == found and result["text"] == "content"


@pytest.mark.parametrize(
    "asked",
    [
        "memory.md",
        "user.md",
        "Memory.md",
        "notes.md",
        "memory/x.txt",
        "memory/x.MD",
        "memory",
        "memory/",
        "/memories",
        "/etc/passwd",
        "/memories/notes.md",
        "other/x.md",
    ],
)
def test_other_files_are_not_memory_files(case: pathlib.Path, asked: str) -> None:
    write(case, "notes.md", f"{CANARY}\n")
    write(case, "memory.md", f"{CANARY}\n")
    write(case, "memory/x.txt", f"{CANARY}\n")
    result = workspace(case).memory_get(asked)
    assert result["status"] == "error" and result["code"] == "MEMORY_PATH_NOT_ALLOWED"
    assert result["error"] == "path is not an allowed Markdown memory file"
    no_leak(result, case)


@pytest.mark.parametrize(
    "asked",
    [
        "../outside/secret.md",
        "memory/../MEMORY.md",
        "./MEMORY.md",
        "memory//x.md",
        "memory\\x.md",
        "memory/a\x00.md",
        "memory/a\u202e.md",
    ],
)
def test_path_rules_hold(case: pathlib.Path, asked: str) -> None:
    write(case, "MEMORY.md", f"{CANARY} inside\n")
    result = workspace(case).memory_get(asked)
    assert result["status"] == "error" and result["code"] == "MEMORY_PATH_INVALID"
    assert result["error"].startswith("invalid path: ")
    no_leak(result, case)
    assert "\x00" not in result["path"] and "\u202e" not in result["path"]


@pytest.mark.parametrize(
    "name",
    [
        "memory/standup 10:30.md",
        "memory/what?.md",
        "memory/a|b.md",
        "memory/con.md",
        "memory/CON.md",
        "memory/trailing. /x.md",
        "memory/.refmem-notes.md",
        "memory/%2e%2e/x.md",
        "memory/\u2025/x.md",
        "memory/a:b.md",
        "memory/" + "/".join(f"d{n}" for n in range(17)) + "/deep.md",
    ],
)
def test_existing_notes_with_names_legal_on_the_host_are_read_and_found(case: pathlib.Path, name: str) -> None:
    """The memory tool's rules for names a model creates are not OpenClaw's rules for notes that exist."""
    write(case, name, "quokka sighting\n")
    memory = workspace(case)
    assert memory.memory_get(name) == ok("quokka sighting", name, 1, 1)
    assert [hit["path"] for hit in memory.memory_search("quokka")["results"]] == [name]


def test_host_path_of_the_workspace_is_refused(case: pathlib.Path) -> None:
    write(case, "MEMORY.md", "x\n")
    result = workspace(case).memory_get(str(case / "memories" / "MEMORY.md"))
    assert result["code"] == "MEMORY_PATH_NOT_ALLOWED"


def test_missing_file_and_missing_folder_are_not_found(case: pathlib.Path) -> None:
    memory = workspace(case)
    assert memory.memory_get("memory/nope.md") == {"status": "not_found", "text": "", "path": "memory/nope.md"}
    assert memory.memory_get("memory/a/b/c.md")["status"] == "not_found"
    assert memory.memory_get("USER.md")["status"] == "not_found"


def test_a_folder_where_the_file_should_be_is_not_a_regular_file(case: pathlib.Path) -> None:
    (case / "memories" / "memory" / "dir.md").mkdir()
    result = workspace(case).memory_get("memory/dir.md")
    assert result["status"] == "error" and result["code"] == "MEMORY_NOT_REGULAR"


def test_readable_and_indexed_sets() -> None:
    assert is_readable(("MEMORY.md",)) and is_indexed(("MEMORY.md",))
    assert is_readable(("dreams.md",)) and not is_indexed(("dreams.md",))
    assert is_readable(("memory", ".openclaw-repair", "x.md")) and not is_indexed(
        ("memory", ".openclaw-repair", "x.md")
    )
    assert not is_readable(("memory.md",)) and not is_readable(("notes", "x.md"))


# --- the hostile filesystem -----------------------------------------------------------------------


def test_symlink_is_refused(case: pathlib.Path) -> None:
    os.symlink(case / "outside" / "secret.md", case / "memories" / "memory" / "link.md")
    os.symlink("../outside/secret.md", case / "memories" / "MEMORY.md")
    memory = workspace(case)
    for path in ("memory/link.md", "MEMORY.md"):
        result = memory.memory_get(path)
        assert result["status"] == "error" and result["code"] == "MEMORY_SYMLINK"
        no_leak(result, case)


def test_symlinked_folders_are_not_entered(case: pathlib.Path) -> None:
    os.symlink(case / "outside", case / "memories" / "memory" / "dirlink")
    (case / "memories" / "memory").rename(case / "memories" / "real")
    os.symlink("real", case / "memories" / "memory")
    result = workspace(case).memory_get("memory/dirlink/secret.md")
    assert result["status"] == "not_found"
    no_leak(result, case)


def test_hard_link_is_refused(case: pathlib.Path) -> None:
    os.link(case / "outside" / "secret.md", case / "memories" / "memory" / "hard.md")
    result = workspace(case).memory_get("memory/hard.md")
    assert result["status"] == "error" and result["code"] == "MEMORY_HARDLINKED"
    no_leak(result, case)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_never_opened(case: pathlib.Path) -> None:
    os.mkfifo(case / "memories" / "memory" / "fifo.md")
    results: List[Dict[str, Any]] = []
    worker = threading.Thread(target=lambda: results.append(workspace(case).memory_get("memory/fifo.md")), daemon=True)
    worker.start()
    worker.join(10)
    assert results, "memory_get blocked on a FIFO"
    assert results[0]["code"] == "MEMORY_NOT_REGULAR"


def test_unreadable_file_is_a_read_error(case: pathlib.Path) -> None:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("modes do not restrict root")
    write(case, "memory/a.md", "x\n")
    os.chmod(case / "memories" / "memory" / "a.md", 0)
    result = workspace(case).memory_get("memory/a.md")
    assert result["code"] == "MEMORY_READ_FAILED" and result["error"] == "the file could not be read: permission denied"


def test_removed_workspace_is_a_read_error_without_host_path(case: pathlib.Path) -> None:
    memory = workspace(case)
    for name in os.listdir(case / "memories"):
        target = case / "memories" / name
        if target.is_dir():
            import shutil

            shutil.rmtree(target)
    os.rmdir(case / "memories")
    result = memory.memory_get("MEMORY.md")
    assert result["status"] in ("error", "not_found")
    no_leak(result, case)


# --- the streaming window equals the plain definition ---------------------------------------------

texts = st.text(alphabet=st.sampled_from(list("ab \r\n\u00e9\U0001f600")), max_size=300)


@settings(max_examples=400, deadline=None)
@given(
    content=texts,
    start=st.integers(1, 12),
    count=st.integers(1, 12),
    budget=st.integers(1, 40),
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
def test_streamed_excerpt_equals_plain_definition(
    content: str, start: int, count: int, budget: int, cuts: List[int]
) -> None:
    data = content.encode("utf-8")
    points = sorted({min(cut, len(data)) for cut in cuts})
    pieces = [data[a:b] for a, b in zip([0] + points, points + [len(data)])]
    assert read_excerpt(pieces, start, count, budget) == excerpt_from_text(content, start, count, budget)


@settings(max_examples=200, deadline=None)
@given(content=texts, start=st.integers(1, 8), count=st.integers(1, 8), budget=st.integers(1, 30))
def test_excerpt_respects_its_budget(content: str, start: int, count: int, budget: int) -> None:
    excerpt = excerpt_from_text(content, start, count, budget)
    assert len(excerpt.text) <= budget
    if excerpt.next_from is not None:
        assert excerpt.truncated and excerpt.next_from > start


def test_streaming_keeps_only_the_window() -> None:
    window = ViewWindow(1000, 1004, 100, numbered=False)
    block = ("x" * 1000 + "\n").encode() * 1000
    for _ in range(20):
        window.feed(block)
    assert sum(len(text) for _, text, _ in window._kept) <= 5 * 102
    result = read_excerpt([block] * 20, 1000, 5, 100)
    assert result.lines == 1 and result.cut == (1000, 1000, 100) and result.next_from == 1001


def test_an_excerpt_streams_through_the_view_window_keeping_its_lines_in_bulk(
    case: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memory_get reads a file through the memory tool's own window (one streaming window in refmem), and the
    lines of its excerpt are kept in bulk: the line-by-line path runs only for a line cut by a chunk's end
    (before: a window of its own, whose line-by-line path ran once per line shown, 150 times here)."""
    calls = {"finish": 0, "end_line": 0}
    finish, end_line = ViewWindow.finish, ViewWindow._end_line

    def counted_finish(window: ViewWindow) -> Any:
        calls["finish"] += 1
        return finish(window)

    def counted_end_line(window: ViewWindow) -> None:
        calls["end_line"] += 1
        end_line(window)

    monkeypatch.setattr(ViewWindow, "finish", counted_finish)
    monkeypatch.setattr(ViewWindow, "_end_line", counted_end_line)
    write(case, "MEMORY.md", ("z" * 79 + "\n") * 30_000)  # 2.4 MB, read in chunks
    result = workspace(case).memory_get("MEMORY.md", 1, 1_000)
    # 150 lines of 79 characters joined by newlines: 11,999 of the 12,000 characters
    assert result["lines"] == 150 and result["nextFrom"] == 151 and result["text"].startswith("z" * 79 + "\n")
    assert calls["finish"] == 1
    assert calls["end_line"] <= 1, calls  # the page is in the first chunk: kept at once
