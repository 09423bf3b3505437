"""What a backend or its user hands the harness never leaks or swells: a password in the target is redacted in every
output, the tree reader bounds the whole tree (and says what it left unread), and a backend's name is no link in
the Markdown report."""

from __future__ import annotations

import json
import os
import pathlib
import sys

import pytest
from conformance_support import run_cli
from harness_input_backends import LINK_NAME, SPARSE_BYTES, SPARSE_FILES
from refmem_conformance.reports import markdown_text

from refmem_harness import hosttree
from refmem_harness.visible import redact_secrets

PASSWORD = "Pw0rd-s3cret"


def test_a_password_in_the_target_is_in_no_output(tmp_path: pathlib.Path) -> None:
    dsn = f"postgresql://refmem:{PASSWORD}@db.example:5432/memories"
    target = f"cmd:env REFMEM_DSN={dsn} PGPASSWORD={PASSWORD} {sys.executable} -m refmem serve"
    out = {name: tmp_path / name for name in ("r.json", "r.md", "r.html", "r.xml")}
    status, stdout, stderr = run_cli("--target", target, "--run", "root-00[1-3]", "--report-json", str(out["r.json"]),
                                     "--markdown", str(out["r.md"]), "--html", str(out["r.html"]),
                                     "--junit", str(out["r.xml"]))
    assert status == 0, stdout
    for text in [stdout, stderr] + [path.read_text() for path in out.values()]:
        assert PASSWORD not in text
    report = json.loads(out["r.json"].read_text())
    assert report["target"].startswith("cmd:env REFMEM_DSN=postgresql://refmem:***@db.example:5432/memories "
                                       "PGPASSWORD=*** ")


def test_an_adapter_that_cannot_start_does_not_print_the_password() -> None:
    status, stdout, stderr = run_cli("--target", f"cmd:/nonexistent/adapter postgresql://u:{PASSWORD}@h/db",
                                     "--run", "root-001")
    assert status == 2 and PASSWORD not in stdout + stderr and "u:***@h/db" in stderr


@pytest.mark.parametrize(
    "text, shown",
    [
        ("postgresql://u:p%40ss@host/db", "postgresql://u:***@host/db"),
        ("host=db user=u password='a b' dbname=m", "host=db user=u password=*** dbname=m"),
        ("PGPASSWORD=x1 refmem serve", "PGPASSWORD=*** refmem serve"),
        ("https://github.com/a/b/pull/1 and /memories/a:b@c", "https://github.com/a/b/pull/1 and /memories/a:b@c"),
    ],
)
def test_the_redaction_takes_out_passwords_and_nothing_else(text: str, shown: str) -> None:
    assert redact_secrets(text) == shown


def test_a_property_finding_file_and_its_report_hold_no_password(tmp_path: pathlib.Path) -> None:
    here = pathlib.Path(__file__).resolve().parent
    path = os.pathsep.join([str(here), str(here.parents[1])])
    target = (f"cmd:env PGPASSWORD={PASSWORD} PYTHONPATH={path} {sys.executable} -m "
              "refmem_conformance.session_adapter python:buggy_backends:make_host_path_in_errors")
    status, stdout, stderr = run_cli("--properties", "5", "--target", target, "--findings", str(tmp_path))
    files = list(tmp_path.glob("*.json"))
    assert status == 1 and files, stdout + stderr
    assert PASSWORD not in stdout + stderr and "PGPASSWORD=***" in stdout
    for file in files:
        text = file.read_text()
        assert PASSWORD not in text and "PGPASSWORD=***" in json.loads(text)["target"]


def test_the_tree_reader_keeps_a_bounded_total_and_counts_what_it_left(tmp_path: pathlib.Path) -> None:
    for number in range(SPARSE_FILES):
        with open(tmp_path / f"f{number:04d}", "wb") as out:
            out.truncate(SPARSE_BYTES)
    read = hosttree.read(str(tmp_path))
    kept = sum(len(node.data) for node in read.tree.values() if node.data is not None)
    assert kept <= hosttree.KEEP_TOTAL < SPARSE_FILES * SPARSE_BYTES
    assert read.unread == SPARSE_FILES - hosttree.KEEP_TOTAL // SPARSE_BYTES and read.budget_note()
    assert all(node.digest is not None for node in read.tree.values())  # still compared by their bytes' digest


def test_a_root_left_full_of_large_files_is_reported_never_a_silent_safe(tmp_path: pathlib.Path) -> None:
    report_path = tmp_path / "r.json"
    status, stdout, _ = run_cli("--target", "python:harness_input_backends:swelling", "--run", "root-001",
                                "--report-json", str(report_path))
    report = json.loads(report_path.read_text())
    messages = [finding["message"] for case in report["cases"] for finding in case.get("findings", [])]
    assert any("were not read whole" in message for message in messages), messages
    assert status == 1 and not report["figures"]["safe"], stdout


def test_a_backend_named_as_a_link_gets_no_link_in_the_markdown_report(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "r.md"
    run_cli("--target", "python:harness_input_backends:link_named", "--run", "root-00[1-3]", "--markdown", str(path))
    text = path.read_text()
    assert LINK_NAME not in text and "](https://" not in text and "<b>" not in text
    assert markdown_text(LINK_NAME) in text
    markdown_it = pytest.importorskip("markdown_it")
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    assert "ci-fix.example" in page and 'href="https://ci-fix.example' not in page


@pytest.mark.parametrize("text", ["[x](https://e.example)", "![i](https://e.example/i.png)", "<a href=x>y</a>",
                                  "**b** _i_ `c`", "a|b", "https://e.example www.e.example u@e.example", "&lt;"])
def test_every_markdown_opening_in_a_supplied_string_is_escaped(text: str) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    page = markdown_it.MarkdownIt("commonmark").enable("table").render("| a |\n|---|\n| " + markdown_text(text) + " |")
    cell = page.split("<td>")[1].split("</td>")[0]
    assert "<a" not in cell and "<img" not in cell and "<strong>" not in cell and "<em>" not in cell
    assert "<code>" not in cell and os.linesep not in cell
