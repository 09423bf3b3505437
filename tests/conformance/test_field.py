"""`refmem-conformance field`: the field's data, the installer (a wheel built here, installed offline into an
environment of its own), the history format and the pages made from history. No network: the field's own run is
a documented command, not a test."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import pathlib
import subprocess
import sys
import zipfile
from typing import Any, Dict, List

import pytest
from conformance_support import run_cli
from refmem_conformance.families import by_id, case_state, families

from refmem_conformance import field

REPO = pathlib.Path(__file__).resolve().parents[2]


def _implementation(**changes: Any) -> field.Implementation:
    data: Dict[str, Any] = {
        "id": "fakemem-1.0", "family": "fakemem", "name": "fakemem", "version": "1.0", "language": "python",
        "ecosystem": "pypi", "packages": ["fakemem==1.0"],
        "target": "cmd:env PYTHONPATH={harness} {python} -P -m refmem_conformance.session_adapter python:fakemem:make",
        "adapter": "", "thin": True, "sources": ["a test"],
    }
    data.update(changes)
    return field.parse_implementation(data, "test")


def _wheel(folder: pathlib.Path, name: str, version: str, source: str) -> pathlib.Path:
    """A pure-Python wheel written by hand: one module, its dist-info and a RECORD with hashes."""
    files = {
        f"{name}.py": source.encode(),
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = io.StringIO()
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{path},sha256={digest},{len(data)}\n")
    record.write(f"{name}-{version}.dist-info/RECORD,,\n")
    files[f"{name}-{version}.dist-info/RECORD"] = record.getvalue().encode()
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


FAKE_BACKEND = '''
import pathlib
IMPLEMENTATION = {"name": "fakemem", "language": "python", "version": "1.0", "homepage": ""}
def make(root):
    def call(input):
        if input.get("command") == "create":
            path = pathlib.Path(root) / input["path"][len("/memories/"):]
            path.write_text(input["file_text"])
            return "File created successfully at: " + input["path"]
        return {"output": "unsupported", "is_error": True}
    return call
'''


# ---------------------------------------------------------------------------------------------------
# The field's data


def test_the_field_has_ten_implementations_each_pinned_with_an_adapter_that_exists() -> None:
    implementations = field.load_field()
    assert len(implementations) >= 10
    for item in implementations:
        if item.ecosystem == "pypi":
            assert all("==" in package for package in item.packages), item.id
            assert "{python}" in item.target and "{harness}" in item.target, item.id
        elif item.ecosystem == "npm":
            assert all(package.rsplit("@", 1)[1][:1].isdigit() for package in item.packages), item.id
            assert "{prefix}" in item.target, item.id
        if item.adapter:
            assert (REPO / "conformance" / "adapters" / item.adapter).is_file(), item.id
        assert item.version in item.id and item.sources
    assert len({item.family for item in implementations}) >= 8


@pytest.mark.parametrize(
    "change, message",
    [
        ({"ecosystem": "cargo"}, "ecosystem must be one of"),
        ({"packages": []}, "names its pinned packages"),
        ({"thin": "yes"}, "thin must be a bool"),
        ({"id": "../x"}, "letters, digits"),
        ({"colour": "red"}, "unknown fields ['colour']"),
    ],
)
def test_a_field_file_that_is_wrong_is_refused_with_what_is_wrong(change: Dict[str, Any], message: str) -> None:
    with pytest.raises(field.FieldError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _implementation(**change)


def test_a_field_file_named_other_than_its_id_is_refused(tmp_path: pathlib.Path) -> None:
    (tmp_path / "other.json").write_text(json.dumps(dict(vars(_implementation()), packages=["fakemem==1.0"],
                                                         sources=["a test"])))
    with pytest.raises(field.FieldError, match="named after its id"):
        field.load_field(tmp_path)


def test_list_through_the_command_line_names_every_implementation_and_whether_it_is_thin() -> None:
    status, out, err = run_cli("field", "--list")
    assert status == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert [row[0] for row in rows] == [item.id for item in field.load_field()]
    assert {row[3] for row in rows} == {"thin wrapper", "adapter with logic"}


# ---------------------------------------------------------------------------------------------------
# The installer


def test_a_wheel_installs_into_an_environment_of_its_own_that_reaches_the_harness_only_through_the_links(
    tmp_path: pathlib.Path,
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "fakemem", "1.0", FAKE_BACKEND)
    index = ("--no-index", "--find-links", str(wheels))
    installed = field.install(_implementation(), tmp_path / "cache", REPO, index=index)
    python = tmp_path / "cache" / "fakemem-1.0" / "bin" / "python"
    assert installed.target.startswith(f"cmd:env PYTHONPATH={tmp_path / 'cache' / '_harness'} {python} -P ")
    probe = "import fakemem, importlib.util as u; print(u.find_spec('refmem') is None, u.find_spec('pytest') is None)"
    bare = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, env={}, check=True,
                          cwd=tmp_path)
    assert bare.stdout.split() == ["True", "True"]  # neither our packages nor the runner's leak in
    linked = sorted(path.name for path in (tmp_path / "cache" / "_harness").iterdir())
    assert linked == sorted(field.HARNESS_PACKAGES)
    # the target runs the suite's adapter in that environment: one command through the protocol
    from refmem_harness.targets import open_target

    root = tmp_path / "root" / "memories"
    root.mkdir(parents=True)
    target = open_target(installed.target, root)
    try:
        result = target.execute({"command": "create", "path": "/memories/a.txt", "file_text": "hello"})
    finally:
        target.close()
    assert (result.output, result.is_error) == ("File created successfully at: /memories/a.txt", False)
    assert (root / "a.txt").read_text() == "hello"
    # a second install of the same pin is the folder as it is (the stamp), a changed pin makes it again
    calls: List[List[str]] = []
    field.install(_implementation(), tmp_path / "cache", REPO, runner=lambda argv, **kw: calls.append(argv))
    assert calls == []


def test_a_package_that_cannot_be_installed_says_which_and_what_pip_said(tmp_path: pathlib.Path) -> None:
    (tmp_path / "empty").mkdir()
    index = ("--no-index", "--find-links", str(tmp_path / "empty"))
    with pytest.raises(field.FieldError, match=r"fakemem-1.0: pip install failed \(exit 1\): .*fakemem==1.0"):
        field.install(_implementation(), tmp_path / "cache", REPO, index=index)


def test_npm_installs_with_a_prefix_and_puts_the_adapter_beside_its_node_modules(tmp_path: pathlib.Path) -> None:
    calls: List[List[str]] = []

    def runner(argv: List[str], **kwargs: Any) -> subprocess.CompletedProcess:
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    item = _implementation(
        id="ts-1.0", ecosystem="npm", packages=["@anthropic-ai/sdk@1.14.0"], adapter="node/adapter.mjs",
        target="cmd:node {prefix}/adapter.mjs",
    )
    installed = field.install(item, tmp_path, REPO, runner=runner)
    folder = tmp_path / "ts-1.0"
    assert calls == [["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--save-exact",
                      "@anthropic-ai/sdk@1.14.0"]]
    assert installed.target == f"cmd:node {folder}/adapter.mjs"
    assert (folder / "adapter.mjs").read_bytes() == (REPO / "conformance/adapters/node/adapter.mjs").read_bytes()


# ---------------------------------------------------------------------------------------------------
# History and the pages


@pytest.fixture(scope="module")
def small_report(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    """A real report of the reference on a few cases, hand-written and generated."""
    path = tmp_path_factory.mktemp("report") / "report.json"
    status, _out, err = run_cli("--run", "view-file-00*", "--run", "sec-dotdot-*", "--report-json", str(path))
    assert status == 0, err
    loaded: Dict[str, Any] = json.loads(path.read_text())
    return loaded


def test_a_history_entry_is_valid_small_and_reads_back_as_the_report_it_came_from(
    small_report: Dict[str, Any],
) -> None:
    entry = field.history_entry(_implementation(), small_report, "2026-11-29", 12.34, _implementation().target)
    assert field.check_history(entry) == []
    text = field.history_text(entry)
    assert json.loads(text) == entry
    assert len(text) * 5 < len(json.dumps(small_report))
    assert "/tmp" not in text and os.path.expanduser("~") not in text  # placeholders, never a host path
    back = field.report_from_history(entry, {})
    original, read = by_id(small_report), by_id(back)
    assert list(read) == list(original)
    assert {case_id: case_state(case) for case_id, case in read.items()} == {
        case_id: case_state(case) for case_id, case in original.items()
    }
    assert [f.key for f in families([back], {})] == [f.key for f in families([small_report], {})]


def test_a_failing_case_keeps_its_state_and_classes_and_a_wrong_entry_is_named(small_report: Dict[str, Any]) -> None:
    report = json.loads(json.dumps(small_report))
    first = report["cases"][0]
    first.update(outcome="fail", state="timeout", classes=["safety"])
    entry = field.history_entry(_implementation(), report, "2026-11-29", 1.0, "refmem")
    assert entry["cases"][first["id"]] == ["fail", "timeout", ["safety"]]
    assert case_state(by_id(field.report_from_history(entry, {}))[first["id"]]) == "unsafe"
    entry["cases"][first["id"]] = ["fail", "asleep", []]
    entry["date"] = "29/11/2026"
    problems = field.check_history(entry)
    assert any(problem.startswith("date:") for problem in problems)
    assert any(problem.startswith(f"cases/{first['id']}") for problem in problems)


def test_every_committed_history_file_is_valid_and_named_by_its_id_and_date() -> None:
    for path in sorted(field.HISTORY_DIR.glob("*/*.json")):
        entry = json.loads(path.read_text(encoding="utf-8"))
        assert field.check_history(entry) == [], path.name
        assert (path.parent.name, path.stem) == (entry["id"], entry["date"])


def test_the_field_goes_on_past_an_implementation_it_cannot_install_and_builds_the_pages_from_history(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, small_report: Dict[str, Any]
) -> None:
    folder = tmp_path / "field"
    folder.mkdir()
    for version in ("1.0", "2.0", "3.0"):
        item = dict(vars(_implementation(id=f"fakemem-{version}", version=version)))
        item.update(packages=[f"fakemem=={version}"], sources=["a test"])
        (folder / f"fakemem-{version}.json").write_text(json.dumps(item))

    def install(item: field.Implementation, *args: Any, **kwargs: Any) -> field.Installed:
        if item.version == "2.0":
            raise field.FieldError(f"{item.id}: pip install failed (exit 1): no network")
        return field.Installed(None, "refmem")

    def run_one(item: field.Implementation, target: str, workdir: Any, deployment: bool,
                report_json: pathlib.Path, env: Any = None) -> int:
        report_json.write_text(json.dumps(small_report))
        return 0

    monkeypatch.setattr(field, "install", install)
    monkeypatch.setattr(field, "run_one", run_one)
    history, matrix = tmp_path / "history", tmp_path / "matrix.html"
    out, err = io.StringIO(), io.StringIO()
    argv = ["--field-dir", str(folder), "--history", str(history), "--matrix", str(matrix), "--date", "2026-11-29"]
    status = field.main(argv, out, err)
    assert status == 1
    assert "fakemem-2.0: not run: fakemem-2.0: pip install failed (exit 1): no network" in err.getvalue()
    assert sorted(path.parent.name for path in history.glob("*/2026-11-29.json")) == ["fakemem-1.0", "fakemem-3.0"]
    assert "field: 2 of 3 run" in out.getvalue()
    page = matrix.read_text()
    assert page.count("fakemem [thin wrapper]") >= 2 and "view-file-001" in page
    trend = page[page.index('<h2 id="trends">'):]  # the versions over time, on the matrix page itself
    assert trend.index("1.0 (suite-") < trend.index("3.0 (suite-")
    assert not list(tmp_path.glob("trend-*.html"))


def test_only_an_unknown_id_is_a_usage_error() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert field.main(["--only", "nothing-9.9", "--list"], out, err) == 2
    assert "no implementation nothing-9.9" in err.getvalue()


def test_the_runner_is_called_as_the_command_line_runs_a_suite(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: Dict[str, Any] = {}

    def fake_run(argv: List[str], **kwargs: Any) -> subprocess.CompletedProcess:
        seen.update(argv=argv, env=kwargs["env"])
        (tmp_path / "r.json").write_text("{}")
        return subprocess.CompletedProcess(argv, 1, "", "")

    monkeypatch.setattr(field.subprocess, "run", fake_run)
    status = field.run_one(_implementation(), "refmem", "/dev/shm", True, tmp_path / "r.json", {"X": "1"})
    assert status == 1
    assert seen["argv"] == [sys.executable, "-m", "refmem_conformance", "--target", "refmem", "--report-json",
                            str(tmp_path / "r.json"), "--workdir", "/dev/shm", "--deployment"]
    assert seen["env"]["X"] == "1"
