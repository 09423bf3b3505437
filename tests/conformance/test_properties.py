"""The property-based suite (conformance/properties): random command sequences against any target, a failure shrunk
to its shortest sequence, in the class of what it broke, with a finding file that replays it and becomes a case.

The planted bugs are caught through the pytest plugin, as an implementer's CI would run it (pytest in a subprocess,
`-p refmem_conformance.pytest_plugin --memory-target ...`), each in its own class and shrunk to at most three
commands; the reference passes every class under `standard`; careful backends written to the documentation pass the
classes the `documented` profile judges (nothing the documentation leaves open fails them). Every verdict comes
from a fixed seed and counts nothing in time: the same backend, the same sequences, the same verdict.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

import pytest
from conformance_support import HERE, WORKDIR
from refmem_conformance.cli import main
from refmem_conformance.properties import documented, vocabulary
from refmem_conformance.properties.judge import gating_classes
from refmem_conformance.properties.outcome import SearchResult
from refmem_conformance.properties.run import run_class

from refmem_harness import finding as finding_files
from refmem_harness import model

REPO = HERE.parents[1]
SHRUNK = re.compile(r"^FAIL memory-properties::(\w+) \[(\w+)\] shrunk to (\d+) commands?", re.MULTILINE)
"""A failure as the plugin reports it, at the start of a line: pytest's short summary repeats it after `FAILED ... - `
when the terminal is wide enough, and that copy is not a second failure."""
FINDING_SCHEMA = json.loads((REPO / "conformance" / "schema" / "fuzz-finding.schema.json").read_text(encoding="utf-8"))
BUDGET = "200"
"""Sequences per class in the planted-bug runs: the plugin's default, what an implementer's CI runs."""


def _pytest(project: pathlib.Path, *options: str) -> subprocess.CompletedProcess:
    """pytest in a subprocess, in an empty project, with the plugin loaded by name (as a vendored copy loads it)."""
    project.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE), os.environ.get("PYTHONPATH", "")]))
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    env["COLUMNS"] = "250"  # wide, as on CI machines: the short summary then carries each failure line whole
    workdir = ["--memory-workdir", WORKDIR[1]] if WORKDIR else []
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "refmem_conformance.pytest_plugin", "-p", "no:cacheprovider", "-q",
         "-rA", "--rootdir", str(project), *workdir, *options],
        capture_output=True, text=True, timeout=900, cwd=str(project), env=env,
    )


def _failures(output: str) -> List[Tuple[str, str, int]]:
    """(item, class, commands) of every property failure printed."""
    return [(item, cls, int(count)) for item, cls, count in SHRUNK.findall(output)]


def _finding_file(output: str) -> pathlib.Path:
    found = re.search(r"replay: refmem-conformance --replay (\S+) --target", output)
    assert found is not None, output[-3000:]
    return pathlib.Path(found.group(1))


# --- through the plugin ----------------------------------------------------------------------------------------


def test_the_reference_passes_every_class_under_standard(tmp_path: pathlib.Path) -> None:
    project = tmp_path / "project"
    result = _pytest(project, "--memory-target", "refmem", "--memory-examples", "40", "memory-properties")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    for cls in ("safety", "robustness", "signalling", "documented", "reference"):
        assert f"PASSED memory-properties::{cls}" in result.stdout
    assert "5 passed" in result.stdout
    assert not (project / ".hypothesis").exists()  # no example database, no cache, in the project


PLANTED = [
    # (target, the class that must catch it, what the finding is, the classes that must not)
    ("python:buggy_backends:make_host_path_in_errors", "safety", "leak", ()),  # the host path in an error
    ("python:buggy_backends:make_decode_after_dotdot_check", "safety", "", ()),  # %2e%2e decoded after the check
    ("python:buggy_backends:make_rename_overwrites", "safety", "data_loss", ()),  # rename replaces what exists
    ("python:property_backends:make_double_insert", "documented", "final", ("safety",)),  # insert applied twice
    ("python:unsignalled_backend:make", "signalling", "is_error", ()),  # errors that do not say they are
]


@pytest.mark.slow
@pytest.mark.parametrize(("target", "cls", "kind", "passing"), PLANTED,
                         ids=[target.split(":")[-1] for target, *_ in PLANTED])
def test_a_planted_bug_is_caught_in_its_class_and_shrunk(
    tmp_path: pathlib.Path, target: str, cls: str, kind: str, passing: Tuple[str, ...]
) -> None:
    findings = tmp_path / "findings"
    nodes = [f"memory-properties::{name}" for name in (cls, *passing)]
    result = _pytest(tmp_path / "project", "--memory-target", target, "--memory-examples", BUDGET,
                     "--memory-findings", str(findings), *nodes)
    assert result.returncode == 1, result.stdout[-4000:] + result.stderr[-2000:]
    failures = _failures(result.stdout)  # every distinct failure the budget reached, the planted one first
    item, shown, commands = failures[0]
    assert (item, shown) == (cls, cls) and 1 <= commands <= 3, result.stdout[-4000:]
    assert all((other, in_class) == (cls, cls) for other, in_class, _ in failures), result.stdout[-4000:]
    assert f"[{cls}] {kind}" in result.stdout, result.stdout[-4000:]
    for name in passing:  # a documented bug is not a safety one: nothing outside or unnamed is touched
        assert f"PASSED memory-properties::{name}" in result.stdout
    path = _finding_file(result.stdout)
    assert path.parent == findings
    found = finding_files.load(path)
    assert len(found.commands) == commands and found.engine == "hypothesis" and found.target == target
    assert f"[{cls}]" in found.detail and "<WORK>" not in json.dumps(found.commands)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["python:docfaithful_backend:make", "python:property_backends:make_own_storage",
                                    "python:property_backends:make_with_index"])
def test_careful_backends_pass_what_the_documented_profile_judges(tmp_path: pathlib.Path, target: str) -> None:
    result = _pytest(tmp_path / "project", "--memory-target", target, "--memory-examples", "40", "memory-properties")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "4 passed" in result.stdout  # safety, robustness, signalling, documented: no reference under documented


@pytest.mark.slow
def test_the_items_are_collected_only_when_asked_for(tmp_path: pathlib.Path) -> None:
    project = tmp_path / "project"
    without = _pytest(project, "--memory-target", "python:buggy_backends:make_clean", "--memory-no-matrix",
                      "--memory-run", "view-file-0*", "--collect-only")
    assert "memory-conformance::view-file-001" in without.stdout and "memory-properties" not in without.stdout
    standard = _pytest(project, "--memory-target", "python:buggy_backends:make_clean", "--memory-profile", "standard",
                       "--memory-no-matrix", "--collect-only", "memory-properties")
    items = re.findall(r"memory-properties::\w+", standard.stdout)
    assert items == [f"memory-properties::{cls}" for cls in gating_classes("standard")]
    assert "memory-conformance::" not in standard.stdout  # a node ID chooses: the case items are left out


# --- one finding, run twice, replayed and turned into a case ----------------------------------------------------

DOUBLE_INSERT = "python:property_backends:make_double_insert"


ONE_SEARCH = pytest.mark.xdist_group("properties-double-insert")
"""The tests of the search below, kept on one worker under `-n 2 --dist loadgroup` (D-CI-ORDER): split over two, each
worker made the module's search (12 s of CPU) itself."""


@pytest.fixture(scope="module")
def double_insert(tmp_path_factory: pytest.TempPathFactory) -> SearchResult:
    """The documented class searched on the backend that inserts twice (the plugin's default budget)."""
    return run_class(DOUBLE_INSERT, "documented", examples=int(BUDGET), findings=tmp_path_factory.mktemp("found"),
                     workdir=pathlib.Path(WORKDIR[1]) if WORKDIR else None)


@pytest.mark.slow
@ONE_SEARCH
def test_the_same_seed_gives_the_same_shrunk_sequence(double_insert: SearchResult, tmp_path: pathlib.Path) -> None:
    again = run_class(DOUBLE_INSERT, "documented", examples=int(BUDGET), findings=tmp_path,
                      workdir=pathlib.Path(WORKDIR[1]) if WORKDIR else None)
    assert double_insert.failure is not None and again.failure is not None
    assert again.failure.commands == double_insert.failure.commands and again.runs == double_insert.runs
    assert double_insert.finding_file is not None and again.finding_file is not None
    assert again.finding_file.read_text() == double_insert.finding_file.read_text()


def _cli(*argv: str) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([*argv, *WORKDIR], out=out, err=err)
    return status, out.getvalue(), err.getvalue()


@ONE_SEARCH
def test_the_printed_replay_reproduces_it(double_insert: SearchResult) -> None:
    assert double_insert.finding_file is not None
    replayed, out, err = _cli("--replay", str(double_insert.finding_file), "--target", DOUBLE_INSERT)
    assert replayed == 1 and "[documented] final: insert puts insert_text after line insert_line" in out, out + err
    assert "verdict: FAIL (exit 1): documented broken" in out
    on_reference, out, err = _cli("--replay", str(double_insert.finding_file), "--target", "refmem")
    assert on_reference == 0 and "verdict: PASS (exit 0)" in out, out + err


@ONE_SEARCH
def test_a_finding_becomes_a_case_that_fails_the_backend(double_insert: SearchResult, tmp_path: pathlib.Path) -> None:
    assert double_insert.finding_file is not None
    cases = tmp_path / "cases"
    converted = subprocess.run(
        [sys.executable, "-m", "refmem_fuzz", "to-case", str(double_insert.finding_file), "--out",
         str(cases / "found.json")],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert converted.returncode == 0, converted.stdout + converted.stderr
    assert _cli("validate", "--cases-dir", str(cases))[0] == 0
    passes, out, _ = _cli("--cases-dir", str(cases), "--no-matrix", "--target", "refmem")
    assert passes == 0, out
    fails, out, _ = _cli("--cases-dir", str(cases), "--no-matrix", "--target", DOUBLE_INSERT, "--profile", "standard")
    assert fails == 1 and "1 fail" in out, out  # the reference's final text is pinned: the doubled line shows


# --- the command line ----------------------------------------------------------------------------------------


def test_properties_from_the_command_line(tmp_path: pathlib.Path) -> None:
    target = "python:buggy_backends:make_host_path_in_errors"
    status, out, err = _cli("--properties", "20", "--target", target, "--findings", str(tmp_path))
    assert status == 1, out + err
    assert "  safety: FAIL" in out and "  documented: pass" in out and "not safe" in out
    assert [cls for _, cls, _ in _failures(out)] == ["safety"]
    assert _finding_file(out).parent == tmp_path
    status, out, err = _cli("--properties", "10")
    assert status == 0 and "  reference: pass" in out and "verdict: PASS (exit 0)" in out, out + err


def test_properties_without_hypothesis_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # import hypothesis now raises ImportError
    status, out, err = _cli("--properties", "5")
    assert status == 2 and "pip install 'refmem[conformance]'" in err, out + err


@pytest.mark.parametrize(
    "argv",
    [["--properties", "0"], ["--properties", "5", "--replay", "x.json"], ["list", "--properties", "5"]],
    ids=["no-sequences", "both", "with-a-subcommand"],
)
def test_properties_usage_errors(argv: List[str]) -> None:
    assert _cli(*argv)[0] == 2


def test_replay_refuses_what_it_cannot_replay(tmp_path: pathlib.Path) -> None:
    not_a_finding = tmp_path / "x.json"
    not_a_finding.write_text("{}")
    status, _, err = _cli("--replay", str(not_a_finding))
    assert status == 2 and "not a finding file" in err
    hostile = next(path for path in sorted((REPO / "fuzz" / "findings").rglob("*.json"))
                   if finding_files.load(path).hostile_layout)
    status, _, err = _cli("--replay", str(hostile))
    assert status == 2 and "refmem-fuzz replay" in err


# --- the pieces --------------------------------------------------------------------------------------------------


def _tree(**files: Optional[str]) -> model.Tree:
    """A model tree: name -> text, or None for a folder (folders on the way are made)."""
    tree: model.Tree = {(): model.DIR}
    for name, text in files.items():
        parts = tuple(name.split("__"))
        for depth in range(1, len(parts)):
            tree[parts[:depth]] = model.DIR
        tree[parts] = model.DIR if text is None else model.file_node(text)
    return tree


SETTLED: List[Tuple[Dict[str, Any], model.Tree, Optional[str]]] = [
    ({"command": "create", "path": "/memories/a", "file_text": "x"}, _tree(a="y"), "create never overwrites"),
    ({"command": "create", "path": "/memories/a", "file_text": "x"}, _tree(), "create makes a file"),
    ({"command": "create", "path": "/memories/d/a", "file_text": "x"}, _tree(), None),  # a missing folder: open
    ({"command": "create", "path": "/memories/A", "file_text": "x"}, _tree(), None),  # upper case: open
    ({"command": "create", "path": "/memories/nul.txt", "file_text": "x"}, _tree(), None),  # a device name
    ({"command": "view", "path": "/memories/a/b"}, _tree(a="x"), "a path that does not exist"),
    ({"command": "view", "path": "/memories/a", "view_range": [2, 9]}, _tree(a="1\n2\n"), None),
    ({"command": "view", "path": "/memories/a", "view_range": [1, 2]}, _tree(a="1\n2\n"), "view_range shows"),
    ({"command": "str_replace", "path": "/memories/a", "old_str": "b", "new_str": "c"}, _tree(a="abc"), "replaces"),
    ({"command": "str_replace", "path": "/memories/a", "old_str": "aa", "new_str": ""}, _tree(a="aaa"), None),
    ({"command": "str_replace", "path": "/memories/a", "old_str": "a", "new_str": ""}, _tree(a="aba"), "more than"),
    ({"command": "str_replace", "path": "/memories/a", "old_str": "b", "new_str": ""}, _tree(a="a\r\nb"), None),
    ({"command": "str_replace", "path": "/memories/d", "old_str": "b", "new_str": ""}, _tree(d=None), "a folder"),
    ({"command": "insert", "path": "/memories/a", "insert_line": 1, "insert_text": "x\n"}, _tree(a="1\n2\n"),
     "insert puts"),
    ({"command": "insert", "path": "/memories/a", "insert_line": 3, "insert_text": "x\n"}, _tree(a="1\n2\n"), None),
    ({"command": "insert", "path": "/memories/a", "insert_line": 4, "insert_text": "x"}, _tree(a="1\n2\n"),
     "outside [0"),
    ({"command": "insert", "path": "/memories/a", "insert_line": 1, "insert_text": "x"}, _tree(a="1\n2\n"), None),
    ({"command": "delete", "path": "/memories"}, _tree(a="x"), None),
    ({"command": "delete", "path": "/memories/d"}, _tree(d__a="x"), "delete removes"),
    ({"command": "rename", "old_path": "/memories/a", "new_path": "/memories/b"}, _tree(a="x", b="y"), "never over"),
    ({"command": "rename", "old_path": "/memories/a", "new_path": "/memories/a"}, _tree(a="x"), None),
    ({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/d/e"}, _tree(d=None), None),
    ({"command": "rename", "old_path": "/memories/a", "new_path": "/memories/e/b"}, _tree(a="x"), None),
    ({"command": "rename", "old_path": "/memories/x", "new_path": "/memories/b"}, _tree(b="y"), "does not exist"),
    ({"command": "rename", "old_path": "/memories/a", "new_path": "/memories/b"}, _tree(a="x"), "rename moves"),
    ({"command": "view", "path": "/memories/../outside"}, _tree(), None),
    ({"command": "view", "path": "/memories//a"}, _tree(a="x"), None),
    ({"command": "view"}, _tree(), None),
]


@pytest.mark.parametrize(("command", "tree", "said"), SETTLED, ids=[str(n) for n in range(len(SETTLED))])
def test_where_the_documentation_settles_a_command(
    command: Dict[str, Any], tree: model.Tree, said: Optional[str]
) -> None:
    found = documented.statement(command, tree)
    assert (found is None) == (said is None) and (said is None or said in found), found
    if found is not None:  # the model then has an outcome for it
        assert model.Model([], documented.parse).apply(command) is not None


def test_a_listing_is_matched_two_levels_deep_without_hidden_items() -> None:
    tree = _tree(a="xyz", d__b="1", d__e__c="22", d__node_modules__m="m", **{".h": "h"})
    match = documented.view_match({"command": "view", "path": "/memories"}, tree)
    assert match == {"listing": {"exact": True, "entries": [
        ["/memories", None], ["/memories/a", 3], ["/memories/d/", None], ["/memories/d/b", 1], ["/memories/d/e/", None],
    ]}}
    assert documented.view_match({"command": "view", "path": "/memories"}, _tree(**{"café": "x"})) is None


def test_a_step_is_its_bytes_and_zeros_are_the_simplest_command() -> None:
    empty = _tree()
    assert vocabulary.command(vocabulary.Reader(bytes(vocabulary.STEP_BYTES)), empty) == {
        "command": "view", "path": "/memories/a"
    }
    for seed in range(200):
        data = bytes((seed * 37 + index * 101) % 256 for index in range(vocabulary.STEP_BYTES))
        one = vocabulary.command(vocabulary.Reader(data), empty)
        assert one == vocabulary.command(vocabulary.Reader(data), empty)
        json.dumps(one)  # plain JSON data, as a finding file stores it


def test_gating_classes_follow_the_profiles() -> None:
    assert gating_classes("documented") == ("safety", "robustness", "signalling", "documented")
    assert gating_classes("standard") == gating_classes("hardening") == gating_classes("documented") + ("reference",)


def test_the_finding_file_follows_the_fuzzers_schema(tmp_path: pathlib.Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    result = run_class("python:buggy_backends:make_host_path_in_errors", "safety", examples=20, findings=tmp_path,
                       workdir=pathlib.Path(WORKDIR[1]) if WORKDIR else None)
    assert result.failure is not None and result.finding_file is not None
    data = json.loads(result.finding_file.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(FINDING_SCHEMA).validate(data)
    assert re.fullmatch(finding_files.ORACLE_PATTERN, data["oracle"]) and data["oracle"].startswith("leak:host-path:")
    text = result.finding_file.read_text(encoding="utf-8")
    assert "refmem-conformance-properties_" not in text and "canary-" not in text  # <WORK> and <CANARY> instead
