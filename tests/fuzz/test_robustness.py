"""The robustness harnesses (fuzz/robustness.py): a bounded seeded run of each, and proof that each
oracle fails when the code under test misbehaves."""

from __future__ import annotations

import base64
import itertools
import json
import os
import pathlib
import tempfile
from typing import Any, Dict, Iterator

import pytest

from refmem import policy, serve
from refmem_fuzz import robustness
from refmem_harness.sequence_layout import scratch_dir_base

START = b'{"cmd": "start", "version": 1}'


@pytest.fixture(autouse=True)
def _scratch() -> Iterator[None]:
    yield
    robustness.close_scratch()


@pytest.fixture()
def in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harnesses' scratch folders (made with tempfile) on tmpfs when there is one, as the fuzzer's layouts are:
    every input writes and fsyncs there, which on a busy disk was most of a run's time."""
    base = scratch_dir_base()
    if base is not None:
        monkeypatch.setattr(tempfile, "tempdir", base)


@pytest.mark.parametrize("name, runs", [("policy", 3000), ("serve", 1500), ("exec", 1200), ("prune", 150)])
@pytest.mark.usefixtures("in_memory")
def test_a_seeded_random_run_finds_nothing(name: str, runs: int) -> None:
    assert robustness.run_random(name, runs=runs, seed=20250818) == runs


def test_random_inputs_are_deterministic_for_a_seed() -> None:
    first = robustness.random_inputs(7)
    second = robustness.random_inputs(7)
    assert [next(first) for _ in range(50)] == [next(second) for _ in range(50)]


def test_the_scratch_folder_is_removed() -> None:
    base = robustness.scratch().base
    assert base.is_dir()
    robustness.close_scratch()
    assert not base.exists()


# --- the audit's inputs pass the oracles ---------------------------------------------------------


def _nested_jwt(depth: int) -> str:
    def part(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    return part(b'{"a":' + b"[" * depth) + "." + part(b'{"sub":"x"}') + ".sig"


def test_the_audit_inputs_pass(tmp_path: pathlib.Path) -> None:
    robustness.check_policy(_nested_jwt(20_000))
    robustness.check_policy("-----BEGIN " + "PRIVATE KEY-----" * 500)
    robustness.check_session([b'{"cmd": []}', b"[" * 100_000, START, b"\xff", b"x" * 5000, b"null"])
    robustness.check_exec(["exec", "--root", str(tmp_path), "[" * 100_000])


# --- each oracle fails when the code misbehaves -------------------------------------------------


def test_policy_oracle_catches_a_detector_that_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def raises(text: str) -> Any:
        raise RecursionError("deep")

    monkeypatch.setattr(policy, "DEFAULT_DETECTORS", policy.DEFAULT_DETECTORS + (raises,))
    with pytest.raises(RecursionError):
        robustness.check_policy("any text")


def test_policy_oracle_catches_redaction_that_leaves_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy, "redact", lambda text, findings: text)
    with pytest.raises(robustness.Broken, match="redacted text still holds a finding"):
        robustness.check_policy("card 4111 1111 1111 1111")


def test_session_oracle_catches_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(session: Any, request: Dict[str, Any]) -> Dict[str, Any]:
        raise TypeError("unhashable")

    monkeypatch.setitem(serve._COMMANDS, "start", fails)
    with pytest.raises(robustness.Broken, match="the server failed on a line"):
        robustness.check_session([START])


def test_session_oracle_catches_a_missing_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    real = serve.handle_line
    monkeypatch.setattr(
        serve, "handle_line", lambda session, line: None if line.startswith(b"null") else real(session, line)
    )
    with pytest.raises(robustness.Broken, match="1 replies to 2 request lines"):
        robustness.check_session([b"null", START])


def test_session_oracle_catches_a_wrong_seq(monkeypatch: pytest.MonkeyPatch) -> None:
    real = serve.handle_line

    def wrong_seq(session: Any, line: Any) -> Any:
        reply = real(session, line)
        return dict(reply, seq=99) if reply else reply

    monkeypatch.setattr(serve, "handle_line", wrong_seq)
    with pytest.raises(robustness.Broken, match="seq 99"):
        robustness.check_session([b'{"cmd": "fly", "seq": 3}'])


def test_session_oracle_catches_a_handler_that_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    from refmem import handler

    def raises(self: Any, tool_input: Any) -> Any:
        raise KeyError("oops")

    monkeypatch.setattr(handler.MemoryHandler, "execute", raises)
    lines = [START, json.dumps({"cmd": "reset", "seq": 1, "root": str(tmp_path)}).encode()]
    lines.append(b'{"cmd": "execute", "seq": 2, "input": {}}')
    with pytest.raises(robustness.Broken, match="the handler raised"):
        robustness.check_session(lines)


def test_exec_oracle_lets_an_unhandled_exception_through(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    from refmem import cli

    def raises(args: Any) -> int:
        raise ValueError("not caught")

    monkeypatch.setattr(cli, "_exec", raises)  # the parser looks the function up when it is built
    with pytest.raises(ValueError, match="not caught"):
        robustness.check_exec(["exec", "--root", str(tmp_path), "{}"])


def test_exec_oracle_catches_an_unexplained_status(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    from refmem import cli

    monkeypatch.setattr(cli, "_fail", lambda reason: 2)  # status 2 with nothing said
    with pytest.raises(robustness.Broken, match="status 2 unexplained"):
        robustness.check_exec(["exec", "--root", str(tmp_path), "not json"])


def test_exec_arguments_never_name_a_root_outside_the_scratch_folder() -> None:
    place = robustness.scratch()
    for data in itertools.islice(robustness.random_inputs(3, 64), 2000):
        argv = robustness._exec_argv(data, place.roots())
        assert robustness._confined(argv, str(place.base)), argv
        if len(argv) > 3 and argv[1] == "--root" and argv[2] == str(place.memories):
            break
    assert not robustness._confined(["exec", "--root", "/elsewhere", "{}"], str(place.base))
    assert not robustness._confined(["exec", "--root=relative", "{}"], str(place.base))


def _hostile_tree(tmp_path: pathlib.Path) -> pathlib.Path:
    top, outside = tmp_path / "memories", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("CANARY")
    (top / "d").mkdir(parents=True)
    (top / "d" / "old.md").write_text("old")
    (top / "link").symlink_to(outside / "secret.txt")
    for path in (top / "d" / "old.md", top / "link"):
        os.utime(path, (1.0, 1.0), follow_symlinks=False)
    return top


def test_prune_oracle_passes_the_real_prune(tmp_path: pathlib.Path) -> None:
    top = _hostile_tree(tmp_path)
    robustness.check_prune(top, tmp_path / "outside", older_than=86400.0, dry_run=False)
    assert not (top / "d").exists() and (top / "link").is_symlink()


def test_prune_oracle_catches_a_prune_that_removes_links(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    from refmem import expiry

    top = _hostile_tree(tmp_path)
    real = expiry.prune

    def careless(root: Any, older_than: float, dry_run: bool = False, now: Any = None) -> Any:
        (top / "link").unlink()
        return real(root, older_than, dry_run=dry_run, now=now)

    monkeypatch.setattr(expiry, "prune", careless)
    with pytest.raises(robustness.Broken, match="removed a link"):
        robustness.check_prune(top, tmp_path / "outside", older_than=86400.0, dry_run=False)


def test_prune_oracle_catches_a_dry_run_that_removes(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    from refmem import expiry

    top = _hostile_tree(tmp_path)
    real = expiry.prune
    monkeypatch.setattr(expiry, "prune", lambda root, older, dry_run=False, now=None: real(root, older, now=now))
    with pytest.raises(robustness.Broken, match="dry run removed"):
        robustness.check_prune(top, tmp_path / "outside", older_than=86400.0, dry_run=True)


def test_refmem_fuzz_robust_runs_each_harness(capsys: pytest.CaptureFixture[str]) -> None:
    from refmem_fuzz import cli

    for name in robustness.HARNESSES:
        assert cli.main(["robust", name, "--runs", "20", "--seed", "3"]) == 0
        assert f"robustness {name}: 20 runs" in capsys.readouterr().out
