"""Case `options`: targets that cannot honour an option skip the case; those that can are configured per case."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, List

import pytest
from conformance_support import adapter, case, exchange, run_cli, valid, view, write_cases

from refmem_harness.targets import open_target, option_converters

READ_ONLY = "Error: The memory directory is read-only; create is not allowed."

CASES = [
    case(
        "o-001",
        [
            {
                "input": {"command": "create", "path": "/memories/a.txt", "file_text": "x"},
                "is_error": True,
                "output": READ_ONLY,
            }
        ],
        options={"read_only": True},
        final={"files": {}, "exact": True},
    ),
    case("o-002", [view("/memories/missing", True)], options={"limits": {"max_view_chars": 40}}),
    case("o-003", [view("/memories/missing", True)]),
]


def _report(directory: pathlib.Path, target: str) -> Dict[str, Dict[str, Any]]:
    path = directory / "report.json"
    status, out, err = run_cli(
        "--cases-dir", str(directory), "--no-matrix", "--report-json", str(path), "--target", target
    )
    assert status == 0, out + err
    return {entry["id"]: entry for entry in json.loads(path.read_text())["cases"]}


def _statuses(report: Dict[str, Dict[str, Any]]) -> Dict[str, str]:
    return {
        case_id: entry["status"] + (f": {entry['reason']}" if entry.get("reason") else "")
        for case_id, entry in report.items()
    }


def test_a_python_target_that_accepts_no_options_skips_the_cases_using_them(tmp_path: pathlib.Path) -> None:
    report = _report(write_cases(tmp_path, CASES), "python:fake_backends:tiny")
    assert _statuses(report) == {
        "o-001": "skip: option read_only not supported",
        "o-002": "skip: option limits not supported",
        "o-003": "pass",
    }


def test_a_python_target_gets_the_options_its_signature_names(tmp_path: pathlib.Path) -> None:
    report = _report(write_cases(tmp_path, CASES), "python:fake_backends:read_only_tiny")
    assert _statuses(report) == {"o-001": "pass", "o-002": "skip: option limits not supported", "o-003": "pass"}


def test_an_adapter_that_lists_no_options_never_receives_them(tmp_path: pathlib.Path) -> None:
    # The fake adapter answers a reset carrying an unlisted option with an error, which would stop the run.
    report = _report(write_cases(tmp_path, CASES), adapter())
    assert _statuses(report) == {
        "o-001": "skip: option read_only not supported",
        "o-002": "skip: option limits not supported",
        "o-003": "pass",
    }


def test_an_adapter_that_lists_an_option_is_configured_with_it(tmp_path: pathlib.Path) -> None:
    report = _report(write_cases(tmp_path, CASES), adapter("readonly"))
    assert _statuses(report) == {"o-001": "pass", "o-002": "skip: option limits not supported", "o-003": "pass"}


def test_the_reference_target_supports_every_option(tmp_path: pathlib.Path) -> None:
    with open_target("refmem", tmp_path) as target:
        assert target.options == {"read_only", "allow", "limits", "content_policy"}
    assert _statuses(_report(write_cases(tmp_path / "c", CASES), "refmem")) == {
        "o-001": "pass",
        "o-002": "pass",
        "o-003": "pass",
    }


def test_option_converters_follow_the_signature() -> None:
    def bare(root: Any) -> None: ...

    def some(root: Any, *, allow: Any = None, limits: Any = None, other: int = 0) -> None: ...

    assert option_converters(bare) == {}
    converters = option_converters(some)
    assert set(converters) == {"allow", "limits"}
    # Options reach a python target as the case states them: plain data, never the reference's classes.
    assert converters["limits"]({"max_view_chars": 40}) == {"max_view_chars": 40}


# --- the reference server ------------------------------------------------------------------------



def test_serve_lists_and_honours_every_option(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "memories"
    root.mkdir()
    (root / "a.txt").write_text("0123456789\n")
    card = "4111 1111 1111 1111"
    requests: List[Dict[str, Any]] = [
        {"cmd": "start", "version": 1},
        {"cmd": "reset", "seq": 1, "root": str(root), "options": {"read_only": True}},
        {"cmd": "execute", "seq": 2, "input": {"command": "create", "path": "/memories/b.md", "file_text": "x"}},
        {"cmd": "reset", "seq": 3, "root": str(root), "options": {"allow": ["*.md"], "limits": {"max_echo_chars": 3}}},
        {"cmd": "execute", "seq": 4, "input": {"command": "view", "path": "/memories/a.txt"}},
        {"cmd": "reset", "seq": 5, "root": str(root), "options": {"limits": {"max_view_chars": 10}}},
        {"cmd": "execute", "seq": 6, "input": {"command": "view", "path": "/memories/a.txt"}},
        {"cmd": "reset", "seq": 7, "root": str(root), "options": {"content_policy": "redact"}},
        {"cmd": "execute", "seq": 8, "input": {"command": "create", "path": "/memories/c.md", "file_text": card}},
        {"cmd": "reset", "seq": 9, "root": str(root)},
        {"cmd": "execute", "seq": 10, "input": {"command": "create", "path": "/memories/d.md", "file_text": card}},
        {"cmd": "stop"},
    ]
    for request in requests[1:-1]:
        valid(request, f"{request['cmd']}-request")
    replies = exchange(requests)
    valid(replies[0], "start-reply")
    assert replies[0]["options"] == ["read_only", "allow", "limits", "content_policy"]
    assert replies[2]["output"] == READ_ONLY and not (root / "b.md").exists()
    assert replies[4]["output"] == "Error: The path /memories/a.txt is not one of the allowed memory paths."
    assert "[Line 1 is 10 characters long and was cut at 3.]" in replies[6]["output"]
    assert (root / "c.md").read_text() == "[REDACTED:card_number]"
    assert (root / "d.md").read_text() == card  # a reset without options is the default handler


@pytest.mark.parametrize(
    "options",
    [
        "read_only",
        {"fly": True},
        {"read_only": "yes"},
        {"allow": "*.md"},
        {"limits": {"max_view_chars": 0}},
        {"limits": {"no_such_limit": 3}},
        {"limits": 5},
        {"content_policy": "shout"},
    ],
)
def test_serve_refuses_options_it_cannot_build(tmp_path: pathlib.Path, options: Any) -> None:
    replies = exchange(
        [{"cmd": "start", "version": 1}, {"cmd": "reset", "seq": 1, "root": str(tmp_path), "options": options}]
    )
    valid(replies[1], "error-reply")
    assert replies[1]["seq"] == 1 and replies[1]["error"]["code"] == "bad-request"
