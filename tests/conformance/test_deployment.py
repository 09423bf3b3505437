"""The deployment tier: the reference passes every check; each planted backend is flagged by its check alone, run
after run; a target that cannot share, or has no tenants, is skipped with its reason; the protocol's `share` and
`tenant` reach the reference server.

The planted backends are `deployment_backends.py` (the reference with one mistake each). Sessions are processes,
so each run starts a few Python processes per check: the planted runs are marked slow.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import sys
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import pytest
from conformance_support import scratch_folder

from refmem import protocol
from refmem.serve import Session, handle_line
from refmem_conformance import deployment, effects, readback

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the planted backends lock with fcntl (POSIX only)")

SMALL = deployment.Plan(rounds=16, reader_rounds=8, views_per_round=2, cut_trials=3)
"""Enough to catch every planted mistake, cheaper than the tier's own plan."""


@pytest.fixture
def workdir(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    with scratch_folder(tmp_path, "deployment-test-") as directory:
        yield directory


def _flagged(report: deployment.DeploymentReport) -> Set[Tuple[str, str]]:
    return {(finding["class"], finding["check"]) for finding in report.findings}


REFERENCE_REPORTS = {
    "refmem": "REFMEM_REFERENCE_REPORT",
    "refmem+sqlite": "REFMEM_REFERENCE_REPORT_SQLITE",
    "refmem+postgres": "REFMEM_REFERENCE_REPORT_POSTGRES",
}
"""The environment variable naming the JSON report of CI's conformance run of each reference store, which runs
the deployment tier with its own plan (.ci/run): the tests below judge that run instead of making the same one a
second time. Without it (a developer's run) they run the tier here."""


def _reference_tier(reference: str, workdir: pathlib.Path) -> Dict[str, Any]:
    """The deployment tier's report (findings, notes, figures) of `reference` under the tier's own plan."""
    given = os.environ.get(REFERENCE_REPORTS[reference])
    if given:
        report = json.loads(pathlib.Path(given).read_text())
        assert report["target"] == reference and report["deployment"] is not None, given
        return report["deployment"]  # type: ignore[no-any-return]
    return deployment.deployment_report(reference, workdir).as_dict()


@pytest.mark.parametrize("reference", ["refmem", "refmem+sqlite"])
def test_the_reference_passes_every_check(workdir: pathlib.Path, reference: str) -> None:
    """On every store it has: the directory tree (a file lock) and the SQLite database (a transaction)."""
    report = _reference_tier(reference, workdir)
    lines = deployment.summary_lines(report)
    assert report["findings"] == [], lines
    assert report["notes"] == [], lines
    figures = report["figures"]
    assert sorted(figures) == sorted(deployment.CHECKS)
    lost = figures["lost-updates"]
    plan = deployment.DEFAULT
    assert lost["commands"] == plan.sessions * plan.rounds and lost["per_thousand"] == 0.0, lost
    assert lost["succeeded"] >= plan.rounds * plan.sessions // 2, lost  # every edit, and a create and rename a round
    assert figures["readers-during-writers"]["views"] == plan.reader_rounds * 3 * plan.views_per_round
    assert figures["tenants"]["commands"] > 1000
    assert figures["abandoned-calls"]["whole"] == plan.cut_trials
    late = figures["abandoned-threads"]
    assert late["trials"] == late["late_applied"] == plan.late_trials and late["newer_lost"] == 0, late
    assert not list(workdir.iterdir())  # every check's folder removed (also test_the_planted_backends_wrapper_...)


def test_the_reference_passes_every_check_over_postgres(
    workdir: pathlib.Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sessions on one root share its case tenant in one PostgreSQL database (the session processes inherit the
    DSN): each writer's row locks, not a file lock, keep every update."""
    if not os.environ.get(REFERENCE_REPORTS["refmem+postgres"]):
        monkeypatch.setenv("REFMEM_CONFORMANCE_POSTGRES", request.getfixturevalue("postgres").dsn())
    report = _reference_tier("refmem+postgres", workdir)
    lines = deployment.summary_lines(report)
    assert report["findings"] == [] and report["notes"] == [], lines
    assert report["figures"]["lost-updates"]["per_thousand"] == 0.0, lines
    assert report["figures"]["tenants"]["commands"] > 1000, lines


PLANTED = [
    ("make_unlocked", "lost-updates"),
    ("make_tenant_mixup", "tenants"),
    ("make_half_apply", "abandoned-calls"),
    ("make_lease_lock", "abandoned-threads"),
]

SAME_MISTAKE = {"make_unlocked": {("safety", "abandoned-threads")}}
"""A check that may also see a backend's one mistake: an unlocked read-modify-write loses the newer edit to a
late finish too, when the machine's timing puts the late write after the newer one (a late call it cannot see
is counted, not flagged, so mostly it is not)."""


@pytest.mark.slow
@pytest.mark.parametrize("factory, check", PLANTED)
def test_each_planted_backend_is_flagged_by_its_check_alone_run_after_run(
    factory: str, check: str, workdir: pathlib.Path
) -> None:
    for _run in range(2):
        report = deployment.deployment_report(f"python:deployment_backends:{factory}", workdir, plan=SMALL)
        lines = deployment.summary_lines(report.as_dict())
        flagged = _flagged(report)
        assert ("safety", check) in flagged and flagged - SAME_MISTAKE.get(factory, set()) == {("safety", check)}, lines
        assert report.notes == [], lines


@pytest.mark.slow
def test_the_unlocked_backend_loses_a_countable_share_of_its_edits(workdir: pathlib.Path) -> None:
    report = deployment.deployment_report("python:deployment_backends:make_unlocked", workdir,
                                          checks=["lost-updates"], plan=SMALL)
    figures = report.figures["lost-updates"]
    assert figures["lost"] > 0 and figures["duplicated"] == 0, figures
    assert deployment.lost_per_thousand(report) == round(figures["lost"] * 1000 / figures["commands"], 1)
    assert "per thousand commands" in report.findings[0]["detail"]


def test_the_planted_backends_wrapper_alone_passes(workdir: pathlib.Path) -> None:
    """The harness around the planted backends (the same factory shape, no mistake) is clean: each finding
    above is the mistake's."""
    report = deployment.deployment_report("python:deployment_backends:make_reference", workdir, plan=SMALL)
    assert report.findings == [], deployment.summary_lines(report.as_dict())
    assert not list(workdir.iterdir())  # every check's folder removed, whoever the target


def test_a_target_that_cannot_share_is_skipped_with_its_reason(workdir: pathlib.Path) -> None:
    report = deployment.deployment_report("python:deployment_backends:make_private", workdir, plan=SMALL)
    assert report.findings == [] and report.figures == {}
    assert len(report.notes) == len(deployment.CHECKS), report.notes
    assert "cannot share its storage" in report.notes[0] and "shared = True" in report.notes[0]


def test_a_target_without_tenants_skips_the_tenants_check_and_says_why(workdir: pathlib.Path) -> None:
    report = deployment.deployment_report("python:deployment_backends:make_without_tenants", workdir,
                                          checks=["tenants", "lost-updates"], plan=SMALL)
    assert report.findings == []
    assert report.notes == ["tenants: skipped, the target declares no tenants (a `tenant` keyword, or `tenants` "
                            "in the start reply)"]
    assert "lost-updates" in report.figures


def test_cmd_sessions_of_the_reference_server_share_one_root(workdir: pathlib.Path) -> None:
    spec = f"cmd:{sys.executable} -m refmem serve"
    report = deployment.deployment_report(spec, workdir, checks=["lost-updates", "tenants"], plan=SMALL)
    assert report.findings == [] and report.notes == [], deployment.summary_lines(report.as_dict())
    assert report.figures["lost-updates"]["commands"] == SMALL.sessions * SMALL.rounds


@pytest.mark.slow
def test_a_late_finish_that_overwrites_a_newer_edit_is_counted_in_every_trial(workdir: pathlib.Path) -> None:
    """The lease-locked backend's large edit, left running on its thread, outlives its lease; the newer edit of
    another session goes ahead and the late finish writes the text read before it: every trial, by token."""
    report = deployment.deployment_report("python:deployment_backends:make_lease_lock", workdir,
                                          checks=["abandoned-threads"])
    late = report.figures["abandoned-threads"]
    assert late["abandoned"] == late["finished_late"] == late["trials"] == deployment.DEFAULT.late_trials, late
    assert late["newer_lost"] == late["trials"] and late["half_applied"] == 0, late
    assert "overwrote a newer edit of another session" in report.findings[0]["detail"]


def test_a_cmd_target_skips_the_abandoned_threads_check_and_says_why(workdir: pathlib.Path) -> None:
    spec = f"cmd:{sys.executable} -m refmem serve"
    report = deployment.deployment_report(spec, workdir, checks=["abandoned-threads"], plan=SMALL)
    assert report.findings == [] and report.figures == {}
    assert len(report.notes) == 1 and report.notes[0].startswith("abandoned-threads: skipped, a `cmd:` adapter")


def test_the_session_server_leaves_a_slow_call_running_and_reports_its_late_finish(tmp_path: pathlib.Path) -> None:
    import deployment_backends

    from refmem_conformance import session_adapter

    server = session_adapter._Server("python:deployment_backends:make_lease_lock", [])
    assert server.answer({"cmd": "reset", "seq": 1, "root": str(tmp_path)}) == {"seq": 1, "ok": True}
    (tmp_path / "a.txt").write_text("ANCHOR\n")
    big = "x" * (deployment_backends.WRITE_RATE // 4)  # a write of about a quarter of a second
    edit = {"command": "str_replace", "path": "/memories/a.txt", "old_str": "ANCHOR", "new_str": big}
    left = server.answer({"cmd": "execute", "seq": 2, "input": edit, "abandon_after": 0.01})
    assert left == {"seq": 2, "output": "", "is_error": True, "abandoned": True}
    assert (tmp_path / "a.txt").read_text() == "ANCHOR\n"  # still on its way
    done = server.answer({"cmd": "late", "seq": 3, "wait": 30})
    assert done is not None and done["finished"] is True and done["is_error"] is False, done
    assert (tmp_path / "a.txt").read_text() == big + "\n"
    quick = server.answer({"cmd": "execute", "seq": 4, "input": {"command": "view", "path": "/memories"},
                           "abandon_after": 30})
    assert quick is not None and quick["abandoned"] is False and quick["is_error"] is False, quick
    assert isinstance(quick["seconds"], float)  # how long it ran on its thread: where the next cut goes


def test_an_unknown_check_is_refused(workdir: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="unknown deployment check"):
        deployment.deployment_report("refmem", workdir, checks=["nope"])


# --- the protocol's share and tenant, on the reference server ------------------------------------


def _line(**message: object) -> bytes:
    return json.dumps(message).encode()


def test_the_server_answers_share_and_serves_a_tenant(tmp_path: pathlib.Path) -> None:
    session = Session()
    start = handle_line(session, _line(cmd="start", version=1, share=True))
    assert start is not None and start[protocol.SHARE] is True and start[protocol.TENANTS] is True
    plain = handle_line(Session(), _line(cmd="start", version=1))
    assert plain is not None and protocol.SHARE not in plain  # asked for only by a runner that opens sessions
    assert handle_line(session, _line(cmd="reset", seq=1, root=str(tmp_path), tenant="alpha")) == {"seq": 1, "ok": True}
    created = handle_line(session, _line(cmd="execute", seq=2, input={"command": "create", "path": "/memories/a.txt",
                                                                      "file_text": "alpha\n"}))
    assert created is not None and created["is_error"] is False
    assert (tmp_path / ".refmem" / "tenants" / "alpha" / "a.txt").read_text() == "alpha\n"
    assert not (tmp_path / "a.txt").exists()


@pytest.mark.parametrize("tenant", ["Alpha", "../beta", "", 7])
def test_the_server_refuses_a_tenant_name_it_does_not_accept(tenant: object, tmp_path: pathlib.Path) -> None:
    session = Session()
    handle_line(session, _line(cmd="start", version=1))
    reply = handle_line(session, _line(cmd="reset", seq=1, root=str(tmp_path), tenant=tenant))
    assert reply is not None and reply["error"]["code"] == protocol.BAD_REQUEST, reply
    assert not (tmp_path / ".refmem" / "tenants").exists() or not any((tmp_path / ".refmem" / "tenants").iterdir())


# --- through the command line and the reports ----------------------------------------------------------


def test_the_command_line_runs_the_tier_into_the_reports(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    from conformance_support import run_cli

    report, markdown = tmp_path / "report.json", tmp_path / "report.md"
    status, out, err = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", "refmem", "--deployment",
                               "--report-json", str(report), "--markdown", str(markdown))
    assert status == 0, out + err
    assert "deployment: 0 findings; 0 lost or duplicated updates per thousand commands" in out
    written = json.loads(report.read_text())
    assert written["figures"]["deployment_ran"] is True and written["figures"]["lost_per_thousand"] == 0
    assert sorted(written["deployment"]["figures"]) == sorted(deployment.CHECKS)
    assert "## Deployment tier" in markdown.read_text()
    pytest.importorskip("jsonschema")
    from test_conformance_schemas import _errors

    assert _errors("report", written) == []


@pytest.mark.slow
def test_a_lost_update_fails_the_run_as_unsafe(basic_cases: pathlib.Path) -> None:
    from conformance_support import run_cli

    status, out, _ = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target",
                             "python:deployment_backends:make_unlocked", "--deployment")
    assert status == 1, out
    assert "(1 of them in the deployment tier)" in out and "deployment [safety] lost-updates" in out


# --- reading views back ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "Here's the content of /memories/a.txt with line numbers:\n     1\tx\n     2\tANCHOR",
        "Here's the content of /memories/a.txt with line numbers:\n     1\tx\n     2\tANCHOR\n     3\t",  # the SDK's
    ],
)
def test_a_view_reads_back_as_its_lines_in_either_reading_of_a_final_newline(output: str) -> None:
    assert deployment.file_lines(output) == ["x", "ANCHOR"]


def test_a_listing_reads_back_as_its_paths_and_not_its_header() -> None:
    output = ("Here're the files and directories up to 2 levels deep in /memories/big, excluding hidden items:\n"
              "4.0K\t/memories/big\n80K\t/memories/big/big.txt")
    assert readback.listed_paths(output) == ["/memories/big", "/memories/big/big.txt"]


NODE_ADAPTER = pathlib.Path(__file__).resolve().parents[2] / "conformance" / "adapters" / "node"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None or not (NODE_ADAPTER / "node_modules" / "@anthropic-ai").is_dir(),
                    reason="the Node adapter needs node and `npm ci --prefix conformance/adapters/node`")
def test_the_node_adapter_shares_its_root_between_sessions(workdir: pathlib.Path) -> None:
    spec = f"cmd:node {NODE_ADAPTER / 'adapter.mjs'}"
    report = deployment.deployment_report(spec, workdir, checks=["lost-updates", "readers-during-writers"], plan=SMALL)
    assert report.notes == [], report.notes  # it answers share: the checks run (what it loses is a figure)
    assert report.figures["readers-during-writers"]["rewritten"] == SMALL.reader_rounds


def test_the_deployment_figure_says_when_the_tier_did_not_run() -> None:
    from refmem_conformance.figures import ROWS

    row = next(row for row in ROWS if row.key == "deployment_safety")
    assert not row.shown({"safe": True}) and row.text({"safe": True}) == "not run (--deployment)"
    ran = {"deployment_ran": True, "deployment_safety": 1, "lost_per_thousand": 312.5,
           "deployment_skipped": ["tenants: skipped, the target declares no tenants"]}
    assert row.text(ran) == ("1 findings; 312.5 lost or duplicated updates per thousand commands; 1 skipped "
                             "(tenants: skipped, the target declares no tenants)")
    assert row.shown(ran) and not row.ok(ran)


# --- reading files back: state, not formatting (readback.py, D-DEPLOY-READBACK) --------------------------------


def test_a_correct_backend_whose_views_are_drawn_another_way_gets_no_finding(workdir: pathlib.Path) -> None:
    """The reference, its views numbered `  1 | ` under a header of its own and listings drawn as `- PATH (SIZE)`:
    read through our own view format alone it showed 121 lost updates and 216 of 216 torn reads."""
    report = deployment.deployment_report("python:deployment_backends:make_odd_views", workdir, plan=SMALL)
    lines = deployment.summary_lines(report.as_dict())
    assert report.findings == [] and report.notes == [], lines
    assert report.figures["lost-updates"]["read_back"] == {readback.TOLERANT: 2 + SMALL.rounds // 2}, lines
    assert report.figures["readers-during-writers"]["torn"] == 0, lines
    assert report.figures["abandoned-calls"]["whole"] == SMALL.cut_trials, lines


def test_a_correct_backend_whose_views_hide_the_text_is_judged_by_its_bytes(workdir: pathlib.Path) -> None:
    """Each line of a file view is shown as a JSON string: no view reading recovers the file, its bytes do (the
    protocol's optional read), and a view that holds a version's text in order is no torn read."""
    report = deployment.deployment_report("python:deployment_backends:make_quoted_views", workdir, plan=SMALL,
                                          checks=["lost-updates", "readers-during-writers"])
    lines = deployment.summary_lines(report.as_dict())
    assert report.findings == [], lines
    assert report.figures["lost-updates"]["read_back"] == {readback.ADAPTER_BYTES: 2 + SMALL.rounds // 2}, lines
    assert report.figures["readers-during-writers"]["torn"] == 0, lines


def test_a_correct_backend_that_adds_a_newline_to_every_create_gets_no_finding(workdir: pathlib.Path) -> None:
    """Every created file ends with one more newline than it was given (langchain-anthropic 1.7.10's filesystem
    does this), and views are numbered another way: nothing is lost, so nothing is charged."""
    report = deployment.deployment_report("python:deployment_backends:make_newline_odd_views", workdir, plan=SMALL,
                                          checks=["lost-updates", "readers-during-writers"])
    lines = deployment.summary_lines(report.as_dict())
    assert report.findings == [] and report.notes == [], lines
    figures = report.figures["lost-updates"]
    assert (figures["lost"], figures["duplicated"], figures["not_whole"]) == (0, 0, []), lines
    assert report.figures["readers-during-writers"]["torn"] == 0, lines


def test_a_create_that_overwrites_loses_one_text_per_contested_file_not_two(workdir: pathlib.Path) -> None:
    """Two sessions create each contested file at once and both are told it was made; the file holds one of the
    texts plus the newline the backend adds to every create: one create is lost, the survivor is not. The bytes
    decide, less the final empty line a plain create read back the same way shows, and the finding says so."""
    report = deployment.deployment_report("python:deployment_backends:make_newline_overwrites", workdir, plan=SMALL,
                                          checks=["lost-updates"])
    figures = report.figures["lost-updates"]
    contested = SMALL.rounds // 2  # a round in two has two sessions creating one path (_round_commands)
    assert (figures["lost"], figures["by_command"], figures["not_whole"]) == (contested, {"create": contested}, []), \
        figures
    [evidence] = [kind for kind in figures["read_back"] if readback.LESS_ADDED in kind]
    assert readback.evidence_kind(evidence) in readback.BYTES and "1 final empty line" in evidence, figures
    assert figures["read_back"][evidence] == contested, figures
    [finding] = report.findings
    assert f"evidence: {evidence}" in finding["detail"], finding


@pytest.mark.parametrize(
    ("lines", "added"),
    [
        (["plain"], readback.Added()),
        (["plain", ""], readback.Added(1)),
        (["plain\r", "\r"], readback.Added(1, True)),
        (["plain", "x"], None),
        (["other", ""], None),
        ([], None),
    ],
)
def test_what_a_backend_adds_to_a_plain_create_is_only_final_empty_lines_and_carriage_returns(
    lines: List[str], added: Optional[readback.Added]
) -> None:
    assert readback.added_formatting(lines, ["plain"]) == added


def test_only_the_formatting_a_plain_create_shows_is_taken_off_and_it_hides_no_loss() -> None:
    added = readback.Added(1)
    bytes_ = readback.DISK_BYTES
    taken = readback.without_added(readback.Reading(["tokA", ""], bytes_), added)
    assert taken.lines == ["tokA"] and readback.evidence_kind(taken.evidence) == bytes_ and taken.evidence != bytes_
    for kept in (["tokA"], ["tokA", "tokB"], ["tokA", "", "tokB"], [""]):
        assert readback.without_added(readback.Reading(kept, bytes_), added).lines == kept
    both = readback.without_added(readback.Reading(["tokA", "", "tokB", ""], bytes_), added)
    assert both.lines == ["tokA", "", "tokB"]  # two texts stay two: still no create's text alone
    lines = ["tokA", "tokB"]
    assert deployment._create_tally(lines, "/memories/c.txt", [("tokA", True), ("tokB", True)]).lost == 0
    tally = deployment._create_tally(["tokB"], "/memories/c.txt", [("tokA", True), ("tokB", True)])
    assert (tally.lost, tally.not_whole) == (1, [])
    tally = deployment._create_tally(["tokB", ""], "/memories/c.txt", [("tokA", True), ("tokB", True)])
    assert (tally.lost, len(tally.not_whole)) == (1, 1)  # no formatting forgiven: not whole, the survivor kept


@pytest.mark.slow
def test_a_backend_that_loses_updates_is_caught_however_its_views_are_drawn(workdir: pathlib.Path) -> None:
    report = deployment.deployment_report("python:deployment_backends:make_odd_views_unlocked", workdir,
                                          checks=["lost-updates"], plan=SMALL)
    figures = report.figures["lost-updates"]
    assert figures["lost"] > 0, figures
    finding = report.findings[0]
    assert (finding["class"], finding["effect"]) == ("safety", effects.FILE_LOST), finding
    assert finding["evidence"] in (readback.TOLERANT, readback.ADAPTER_BYTES), finding
    assert f"evidence: {finding['evidence']}" in finding["detail"]


@pytest.mark.parametrize(
    "output",
    [
        "Here's the content of /memories/a.txt with line numbers:\n     1\tx\n     2\tANCHOR",
        "== /memories/a.txt ==\n  1 | x\n  2 | ANCHOR\n",
        "1: x\n2: ANCHOR",
        "/memories/a.txt:\n   7\u2192x\n   8\u2192ANCHOR\n   9\u2192",
        "x\nANCHOR\n",
        "Contents of /memories/a.txt\nx\nANCHOR",
    ],
)
def test_a_view_drawn_any_common_way_has_a_reading_that_is_the_file(output: str) -> None:
    assert ["x", "ANCHOR"] in [reading.lines for reading in readback.view_readings(output, "/memories/a.txt")]


def test_a_line_that_starts_with_a_dash_keeps_it_after_a_tab() -> None:
    output = "Here's the result of running `cat -n` on /memories/a.txt:\n     1\t- x\n     2\t-> y\n     3\t\n"
    assert ["- x", "-> y"] in [reading.lines for reading in readback.view_readings(output, "/memories/a.txt")]
    assert ["x", "y"] in [reading.lines for reading in readback.view_readings("1 - x\n2 - y")]


def test_the_documented_reading_is_strict_and_numbers_must_count_up_by_one() -> None:
    assert readback.documented_lines("  1 | x") is None
    assert readback.documented_lines("     1\tx\n     3\ty") is None
    assert readback.documented_lines("1\tx") is None  # not %6d
    assert readback.tolerant_readings("  1 | x\n  3 | y")[0] == ["  1 | x", "  3 | y"]  # no numbering: text kept


def test_bytes_decide_and_a_view_reading_without_problems_is_taken_first() -> None:
    views = [readback.Reading(["a"], readback.DOCUMENTED), readback.Reading(["x"], readback.TOLERANT)]
    disk = readback.Reading(["b"], readback.DISK_BYTES)

    def problems(lines: List[str]) -> int:
        return int(lines != ["x"])

    assert readback.judged(views + [disk], problems) == (views[1], 0)
    assert readback.judged([views[0], disk], problems) == (disk, 1)
    assert readback.judged([views[0]], problems) == (views[0], 1)
    assert readback.judged([], problems) is None


def test_the_session_server_reads_a_file_s_bytes_never_through_a_link(tmp_path: pathlib.Path) -> None:
    from refmem_conformance import session_adapter

    root = tmp_path / "memories"
    root.mkdir()
    (root / "a.txt").write_bytes(b"one\r\ntwo")
    (tmp_path / "outside.txt").write_text("outside")
    (root / "link.txt").symlink_to(tmp_path / "outside.txt")
    server = session_adapter._Server("refmem", [])
    assert server.answer({"cmd": "start", "version": 1})[protocol.READS] is True
    server.answer({"cmd": "reset", "seq": 1, "root": str(root)})
    reply = server.answer({"cmd": "read", "seq": 2, "path": "/memories/a.txt"})
    assert reply == {"seq": 2, "found": True, "base64": base64.b64encode(b"one\r\ntwo").decode()}
    assert server.answer({"cmd": "read", "seq": 3, "path": "/memories/link.txt"}) == {"seq": 3, "found": False}
    assert server.answer({"cmd": "read", "seq": 4, "path": "/memories/../outside.txt"}) == {"seq": 4, "found": False}
    assert "error" in server.answer({"cmd": "read", "seq": 5, "path": "/etc/passwd"})
