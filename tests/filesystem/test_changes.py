"""The filesystem store's change journal (refmem/changes.py): its file, its bounds, its epochs, its order.

The interface's side (every mutation recorded, another store and another process see it) is in
test_storage_contract.py, for every store; these tests are about this journal's own promises.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Iterator, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refmem import MemoryHandler, problems
from refmem import _changes as changes
from refmem import _kernel as kernel
from refmem.messages import IO_REASONS
from refmem.paths import parse_path
from refmem.tracked import TrackedDirectory


@pytest.fixture
def root(tmp_path: Path) -> Iterator[TrackedDirectory]:
    opened = TrackedDirectory(tmp_path / "m")
    yield opened
    opened.close()


def journal_file(root: TrackedDirectory) -> Path:
    return Path(root.real) / ".refmem" / "changes"


def create(root: TrackedDirectory, relative: str, data: bytes = b"x") -> None:
    with root.locked():
        root.write_new(parse_path("/memories/" + relative), data)


def test_lines_round_trip_and_foreign_lines_are_refused() -> None:
    paths = ("/memories/a.md", "/memories/日本/x y.md", "/memories/\u2028")
    line = changes.encode(paths)
    assert line.isascii() and line.endswith(b"\n") and line.count(b"\n") == 1
    assert changes.decode(line) == paths
    for foreign in (b"", b"[]", b"{}", b'["/etc/passwd"]', b"[1]", b'["/memories/a"', b"\xff", b"[" * 100_000):
        assert changes.decode(foreign) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=20).map(lambda name: "/memories/" + name), min_size=1, max_size=4))
def test_lines_are_what_the_json_module_writes(paths: List[str]) -> None:
    """The fast path for plain paths writes byte for byte what json.dumps would."""
    assert changes.encode(paths) == (json.dumps(paths, ensure_ascii=True, separators=(",", ":")) + "\n").encode()
    assert changes.decode(changes.encode(paths)) == tuple(paths)


def test_the_file_is_a_header_then_one_line_per_change(root: TrackedDirectory) -> None:
    root.changes_since(0)
    create(root, "a.md")
    create(root, "b/c.md")
    lines = journal_file(root).read_bytes().split(b"\n")
    assert lines[0].startswith(b"refmem-changes 1 ") and lines[3:] == [b""]
    assert [changes.decode(line) for line in lines[1:3]] == [("/memories/a.md",), ("/memories/b/c.md",)]
    assert stat.S_IMODE(journal_file(root).stat().st_mode) == 0o600


def test_a_generation_is_the_base_plus_an_offset_so_a_reader_resumes_where_it_stopped(root: TrackedDirectory) -> None:
    start = root.changes_since(0)
    create(root, "one.md")
    first = root.changes_since(start.generation)
    create(root, "two.md")
    second = root.changes_since(first.generation)
    assert second.paths == ("/memories/two.md",)
    assert second.generation - first.generation == len(changes.encode(["/memories/two.md"]))
    assert root.changes_since(first.generation + 1).paths is None  # not the end of a line
    assert root.changes_since(second.generation + 5).paths is None  # from the future
    assert root.changes_since(-1).paths is None


def test_the_line_is_written_before_the_change(root: TrackedDirectory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process killed between the two leaves a line for a change that did not happen, never the reverse."""
    mark = root.changes_since(0)
    seen: List[bytes] = []

    def record_then_fail(*args: object, **kwargs: object) -> None:
        seen.append(journal_file(root).read_bytes())
        raise problems.OsFailure("io")

    monkeypatch.setattr(kernel, "rename_noreplace", record_then_fail)
    with pytest.raises(problems.OsFailure):
        create(root, "never.md")
    assert seen and seen[0].endswith(changes.encode(["/memories/never.md"]))
    assert root.changes_since(mark.generation).paths == ("/memories/never.md",)
    assert not (Path(root.real) / "never.md").exists()


def test_past_its_bound_the_journal_starts_over_and_older_readers_rescan(
    root: TrackedDirectory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "MAX_BYTES", 400)
    mark = root.changes_since(0)
    generations = [mark.generation]
    for number in range(40):
        create(root, f"f{number:02d}.md")
        generations.append(root.changes_since(generations[-1]).generation)
    assert generations == sorted(set(generations))  # every change gave a greater generation
    assert journal_file(root).stat().st_size <= 400
    assert root.changes_since(mark.generation).paths is None  # trimmed: rescan
    assert root.changes_since(generations[-2]).paths == ("/memories/f39.md",)


def test_too_many_paths_since_a_generation_means_rescan(root: TrackedDirectory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "MAX_PATHS", 5)
    mark = root.changes_since(0)
    for number in range(5):
        create(root, f"{number}.md")
    assert len(root.changes_since(mark.generation).paths or ()) == 5
    create(root, "5.md")
    assert root.changes_since(mark.generation).paths is None


def test_a_restart_of_the_machine_starts_a_new_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal is not fsynced: after a reboot its tail may be lost, so generations from before mean rescan."""
    before = TrackedDirectory(tmp_path / "m")
    create(before, "a.md")
    kept = before.changes_since(0).generation
    before.close()
    monkeypatch.setattr(changes, "_boot", "another-boot")
    after = TrackedDirectory(tmp_path / "m")
    try:
        assert after.changes_since(kept).paths is None
        fresh = after.changes_since(0).generation
        assert fresh > kept
        create(after, "b.md")
        assert after.changes_since(fresh).paths == ("/memories/b.md",)
    finally:
        after.close()


def test_a_torn_or_foreign_line_means_rescan_never_a_wrong_answer(root: TrackedDirectory) -> None:
    mark = root.changes_since(0)
    create(root, "a.md")
    with open(journal_file(root), "ab") as journal:
        journal.write(b'["/memories/half')  # a line cut short (a power loss): not complete, not read
    assert root.changes_since(mark.generation).paths == ("/memories/a.md",)
    with open(journal_file(root), "ab") as journal:
        journal.write(b"\n")  # now a whole line that is not one
    assert root.changes_since(mark.generation).paths is None


def test_no_journal_is_kept_until_someone_reads_changes(root: TrackedDirectory) -> None:
    """Plain memory-tool use pays nothing for the journal; the first reader starts it and rescans."""
    create(root, "before.md")
    assert not journal_file(root).exists()
    first = root.changes_since(0)
    assert first.paths is None and journal_file(root).exists()
    create(root, "after.md")
    assert root.changes_since(first.generation).paths == ("/memories/after.md",)


def test_a_writer_whose_bookkeeping_folder_was_replaced_finds_the_new_journal(tmp_path: Path) -> None:
    writer, reader = TrackedDirectory(tmp_path / "m"), TrackedDirectory(tmp_path / "m")
    try:
        create(writer, "a.md")  # the writer now holds the bookkeeping folder open
        os.rename(tmp_path / "m" / ".refmem", tmp_path / "old-bookkeeping")
        mark = reader.changes_since(0)  # a new .refmem, with a journal
        create(writer, "b.md")
        assert reader.changes_since(mark.generation).paths == ("/memories/b.md",)
    finally:
        writer.close()
        reader.close()


def test_a_journal_removed_or_garbled_behind_the_stores_back_is_started_again(root: TrackedDirectory) -> None:
    create(root, "a.md")
    kept = root.changes_since(0).generation
    journal_file(root).unlink()
    create(root, "b.md")  # no journal now: not recorded, and the next reader rescans
    assert root.changes_since(kept).paths is None
    journal_file(root).write_bytes(b"garbage\n")
    fresh = TrackedDirectory(root.real)
    try:
        create(fresh, "c.md")
        assert fresh.changes_since(0).paths is None
        assert journal_file(root).read_bytes().startswith(b"refmem-changes 1 ")
    finally:
        fresh.close()


@pytest.mark.parametrize("plant", ["link", "fifo", "hard-link", "folder"])
def test_anything_but_a_single_link_file_at_the_journals_name_stops_writes(tmp_path: Path, plant: str) -> None:
    """D-BOOKKEEPING: never followed, never waited on, never written through; the command changes nothing."""
    root_path = tmp_path / "m"
    (root_path / ".refmem").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.write_text("CANARY")
    name = root_path / ".refmem" / "changes"
    if plant == "link":
        name.symlink_to(outside)
    elif plant == "fifo":
        os.mkfifo(name)
    elif plant == "hard-link":
        os.link(outside, name)
    else:
        name.mkdir()
    handler = MemoryHandler(root_path)
    try:
        result = handler.execute({"command": "create", "path": "/memories/n.md", "file_text": "n"})
        assert result.output == f"Error: Could not create /memories/n.md: {IO_REASONS['bookkeeping']}."
        assert not (root_path / "n.md").exists()
        assert not handler.execute({"command": "view", "path": "/memories"}).is_error  # reads need no journal
    finally:
        handler.close()
    assert outside.read_text() == "CANARY"


def test_no_descriptor_of_the_journal_stays_open(root: TrackedDirectory) -> None:
    """A file kept open for writing would stop a read-only remount of the filesystem ("busy")."""
    create(root, "a.md")
    root.changes_since(0)
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            held.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue
    assert str(journal_file(root)) not in held


def test_the_stores_own_files_are_never_recorded(root: TrackedDirectory) -> None:
    mark = root.changes_since(0)
    index = parse_path("/memories/x")._replace(parts=(".refmem", "openclaw-index.sqlite"))
    (Path(root.real) / ".refmem" / "openclaw-index.sqlite").write_bytes(b"")
    root.delete(index)  # what the OpenClaw tools do to rebuild their index
    assert root.changes_since(mark.generation).paths == ()


def test_writers_in_many_threads_and_stores_leave_whole_lines(tmp_path: Path) -> None:
    stores = [TrackedDirectory(tmp_path / "m") for _ in range(4)]
    mark = stores[0].changes_since(0)

    def write(index: int) -> None:
        for number in range(25):
            create(stores[index], f"s{index}-{number}.md")

    threads = [threading.Thread(target=write, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen = stores[1].changes_since(mark.generation)
    assert seen.paths is not None and len(seen.paths) == 100
    for store in stores:
        store.close()
