"""`refmem-fuzz to-case`: a case file the conformance suite validates and runs as it is, laying out only the
fixtures the finding's commands reach, with an ID of the case schema's shape and a printable description."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Any, Dict, List

import pytest
from fuzz_support import REPO
from refmem_fuzz.cli import main
from refmem_fuzz.to_case import CASE_ID, CASE_SCHEMA_ID, GROUP, to_case, to_case_file, used_fixtures

from refmem_harness import finding as finding_files
from refmem_harness.finding import Finding
from refmem_harness.sequence_layout import HOSTILE_FIXTURES

COMMITTED = [path for path in sorted((REPO / "fuzz" / "findings").rglob("*.json"))
             if finding_files.load(path).harness in ("sequence", "paths")]
"""The memory tool's committed findings (a plug-in's tools have cases of their own)."""
CASE_SCHEMA = json.loads((REPO / "conformance" / "schema" / "case.schema.json").read_text(encoding="utf-8"))


def _suite(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "refmem_conformance", *args], env=env, capture_output=True,
                          text=True, timeout=600)


def _finding(commands: List[Any], oracle: str = "leak:canary:view", **changes: Any) -> Finding:
    fields: Dict[str, Any] = dict(target="cmd:node adapter.js", harness="sequence", oracle=oracle, detail="",
                                  step=0, hostile_layout=True, differential=False, commands=commands, observed=[])
    fields.update(changes)
    return Finding(**fields)


def test_case_files_validate_and_run_in_the_conformance_suite(tmp_path: pathlib.Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    cases = tmp_path / "cases"
    for path in COMMITTED:
        assert main(["to-case", str(path), "--out", str(cases / path.name)]) == 0
    assert "wrote" in capsys.readouterr().out
    checked = _suite("validate", "--cases-dir", str(cases))
    assert checked.returncode == 0 and ", 0 problems" in checked.stdout, checked.stdout + checked.stderr
    ran = _suite("--cases-dir", str(cases), "--target", "refmem", "--no-matrix")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert f"{len(COMMITTED)} pass, 0 fail" in ran.stdout


def test_the_file_is_one_group_with_the_schemas_shapes(tmp_path: pathlib.Path) -> None:
    found = finding_files.load(COMMITTED[0])
    document = to_case_file(found)
    assert list(document) == ["$schema", "group", "cases"] and document["$schema"] == CASE_SCHEMA_ID
    assert CASE_SCHEMA_ID == CASE_SCHEMA["$id"]
    group_pattern = CASE_SCHEMA["properties"]["group"]["pattern"]
    id_pattern = CASE_SCHEMA["$defs"]["case"]["properties"]["id"]["pattern"]
    for text in ("fuzz", "fuzz-0a43", "fuzz-0a43-001", "Fuzz", "fuzz-", "-fuzz", "fuzz_1.2", "9fuzz", "fuzz--1", ""):
        assert bool(GROUP.fullmatch(text)) == bool(re.search(group_pattern, text)), text
        assert bool(CASE_ID.fullmatch(text)) == bool(re.search(id_pattern, text)), text
    (case,) = document["cases"]
    assert case["id"] == f"{document['group']}-001" and GROUP.fullmatch(document["group"])
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(CASE_SCHEMA).validate(document)


def test_only_the_fixtures_the_commands_reach_are_laid_out() -> None:
    def paths(*command_paths: Any) -> List[str]:
        return [fixture["path"] for fixture in used_fixtures([{"command": "view", "path": p} for p in command_paths])]

    assert paths("/memories/hard") == ["hard"]
    assert paths("/memories/link_inside") == ["notes.md", "link_inside"]  # and the file it points at
    assert paths("/memories/docs/a.txt") == ["docs", "docs/a.txt"]
    assert paths("/memories/docs") == ["docs", "docs/a.txt", "docs/link_up"]  # a folder: everything below it
    assert paths("/memories/new/file.md") == []
    assert paths("/memories") == [fixture["path"] for fixture in HOSTILE_FIXTURES]
    assert paths("/memories/./x/..") == paths("/memories")
    assert paths("/memories/%6cink_out/secret.txt") == ["link_out"]  # percent-encoded names are names too
    assert paths("/memories/LINK_EVIL") == ["link_evil"]
    assert paths(["/memories/pipe"]) == ["pipe"]  # a malformed path parameter is still read
    case = to_case(_finding([{"command": "create", "path": "/memories/new.md", "file_text": "x"}]))
    assert case["requires"] == "portable" and "setup" not in case


def test_ids_decisions_and_descriptions(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    hostile = _finding([{"command": "view", "path": "/memories/notes.md"}],
                       target="cmd:evil\x1b]0;owned\x07\n\u2028" + "x" * 500)
    case = to_case(hostile, "fuzz-017")
    assert case["id"] == "fuzz-017"
    description = case["description"]
    assert description.isprintable() and len(description) <= 200 and "\\x1b" in description
    with pytest.raises(ValueError, match="GROUP-NNN"):
        to_case_file(hostile, "Fuzz 17")
    with pytest.raises(ValueError, match="GROUP-NNN"):
        to_case_file(hostile, "fuzz-x")
    diverge = to_case(_finding([{"command": "view", "path": "/memories/notes.md", "view_range": [3, 1]}],
                               oracle="diverge:view:error-vs-ok"))
    assert diverge["basis"] == "reference" and diverge["level"] == "should" and diverge["decision"] == "D-VIEW-RANGE"
    with pytest.raises(ValueError, match="spec-notes ID"):
        to_case(hostile, None, "view range")
    sent = tmp_path / "sent.json"
    sent.write_text(finding_files.dumps(hostile), encoding="utf-8")
    assert main(["to-case", str(sent), "--id", "not an id"]) == 2
    assert "GROUP-NNN" in capsys.readouterr().err
    out = tmp_path / "case.json"
    assert main(["to-case", str(sent), "--out", str(out)]) == 0
    assert main(["to-case", str(sent), "--out", str(out)]) == 2  # never replaced without --force
    assert main(["to-case", str(sent), "--out", str(out), "--force"]) == 0
    capsys.readouterr()
    assert main(["to-case", str(sent)]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(out.read_text(encoding="utf-8"))
