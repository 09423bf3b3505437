"""Access tracking and pruning (refmem.expiry, refmem._access, refmem.prune): records, crash leftovers, the walk, durations."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path

import pytest
from memory_support import Memory

from refmem import _access as access
from refmem import prune as prune_module
from refmem.expiry import (
    AccessTracker,
    PruneReport,
    parse_duration,
    prune,
    record_name,
    virtual_path,
)

DAY = 86400.0
NOW = 2_000_000_000.0  # a fixed "now" in 2033: every test clock is explicit


class FrozenClock:
    """Stands for the `time` module inside refmem._access: its clock moves only when a test moves it, so a test
    of the resolution windows holds however long the machine takes between two steps."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FrozenClock:
    frozen = FrozenClock(float(int(time.time())))
    monkeypatch.setattr(access, "time", frozen)
    return frozen


def stamp(path: Path, when: float) -> Path:
    """Set a file's access and change times, as the clock of a test says."""
    os.utime(path, (when, when))
    return path


def write(root: Path, rel: str, text: str = "x", age_days: float = 0.0) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return stamp(path, NOW - age_days * DAY)


def access_dir(root: Path) -> Path:
    return root / ".refmem" / "access"


# --- durations --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,seconds",
    [("30d", 30 * DAY), ("12h", 43200), ("90m", 5400), ("3600s", 3600), ("2w", 14 * DAY),
     ("1w2d", 9 * DAY), ("1.5h", 5400), (" 7d ", 7 * DAY), ("1d12h30m", DAY + 45000)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text", ["", "30", "d", "30x", "30D", "-1d", "0d", "0s", "1d 2h", "1 d", "30days", "1e3s", "inf", "nan"]
)
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


# --- virtual paths and record names -----------------------------------------------------------


def test_virtual_path_spellings() -> None:
    assert virtual_path("/memories/a/b.md") == "/memories/a/b.md"
    assert virtual_path("/memories/a/") == "/memories/a"
    assert virtual_path(("a", "b.md")) == "/memories/a/b.md"
    assert virtual_path(()) == "/memories"
    assert record_name(("a", "b.md")) == hashlib.sha256(b"/memories/a/b.md").hexdigest()
    with pytest.raises(ValueError):
        virtual_path("/etc/passwd")


# --- recording --------------------------------------------------------------------------------


def test_record_is_created_hidden_and_timestamped(tmp_path: Path) -> None:
    with AccessTracker(tmp_path) as tracker:
        assert tracker.last_access("/memories/a.md") is None
        assert tracker.touch("/memories/a.md", now=NOW - 5)
        assert tracker.last_access("/memories/a.md") == pytest.approx(NOW - 5)
        assert tracker.last_access(("a.md",)) == pytest.approx(NOW - 5)
    record = access_dir(tmp_path) / record_name("/memories/a.md")
    assert record.read_text() == "/memories/a.md\n"
    assert oct(record.stat().st_mode & 0o777) == oct(0o600)
    assert oct((tmp_path / ".refmem").stat().st_mode & 0o777) == oct(0o700)
    assert [p.name for p in access_dir(tmp_path).iterdir()] == [record.name]  # no temp left


def test_touch_with_the_clock_skips_writes_within_resolution(tmp_path: Path, clock: FrozenClock) -> None:
    tracker = AccessTracker(tmp_path, resolution=60)
    assert tracker.touch("/memories/a.md")
    record = access_dir(tmp_path) / record_name("/memories/a.md")
    assert record.stat().st_mtime == pytest.approx(clock.now)
    past = clock.now - 30
    os.utime(record, (past, past))
    tracker.touch("/memories/a.md")  # 30 s ago < 60 s: not rewritten
    assert record.stat().st_mtime == pytest.approx(past)
    past = clock.now - 120
    os.utime(record, (past, past))
    tracker.touch("/memories/a.md")  # without a file identity nothing is remembered: the record is read
    assert record.stat().st_mtime == pytest.approx(clock.now)
    tracker.close()


FILE = (1, 1001)  # a (device, inode) standing for the file at a path
OTHER_FILE = (1, 2002)


def test_remembered_times_never_skip_longer_than_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-memory times spare a stat per view; they never let an access go unrecorded past `resolution`."""
    clock = [1_000_000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    tracker = AccessTracker(tmp_path, resolution=60)
    assert tracker.touch("/memories/a.md", file_id=FILE)
    record = access_dir(tmp_path) / record_name("/memories/a.md")
    assert record.stat().st_mtime == pytest.approx(clock[0])
    clock[0] += 59
    os.utime(record, (0, 0))  # set back behind the tracker's back: a remembered hit does not even look
    tracker.touch("/memories/a.md", file_id=FILE)
    assert record.stat().st_mtime == pytest.approx(0)
    clock[0] += 2  # 61 s after the remembered time: the record is looked at and written again
    tracker.touch("/memories/a.md", file_id=FILE)
    assert record.stat().st_mtime == pytest.approx(1_000_061.0)
    # A record removed behind the tracker's back (another process's prune) is made again after resolution.
    record.unlink()
    clock[0] += 61
    tracker.touch("/memories/a.md", file_id=FILE)
    assert record.stat().st_mtime == pytest.approx(1_000_122.0)
    tracker.close()


def test_a_different_file_at_a_remembered_path_is_recorded(tmp_path: Path) -> None:
    """Another handler may move another file to the path; this tracker never sees that rename."""
    with AccessTracker(tmp_path, resolution=60) as tracker:
        assert tracker.touch("/memories/e/f.md", file_id=FILE)
        record = access_dir(tmp_path) / record_name("/memories/e/f.md")
        record.unlink()  # the other handler's move carried the record away
        assert tracker.touch("/memories/e/f.md", file_id=OTHER_FILE)
        assert record.exists()


def test_handler_records_a_view_of_an_old_file_moved_in_by_another_handler(memory: Memory) -> None:
    """The reviewer's case: A views /e/f.md; B moves /e away and an old /d to /e; A's next view must count."""
    long_ago = time.time() - 40 * DAY
    for rel, text in (("e/f.md", "new"), ("d/f.md", "old")):
        stamp(memory.put(rel, text), long_ago)
    other = memory.with_options()
    assert not memory.run(command="view", path="/memories/e/f.md").is_error
    assert not other.run(command="rename", old_path="/memories/e", new_path="/memories/g").is_error
    assert not other.run(command="rename", old_path="/memories/d", new_path="/memories/e").is_error
    assert "old" in memory.run(command="view", path="/memories/e/f.md").output
    memory.close()
    report = prune(memory.root, 30 * DAY)
    assert "/memories/e/f.md" not in report.removed


def test_a_tracker_takes_a_root_or_a_path_not_a_descriptor(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(TypeError):
            AccessTracker(fd)  # type: ignore[arg-type]
    finally:
        os.close(fd)


def test_a_closed_tracker_records_nothing_and_never_writes_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    root = tmp_path / "root"
    root.mkdir()
    tracker = AccessTracker(root)
    assert tracker.touch("/memories/a.md", now=NOW)
    tracker.close()
    assert not tracker.touch("/memories/b.md", now=NOW)
    assert not tracker.move("/memories/a.md", "/memories/c.md", is_dir=False, now=NOW)
    assert list(elsewhere.iterdir()) == []


def test_forget_and_move_clear_remembered_times(tmp_path: Path) -> None:
    tracker = AccessTracker(tmp_path, resolution=3600)
    tracker.touch("/memories/a.md")
    tracker.forget("/memories/a.md", is_dir=False)
    tracker.touch("/memories/a.md")  # remembered times were dropped: the record is made again at once
    assert tracker.last_access("/memories/a.md") is not None
    tracker.move("/memories/a.md", "/memories/b.md", is_dir=False)
    tracker.touch("/memories/a.md")
    assert tracker.last_access("/memories/a.md") is not None
    tracker.close()


def test_unicode_paths(tmp_path: Path) -> None:
    with AccessTracker(tmp_path) as tracker:
        for path in ("/memories/café.md", "/memories/日本語/メモ.md", "/memories/😀.txt"):
            assert tracker.touch(path, now=NOW)
            assert tracker.last_access(path) == pytest.approx(NOW)


def test_the_tracker_takes_the_root_path_as_str_or_pathlike(tmp_path: Path) -> None:
    with AccessTracker(str(tmp_path)) as tracker:
        assert tracker.touch("/memories/a.md", now=NOW - 10)
    with AccessTracker(tmp_path) as tracker:
        assert tracker.touch(("b.md",), now=NOW - 20)
    assert AccessTracker(str(tmp_path)).last_access("/memories/b.md") == pytest.approx(NOW - 20)
    with AccessTracker(tmp_path) as tracker:
        assert tracker.move("/memories/a.md", "/memories/c.md", is_dir=False, now=NOW)
        assert tracker.forget("/memories/b.md", is_dir=False)
    paths = sorted(r.path for r in AccessTracker(tmp_path).records())
    assert paths == ["/memories/c.md"]


def test_move_file_and_folder(tmp_path: Path) -> None:
    with AccessTracker(tmp_path) as t:
        t.touch("/memories/d/x.md", now=NOW - 10 * DAY)
        t.touch("/memories/d/sub/y.md", now=NOW - 20 * DAY)
        t.touch("/memories/dx.md", now=NOW - 30 * DAY)  # shares the prefix "d" but is not below d/
        assert t.move("/memories/d", "/memories/e/d2", is_dir=True, now=NOW)
        assert t.last_access("/memories/d/x.md") is None
        assert t.last_access("/memories/e/d2/x.md") == pytest.approx(NOW - 10 * DAY)
        assert t.last_access("/memories/e/d2/sub/y.md") == pytest.approx(NOW - 20 * DAY)
        assert t.last_access("/memories/e/d2") == pytest.approx(NOW)
        assert t.last_access("/memories/dx.md") == pytest.approx(NOW - 30 * DAY)
        # a file rename counts as a change of that file
        assert t.move("/memories/dx.md", "/memories/dy.md", is_dir=False, now=NOW - 1)
        assert t.last_access("/memories/dy.md") == pytest.approx(NOW - 1)
        assert t.last_access("/memories/dx.md") is None


def test_forget_folder_drops_everything_below_only(tmp_path: Path) -> None:
    with AccessTracker(tmp_path) as t:
        for path in ("/memories/d/a", "/memories/d/b/c", "/memories/d", "/memories/dd"):
            t.touch(path, now=NOW)
        assert t.forget("/memories/d")
        assert sorted(r.path for r in t.records()) == ["/memories/dd"]


def test_recording_never_raises_on_a_read_only_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "mkdir", refuse)
    tracker = AccessTracker(tmp_path)
    assert tracker.touch("/memories/a.md") is False
    assert tracker.forget("/memories/a.md") is True  # nothing to forget
    assert tracker.last_access("/memories/a.md") is None
    assert not (tmp_path / ".refmem").exists()


def test_torn_or_foreign_records_are_ignored(tmp_path: Path) -> None:
    with AccessTracker(tmp_path) as t:
        t.touch("/memories/a.md", now=NOW)
    folder = access_dir(tmp_path)
    name = record_name("/memories/a.md")
    (folder / name).write_text("")  # torn: empty after a power loss
    assert AccessTracker(tmp_path).last_access("/memories/a.md") is None
    (folder / name).write_text("/memories/other.md\n")  # content does not hash to the name
    assert AccessTracker(tmp_path).last_access("/memories/a.md") is None
    (folder / "not-a-record").write_text("junk")
    (folder / (record_name("/memories/z") + "x")).write_text("junk")
    assert AccessTracker(tmp_path).records() == []


def test_a_link_or_folder_squatting_a_record_name_is_replaced_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    root = tmp_path / "root"
    folder = root / ".refmem" / "access"
    folder.mkdir(parents=True)
    name = record_name("/memories/a.md")
    os.symlink(outside, folder / name)
    with AccessTracker(root) as t:
        assert t.last_access("/memories/a.md") is None
        assert t.touch("/memories/a.md", now=NOW)
        assert t.last_access("/memories/a.md") == pytest.approx(NOW)
    assert outside.read_text() == "secret"
    assert not (folder / name).is_symlink()


def test_access_folder_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "root"
    (root / ".refmem").mkdir(parents=True)
    os.symlink(elsewhere, root / ".refmem" / "access")
    assert AccessTracker(root).touch("/memories/a.md") is False
    assert list(elsewhere.iterdir()) == []


def test_records_survive_sigkill_mid_write(tmp_path: Path) -> None:
    """Children recording accesses in a tight loop are killed; every record left is whole."""
    if not hasattr(os, "fork"):
        pytest.skip("needs fork")
    for round_ in range(20):
        pid = os.fork()
        if pid == 0:  # child
            try:
                t = AccessTracker(tmp_path)
                i = 0
                while True:
                    t.touch(f"/memories/f{i % 50}.md", now=NOW - i)
                    t.move(f"/memories/f{i % 50}.md", f"/memories/g{i % 50}.md", is_dir=False, now=NOW)
                    t.forget(f"/memories/g{(i + 7) % 50}.md", is_dir=False)
                    i += 1
            finally:
                os._exit(0)
        time.sleep(0.005 + 0.002 * round_)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    folder = access_dir(tmp_path)
    for entry in folder.iterdir():
        if entry.name.startswith(".refmem-tmp-") or entry.name == "moves":
            continue  # debris of a killed creation (never read as a record, removed by prune), the moves log
        assert access.RECORD_NAME.fullmatch(entry.name)
        raw = entry.read_bytes()
        assert hashlib.sha256(raw[:-1]).hexdigest() == entry.name
    assert AccessTracker(tmp_path).records()


# --- pruning ----------------------------------------------------------------------------------


def tree(root: Path) -> list:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if ".refmem" not in p.relative_to(root).parts
    )


def test_prune_uses_the_later_of_record_and_mtime(tmp_path: Path) -> None:
    write(tmp_path, "old.md", age_days=40)
    write(tmp_path, "old_but_viewed.md", age_days=40)
    write(tmp_path, "new.md", age_days=1)
    write(tmp_path, "changed_after_record.md", age_days=2)
    write(tmp_path, "exactly_at_cutoff.md", age_days=30)
    with AccessTracker(tmp_path) as t:
        t.touch("/memories/old_but_viewed.md", now=NOW - 3 * DAY)
        t.touch("/memories/changed_after_record.md", now=NOW - 90 * DAY)
    report = prune(tmp_path, 30 * DAY, now=NOW)
    assert report.removed == ["/memories/old.md"]
    assert report.kept == 4
    assert tree(tmp_path) == ["changed_after_record.md", "exactly_at_cutoff.md", "new.md", "old_but_viewed.md"]


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    write(tmp_path, "a/old.md", age_days=40)
    write(tmp_path, "b.md", age_days=40)
    with AccessTracker(tmp_path) as tracker:
        tracker.touch("/memories/gone.md", now=NOW - 50 * DAY)
    before = tree(tmp_path)
    records_before = sorted(os.listdir(access_dir(tmp_path)))
    report = prune(tmp_path, 30 * DAY, dry_run=True, now=NOW)
    assert report == PruneReport(["/memories/a/old.md", "/memories/b.md", "/memories/a"], 0, 1, 0)
    assert tree(tmp_path) == before
    assert sorted(os.listdir(access_dir(tmp_path))) == records_before
    assert not (tmp_path / ".refmem" / "lock").exists()  # a dry run does not even take the lock


def test_prune_removes_emptied_folders_only(tmp_path: Path) -> None:
    write(tmp_path, "proj/notes/old.md", age_days=100)
    write(tmp_path, "proj/keep.md", age_days=1)
    write(tmp_path, "gone/deep/er/old.md", age_days=100)
    (tmp_path / "already_empty").mkdir()
    report = prune(tmp_path, 30 * DAY, now=NOW)
    assert report.removed == [
        "/memories/gone/deep/er/old.md",
        "/memories/proj/notes/old.md",
        "/memories/gone",
        "/memories/gone/deep",
        "/memories/gone/deep/er",
        "/memories/proj/notes",
    ]
    assert tree(tmp_path) == ["already_empty", "proj", "proj/keep.md"]


def test_prune_drops_records_of_removed_and_vanished_files(tmp_path: Path) -> None:
    write(tmp_path, "old.md", age_days=40)
    write(tmp_path, "new.md", age_days=1)
    with AccessTracker(tmp_path) as t:
        t.touch("/memories/old.md", now=NOW - 40 * DAY)
        t.touch("/memories/new.md", now=NOW)
        t.touch("/memories/vanished.md", now=NOW)  # stale: e.g. a crash between rename and record move
    report = prune(tmp_path, 30 * DAY, now=NOW)
    assert report.removed == ["/memories/old.md"]
    assert report.stale_records == 1
    assert [r.path for r in AccessTracker(tmp_path).records()] == ["/memories/new.md"]


def test_prune_never_follows_or_removes_links_and_leaves_reserved_names(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "victim.md", age_days=400)
    write(outside, "dir/victim2.md", age_days=400)
    root = tmp_path / "root"
    write(root, "old.md", age_days=400)
    os.symlink(outside / "victim.md", root / "link.md")
    os.symlink(outside / "dir", root / "linkdir")
    os.utime(root / "link.md", (NOW - 400 * DAY,) * 2, follow_symlinks=False)
    os.mkfifo(root / "fifo")
    write(root, "sub/.refmem-tmp-deadbeef", age_days=2)  # leftover of a crashed write
    write(root, "sub/.refmem-tmp-fresh", age_days=0)  # maybe a write in progress elsewhere
    write(root, ".hidden_old.md", age_days=400)
    report = prune(root, 30 * DAY, now=NOW)
    assert report.removed == ["/memories/.hidden_old.md", "/memories/old.md"]
    assert report.temp_files == 1
    assert (outside / "victim.md").exists() and (outside / "dir" / "victim2.md").exists()
    assert (root / "link.md").is_symlink() and (root / "linkdir").is_symlink() and (root / "fifo").exists()
    assert not (root / "sub" / ".refmem-tmp-deadbeef").exists()
    assert (root / "sub" / ".refmem-tmp-fresh").exists()


def test_prune_skips_a_file_replaced_after_it_was_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.md"
    target.write_text("old")
    stamp = time.time() - 40 * DAY
    os.utime(target, (stamp, stamp))
    original = prune_module.unlink_if_unchanged

    def swap_then_unlink(folder, name, judged):
        target = tmp_path / name
        target.unlink()
        target.write_text("rewritten just now")  # a new inode, a new mtime
        return original(folder, name, judged)

    monkeypatch.setattr(prune_module, "unlink_if_unchanged", swap_then_unlink)
    report = prune(tmp_path, 30 * DAY, now=time.time())
    assert report.removed == []
    assert (tmp_path / "a.md").read_text() == "rewritten just now"


def test_prune_waits_for_the_handlers_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prune reaches the lock before it removes anything, and goes on once the lock is released: the flock call
    says when it is reached, so no guess of how long prune takes is needed (60 s is a hang guard)."""
    import fcntl
    import threading

    write(tmp_path, "old.md", age_days=40)
    (tmp_path / ".refmem").mkdir(exist_ok=True)
    fd = os.open(tmp_path / ".refmem" / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    real_flock, reached = fcntl.flock, threading.Event()

    def flock(descriptor: int, operation: int) -> None:
        if operation == fcntl.LOCK_EX and threading.current_thread() is not threading.main_thread():
            reached.set()
        real_flock(descriptor, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    done = threading.Event()
    result = []
    worker = threading.Thread(target=lambda: (result.append(prune(tmp_path, 30 * DAY, now=NOW)), done.set()))
    worker.start()
    assert reached.wait(60), "prune never took the lock"
    assert (tmp_path / "old.md").exists() and not done.is_set()
    os.close(fd)
    assert done.wait(60)
    worker.join()
    assert result[0].removed == ["/memories/old.md"]


def test_prune_refuses_bad_ages(tmp_path: Path) -> None:
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError):
            prune(tmp_path, bad)


def test_prune_on_a_large_tree_reports_counts(tmp_path: Path) -> None:
    for i in range(300):
        write(tmp_path, f"d{i % 10}/f{i}.md", age_days=40 if i % 3 == 0 else 1)
    report = prune(tmp_path, 30 * DAY, now=NOW)
    assert len(report.removed) == 100
    assert report.kept == 200


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() == 0, reason="root ignores permissions")
def test_unreadable_folder_is_kept_and_prune_goes_on(tmp_path: Path) -> None:
    write(tmp_path, "locked/old.md", age_days=40)
    write(tmp_path, "old.md", age_days=40)
    (tmp_path / "locked").chmod(0)
    try:
        report = prune(tmp_path, 30 * DAY, now=NOW)
    finally:
        (tmp_path / "locked").chmod(0o700)
    assert report.removed == ["/memories/old.md"]


# --- the handler's use of the tracker ---------------------------------------------------------


def test_handler_views_keep_old_files_from_expiring_and_writes_need_no_record(memory: Memory) -> None:
    """End to end: what the handler records is what prune needs, and nothing more."""
    now = time.time()
    viewed_from = int(now)  # a record's time comes from the same clock, in whole nanoseconds
    for rel in ("viewed.md", "ignored.md"):
        stamp(memory.put(rel, "x"), now - 40 * DAY)
    assert not memory.run(command="view", path="/memories/viewed.md").is_error
    assert not memory.run(command="create", path="/memories/new.md", file_text="n\n").is_error
    assert not memory.run(command="str_replace", path="/memories/new.md", old_str="n", new_str="m").is_error
    assert not memory.run(command="view", path="/memories/new.md").is_error
    memory.close()
    with AccessTracker(memory.root) as tracker:
        assert viewed_from <= tracker.last_access("/memories/viewed.md") <= time.time()
        # Created, edited and viewed within the resolution: the file's own mtime says all of it.
        assert tracker.last_access("/memories/new.md") is None
    report = prune(memory.root, 30 * DAY)
    assert report.removed == ["/memories/ignored.md"]
    assert tree(memory.root) == ["new.md", "viewed.md"]


def test_touch_with_a_recent_change_writes_nothing(tmp_path: Path, clock: FrozenClock) -> None:
    with AccessTracker(tmp_path, resolution=60) as tracker:
        assert tracker.touch("/memories/a.md", changed_at=clock.now - 10)
        assert tracker.last_access("/memories/a.md") is None
        assert tracker.touch("/memories/a.md", changed_at=clock.now - 120)
        assert tracker.last_access("/memories/a.md") == pytest.approx(clock.now)
        # A change time in the future (a skewed clock) is not trusted to stand for the access.
        assert tracker.touch("/memories/b.md", changed_at=clock.now + 3600)
        assert tracker.last_access("/memories/b.md") == pytest.approx(clock.now)
