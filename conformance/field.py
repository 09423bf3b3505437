"""`refmem-conformance field`: the suite run on every implementation of the field, one command.

    refmem-conformance field --workdir /dev/shm                  # install each, run each, write its history file
    refmem-conformance field --only anthropic-python-2.14.0      # one of them
    refmem-conformance field --list                              # what the field is
    refmem-conformance field --pages-only                        # remake matrix.html (with the trends) from history

The field is data: one JSON file per implementation and version in conformance/field/ (FIELD_DIR; its fields are
`Implementation`'s). Each is installed into an environment of its own under the cache folder (`--cache`):

- `pypi`: a virtual environment without the system's site-packages, `pip install` of the pinned packages. The
  adapter runs in that environment's interpreter as a `cmd:` target
  (`python -P -m refmem_conformance.session_adapter python:MODULE:CALLABLE`), and reaches the harness through
  PYTHONPATH set on that command alone, to a folder holding only links to refmem, refmem_harness and
  refmem_conformance (all standard library at run time): nothing of ours is installed into their environment,
  nothing of theirs into ours, and no other folder of this checkout is on their path (`-P`: not the working
  folder either).
- `npm`: `npm install --prefix` of the pinned packages into a folder, with the adapter `.mjs` copied beside its
  node_modules (an ES module resolves packages from its own folder, not from NODE_PATH).
- `builtin`: refmem on one of its stores; nothing to install.

Each is then run as the command line runs a suite (`refmem-conformance --target ... --report-json`), one at a
time, and the report is cut down to a history entry (`history_entry`: the figures, the deployment tier's counts
and each case's state; schema/history.schema.json) written to conformance/reports/history/ID/DATE.json. What
could not be installed (offline, a version gone) is said, and the rest go on; the exit status is 1 when any
implementation could not be installed or run. The matrix page, with each implementation's versions over time, is
built from the newest history entry of each (`report_from_history`), never from a run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TextIO, Tuple

HERE = pathlib.Path(__file__).resolve().parent
FIELD_DIR = HERE / "field"
HISTORY_DIR = HERE / "reports" / "history"
HISTORY_SCHEMA = HERE / "schema" / "history.schema.json"
MATRIX_PAGE = HERE / "reports" / "matrix.html"
HISTORY_FORMAT = "refmem-field-history/1"
ECOSYSTEMS = ("pypi", "npm", "builtin")
HARNESS_PACKAGES = ("refmem", "refmem_harness", "refmem_conformance")
"""What the adapter process in an implementation's environment imports of ours (linked, never installed)."""
INSTALL_SECONDS = 900
RUN_SECONDS = 1800


class FieldError(Exception):
    """A field file that cannot be read, or an implementation that cannot be installed or run."""


@dataclasses.dataclass(frozen=True)
class Implementation:
    """One implementation at one version: a file of conformance/field/."""

    id: str
    """Stable, with the version: `anthropic-python-2.14.0`. The history folder's name."""
    family: str
    """The implementation across versions (`anthropic-python`): a trend page is one family."""
    name: str
    version: str
    language: str
    ecosystem: str
    packages: Tuple[str, ...]
    """Pinned requirements (`anthropic==2.14.0`, `@anthropic-ai/sdk@1.14.0`); none for `builtin`."""
    target: str
    """The `--target`, with `{python}` (the environment's interpreter), `{prefix}` (the npm folder) and
    `{harness}` (the folder of links to the harness) filled in at run time."""
    adapter: str
    """The adapter's file in this repository (relative to conformance/adapters/), or empty for a builtin."""
    thin: bool
    """True when the adapter only calls the implementation's own entry point and reads its result."""
    sources: Tuple[str, ...]
    notes: str = ""
    needs: str = ""
    """`postgres`: a throwaway cluster is started for the run (tests/postgres_support.py)."""


FIELDS = {
    "id": str, "family": str, "name": str, "version": str, "language": str, "ecosystem": str, "packages": list,
    "target": str, "adapter": str, "thin": bool, "sources": list, "notes": str, "needs": str,
}
REQUIRED = ("id", "family", "name", "version", "language", "ecosystem", "packages", "target", "thin", "sources")


def parse_implementation(data: Any, where: str) -> Implementation:
    """One field file's object, checked: every required field, each of its type, nothing unknown."""
    if not isinstance(data, dict):
        raise FieldError(f"{where}: not a JSON object")
    unknown = sorted(set(data) - set(FIELDS) - {"$comment"})
    missing = [key for key in REQUIRED if key not in data]
    if unknown or missing:
        raise FieldError(f"{where}: unknown fields {unknown}, missing fields {missing}")
    for key, kind in FIELDS.items():
        if key in data and not isinstance(data[key], kind):
            raise FieldError(f"{where}: {key} must be a {kind.__name__}")
    if data["ecosystem"] not in ECOSYSTEMS:
        raise FieldError(f"{where}: ecosystem must be one of {', '.join(ECOSYSTEMS)}")
    if data["ecosystem"] != "builtin" and not data["packages"]:
        raise FieldError(f"{where}: a {data['ecosystem']} implementation names its pinned packages")
    if not all(isinstance(item, str) and item for item in data["packages"] + data["sources"]):
        raise FieldError(f"{where}: packages and sources are lists of strings")
    ident = data["id"]
    if not ident or not all(ch.isalnum() or ch in ".-+_" for ch in ident):
        raise FieldError(f"{where}: id {ident!r} must be letters, digits and . - + _ only")
    return Implementation(
        id=ident, family=data["family"], name=data["name"], version=data["version"], language=data["language"],
        ecosystem=data["ecosystem"], packages=tuple(data["packages"]), target=data["target"],
        adapter=data.get("adapter", ""), thin=data["thin"], sources=tuple(data["sources"]),
        notes=data.get("notes", ""), needs=data.get("needs", ""),
    )


def load_field(folder: pathlib.Path = FIELD_DIR) -> List[Implementation]:
    """Every implementation of the field, by id; a file named other than its id is refused."""
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise FieldError(f"{path.name}: {exc}") from None
        implementation = parse_implementation(data, path.name)
        if path.stem != implementation.id:
            raise FieldError(f"{path.name}: its id is {implementation.id!r}; the file is named after its id")
        found.append(implementation)
    return found


# ---------------------------------------------------------------------------------------------------
# Installing


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


@dataclasses.dataclass(frozen=True)
class Installed:
    """Where an implementation was installed, and the target spec that reaches it."""

    folder: Optional[pathlib.Path]
    target: str


def _stamp(implementation: Implementation) -> str:
    """What an environment was made from: a changed pin (or adapter) makes it again."""
    text = json.dumps([implementation.ecosystem, list(implementation.packages), implementation.adapter])
    return hashlib.sha256(text.encode()).hexdigest()


def _run(runner: Runner, argv: List[str], what: str, **kwargs: Any) -> None:
    try:
        done = runner(argv, capture_output=True, text=True, timeout=INSTALL_SECONDS, **kwargs)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FieldError(f"{what}: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-3:]
        raise FieldError(f"{what} failed (exit {done.returncode}): {' | '.join(tail)[:600]}")


def harness_links(cache: pathlib.Path, repo: pathlib.Path) -> pathlib.Path:
    """A folder holding only links to our three packages: the PYTHONPATH of an adapter in another environment."""
    folder = cache / "_harness"
    folder.mkdir(parents=True, exist_ok=True)
    for name in HARNESS_PACKAGES:
        link = folder / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(repo / name, target_is_directory=True)
    return folder


def install(
    implementation: Implementation,
    cache: pathlib.Path,
    repo: pathlib.Path,
    runner: Runner = subprocess.run,
    python: str = sys.executable,
    index: Sequence[str] = (),
) -> Installed:
    """Install `implementation` under `cache` (once per pin: a stamp file says what a folder holds) and say how its
    suite is reached. `index` goes to pip as is (`--no-index --find-links DIR` for a local wheel)."""
    fill = {"harness": str(harness_links(cache, repo)), "repo": str(repo)}
    if implementation.ecosystem == "builtin":  # refmem itself, run by this interpreter (`{python}`)
        return Installed(None, implementation.target.format(python=python, **fill))
    folder = cache / implementation.id
    stamp = folder / ".refmem-field-stamp"
    fresh = stamp.exists() and stamp.read_text(encoding="utf-8") == _stamp(implementation)
    if implementation.ecosystem == "pypi":
        venv_python = folder / "bin" / "python"
        if not fresh:
            shutil.rmtree(folder, ignore_errors=True)
            # no pip of its own (ensurepip is most of a venv's making): this interpreter's pip installs into it
            made = [python, "-m", "venv", "--without-pip", str(folder)]
            _run(runner, made, f"{implementation.id}: making its environment")
            pip = [python, "-m", "pip", "--python", str(venv_python), "install", "--disable-pip-version-check", "-q",
                   *index]
            _run(runner, pip + list(implementation.packages), f"{implementation.id}: pip install")
        fill["python"] = str(venv_python)
    else:
        if not fresh:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            (folder / "package.json").write_text(
                json.dumps({"name": "refmem-field-" + implementation.id.lower(), "private": True, "type": "module"}),
                encoding="utf-8",
            )
            npm = ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--save-exact"]
            _run(runner, npm + list(implementation.packages), f"{implementation.id}: npm install")
        if implementation.adapter:
            adapter = HERE / "adapters" / implementation.adapter
            shutil.copyfile(adapter, folder / adapter.name)
        fill["prefix"] = str(folder)
    stamp.write_text(_stamp(implementation), encoding="utf-8")
    return Installed(folder, implementation.target.format(**fill))


# ---------------------------------------------------------------------------------------------------
# History entries


def _case_entry(case: Mapping[str, Any]) -> Any:
    """A case's outcome when its state is the same word and it has no finding (`"pass"`, `"skip"`), else
    [outcome, state, classes]. A case's group is its id without the number (`view-range-003`: `view-range`)."""
    outcome = str(case.get("outcome", case.get("status", "")))
    state = str(case.get("state", outcome))
    classes = sorted(str(cls) for cls in case.get("classes") or [])
    return outcome if state == outcome and not classes else [outcome, state, classes]


def _deployment(report: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    found = report.get("deployment")
    if not isinstance(found, dict):
        return None
    figures = found.get("figures") or {}
    lost = figures.get("lost-updates") or {}
    readers = figures.get("readers-during-writers") or {}
    return {
        "commands": lost.get("commands"),
        "lost": lost.get("lost"),
        "per_thousand": lost.get("per_thousand"),
        "by_command": lost.get("by_command") or {},
        "read_back": lost.get("read_back") or {},
        "views": readers.get("views"),
        "torn": readers.get("torn"),
        "findings": len(found.get("findings") or []),
        "classes": sorted({str(item.get("class", "")) for item in found.get("findings") or []
                           if isinstance(item, dict)}),
    }


def history_entry(
    implementation: Implementation, report: Mapping[str, Any], date: str, seconds: float, target: str
) -> Dict[str, Any]:
    """The history file of one run: who, when, which suite, the verdict, the figures, the deployment tier's counts
    and each case's state. About a tenth of the JSON report; nothing of the findings' text (the report has it)."""
    cases = [case for case in report.get("cases") or [] if isinstance(case, dict)]
    return {
        "format": HISTORY_FORMAT,
        "id": implementation.id,
        "family": implementation.family,
        "name": implementation.name,
        "version": implementation.version,
        "language": implementation.language,
        "ecosystem": implementation.ecosystem,
        "packages": list(implementation.packages),
        "thin": implementation.thin,
        "sources": list(implementation.sources),
        "date": date,
        "target": target,
        "storage": str(report.get("storage", "")),
        "seconds": round(seconds, 1),
        "suite": dict(report.get("versions") or {}),
        "profile": str(report.get("profile", "")),
        "verdict": dict(report.get("verdict") or {}),
        "figures": dict(report.get("figures") or {}),
        "states": dict(report.get("states") or {}),
        "deployment": _deployment(report),
        "cases": {str(case.get("id", "")): _case_entry(case) for case in cases},
    }


def check_history(entry: Any) -> List[str]:
    """What is wrong with a history entry against schema/history.schema.json (empty when it is valid)."""
    import importlib

    jsonschema = importlib.import_module("jsonschema")  # a test extra, as for `validate`
    schema = json.loads(HISTORY_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}" for error in
            sorted(validator.iter_errors(entry), key=lambda error: list(map(str, error.absolute_path)))]


def history_text(entry: Mapping[str, Any]) -> str:
    """The file's text: one field a line, one case a line (a new run's diff shows the cases that moved)."""
    lines = []
    for key, value in entry.items():
        if key == "cases":
            cases = [f"  {json.dumps(case_id)}: {json.dumps(state)}" for case_id, state in value.items()]
            lines.append('"cases": {\n' + ",\n".join(cases) + "\n}")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value, sort_keys=True)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_history(entry: Mapping[str, Any], folder: pathlib.Path = HISTORY_DIR) -> pathlib.Path:
    path = folder / str(entry["id"]) / f"{entry['date']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(history_text(entry), encoding="utf-8")
    return path


def read_history(folder: pathlib.Path = HISTORY_DIR) -> List[Dict[str, Any]]:
    """The newest entry of every implementation (by id), in id order."""
    newest = []
    for sub in sorted(path for path in folder.glob("*") if path.is_dir()):
        dated = sorted(sub.glob("*.json"))
        if dated:
            newest.append(json.loads(dated[-1].read_text(encoding="utf-8")))
    return newest


def report_from_history(entry: Mapping[str, Any], described: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """A history entry as the pages read a report: each case's description and features from this checkout's
    cases (`described`, by id), when it still has them."""
    cases = []
    for case_id, fields in (entry.get("cases") or {}).items():
        outcome, state, classes = (fields, fields, []) if isinstance(fields, str) else fields
        case: Dict[str, Any] = {"id": case_id, "outcome": outcome, "state": state, "classes": classes}
        if not case_id.startswith("sec-"):
            case["group"] = case_id.rsplit("-", 1)[0]
        case.update(described.get(case_id, {}))
        cases.append(case)
    thin = "thin wrapper" if entry.get("thin") else "adapter with logic"
    return {
        "implementation": {
            "name": f"{entry.get('name', '')} [{thin}]",
            "version": entry.get("version", ""),
            "language": entry.get("language", ""),
        },
        "versions": entry.get("suite", {}),
        "target": f"{entry.get('id', '')} ({entry.get('date', '')})",
        "storage": entry.get("storage", ""),
        "profile": entry.get("profile", ""),
        "figures": entry.get("figures", {}),
        "verdict": entry.get("verdict", {}),
        "cases": cases,
    }


def _version_key(version: str) -> Tuple[Any, ...]:
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in version.replace("-", ".").split("."))


def write_pages(entries: Sequence[Mapping[str, Any]], matrix: pathlib.Path, out: TextIO) -> List[pathlib.Path]:
    """matrix.html from the newest entry of each implementation, with, on the same page, each family run at two
    versions or more (oldest version first) and what changed from each version to the next."""
    from .cases import load_cases
    from .htmlpage import write
    from .matrixpage import matrix_page

    cases, _warnings = load_cases()
    described = {case.id: {"description": case.description, "features": list(case.features)} for case in cases}
    reports = [report_from_history(entry, described) for entry in entries]
    by_family: Dict[str, List[Tuple[Mapping[str, Any], Dict[str, Any]]]] = {}
    for entry, report in zip(entries, reports):
        by_family.setdefault(str(entry.get("family", "")), []).append((entry, report))
    trends = []
    for family, members in sorted(by_family.items()):
        if len(members) < 2:
            continue
        members.sort(key=lambda pair: _version_key(str(pair[0].get("version", ""))))
        trends.append((family, [report for _entry, report in members]))
    written = []
    if reports:
        dates = sorted({str(entry.get("date", "")) for entry in entries})
        title = f"Memory tool conformance: the field ({len(reports)} implementations, {dates[0]} to {dates[-1]})"
        write(matrix_page(reports, title, trends=trends), matrix)
        written.append(matrix)
    for path in written:
        out.write(f"field: wrote {path}\n")
    return written


# ---------------------------------------------------------------------------------------------------
# Running


def run_one(
    implementation: Implementation,
    target: str,
    workdir: Optional[str],
    deployment: bool,
    report_json: pathlib.Path,
    extra_env: Optional[Mapping[str, str]] = None,
) -> int:
    """Run the suite on `target` as the command line runs it, in a process of its own (its exit status is the
    verdict; a run that could not start at all is a FieldError)."""
    argv = [sys.executable, "-m", "refmem_conformance", "--target", target, "--report-json", str(report_json)]
    if workdir:
        argv += ["--workdir", workdir]
    if deployment:
        argv.append("--deployment")
    env = dict(os.environ, **(extra_env or {}))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_SECONDS, env=env)
    except subprocess.TimeoutExpired:
        raise FieldError(f"{implementation.id}: the run took over {RUN_SECONDS} s") from None
    if not report_json.exists():
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-3:]
        raise FieldError(f"{implementation.id}: the run wrote no report (exit {done.returncode}): {' | '.join(tail)}")
    return done.returncode


def _postgres_env() -> Tuple[Dict[str, str], Callable[[], None]]:
    """A throwaway PostgreSQL cluster for refmem+postgres (tests/postgres_support.py, the tests' own), the
    environment that names it to the target, and how to stop it."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    try:
        import postgres_support  # type: ignore[import-not-found]

        cluster = postgres_support.Cluster()
        cluster.start()
    except Exception as exc:  # noqa: BLE001 - a cluster that cannot start is said, and the field goes on
        raise FieldError(f"refmem+postgres: no PostgreSQL cluster could be started: {exc}") from None
    finally:
        sys.path.pop(0)
    return {"REFMEM_CONFORMANCE_POSTGRES": cluster.dsn()}, cluster.stop


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="refmem-conformance field", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="ID", help="run these implementations only")
    parser.add_argument("--list", action="store_true", help="list the field and exit")
    parser.add_argument("--field-dir", type=pathlib.Path, default=FIELD_DIR)
    parser.add_argument("--history", type=pathlib.Path, default=HISTORY_DIR, help="where history entries go")
    parser.add_argument(
        "--cache", type=pathlib.Path,
        default=pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "refmem-field",
        help="where the implementations' environments are kept",
    )
    parser.add_argument("--workdir", help="the runs' work folder (as for a run: /dev/shm is fastest)")
    parser.add_argument("--no-deployment", action="store_true", help="leave out the deployment tier")
    parser.add_argument("--date", default="", help="the history entries' date (default: today, UTC)")
    parser.add_argument("--matrix", type=pathlib.Path, default=MATRIX_PAGE, help="the matrix page to remake")
    parser.add_argument("--pages-only", action="store_true", help="remake the pages from history; run nothing")
    parser.add_argument("--keep-reports", type=pathlib.Path, help="keep each run's full JSON report in this folder")
    return parser


def main(argv: Sequence[str], out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    args = _parser().parse_args(list(argv))
    try:
        field = load_field(args.field_dir)
    except FieldError as exc:
        err.write(f"refmem-conformance field: {exc}\n")
        return 2
    if args.only:
        unknown = sorted(set(args.only) - {item.id for item in field})
        if unknown:
            err.write(f"refmem-conformance field: no implementation {', '.join(unknown)} (see --list)\n")
            return 2
        field = [item for item in field if item.id in args.only]
    if args.list:
        for item in field:
            kind = "thin wrapper" if item.thin else "adapter with logic"
            out.write(f"{item.id}\t{item.ecosystem}\t{' '.join(item.packages) or '-'}\t{kind}\t{item.name}\n")
        return 0
    if not args.pages_only:
        failed = _run_field(field, args, out, err)
    else:
        failed = 0
    write_pages(read_history(args.history), args.matrix, out)
    return 1 if failed else 0


def _run_field(field: Sequence[Implementation], args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    repo = HERE.parent
    failed = 0
    began = time.monotonic()
    for item in field:
        start = time.monotonic()
        stop: Optional[Callable[[], None]] = None
        try:
            installed = install(item, args.cache, repo)
            env: Dict[str, str] = {}
            if item.needs == "postgres":
                env, stop = _postgres_env()
            with tempfile.TemporaryDirectory(prefix="refmem-field-") as tmp:
                report_path = pathlib.Path(tmp) / f"{item.id}.json"
                status = run_one(item, installed.target, args.workdir, not args.no_deployment, report_path, env)
                report = json.loads(report_path.read_text(encoding="utf-8"))
                if args.keep_reports:
                    args.keep_reports.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(report_path, args.keep_reports / report_path.name)
        except FieldError as exc:
            failed += 1
            err.write(f"field: {item.id}: not run: {exc}\n")
            continue
        finally:
            if stop is not None:
                stop()
        seconds = time.monotonic() - start
        entry = history_entry(item, report, date, seconds, item.target)
        path = write_history(entry, args.history)
        figures = entry["figures"]
        deployment = entry["deployment"] or {}
        out.write(
            f"field: {item.id}: exit {status}, safe {figures.get('safe')}, documented {figures.get('documented')}, "
            f"lost {deployment.get('lost')}, torn {deployment.get('torn')}, {seconds:.0f} s -> {path}\n"
        )
    out.write(f"field: {len(field) - failed} of {len(field)} run in {time.monotonic() - began:.0f} s\n")
    return failed
