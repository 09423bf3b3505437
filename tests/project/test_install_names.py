"""The installed names: a user project with its own `conformance` and `fuzz` packages keeps them, and still uses
the pytest plugin and both command-line tools.

The suite and the fuzzer are installed as `refmem_conformance` and `refmem_fuzz` (pyproject.toml: a wheel
renames the folders; an editable install reaches them through the top-level shims). Two installs are tried: the
one this test session runs in (editable, as the README installs it) and a wheel built from this checkout into a
fresh virtual environment.
"""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import subprocess
import sys
import venv
from typing import Dict, List

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = ("refmem-conformance", "refmem-fuzz")


def _installed() -> bool:
    try:
        importlib.metadata.distribution("refmem")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _installed(), reason="refmem is not installed (pip install -e '.[test]')")


def _user_project(where: pathlib.Path) -> pathlib.Path:
    """A project of the kind that clashed: its own `conformance` and `fuzz` packages and a test using them."""
    project = where / "user-project"
    for package in ("conformance", "fuzz"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(f'OWNER = "user {package}"\n')
    (project / "test_own.py").write_text(
        "import conformance, fuzz\n\n\n"
        "def test_own_packages():\n"
        '    assert (conformance.OWNER, fuzz.OWNER) == ("user conformance", "user fuzz")\n'
    )
    return project


def _env() -> Dict[str, str]:
    """No PYTHONPATH: the project finds what is installed, as a user's would."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    return env


def _run(command: List[str], cwd: pathlib.Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)


def _tools_work(python: pathlib.Path, project: pathlib.Path) -> None:
    """Both CLIs, from inside the user project, on the reference; the project's own packages stay its own."""
    bin_dir = python.parent
    own = _run([str(python), "-c", "import conformance, fuzz; print(conformance.OWNER, '|', fuzz.OWNER)"], project)
    assert own.stdout.strip() == "user conformance | user fuzz", own.stderr
    suite = _run([str(bin_dir / "refmem-conformance"), "--target", "refmem", "--run", "view-*"], project)
    assert suite.returncode == 0, suite.stdout[-2000:] + suite.stderr[-2000:]
    assert "cases" in suite.stdout
    module = _run([str(python), "-m", "refmem_conformance", "--version"], project)
    assert module.returncode == 0 and module.stdout.startswith("refmem-conformance "), module.stderr
    seeds = "from refmem_harness import tokens; print(len(tokens.payload_seeds()[0]))"
    payloads = _run([str(python), "-c", seeds], project)
    assert payloads.returncode == 0 and int(payloads.stdout) > 0, payloads.stderr  # the suite's payloads were found
    findings = project / "findings"
    fuzz = _run(
        [str(bin_dir / "refmem-fuzz"), "run", "--target", "reference", "--engine", "random", "--runs", "30",
         "--no-growth", "--findings", str(findings), "--quiet"],
        project,
    )
    assert fuzz.returncode == 0, fuzz.stdout[-2000:] + fuzz.stderr[-2000:]


@pytest.mark.slow
def test_an_editable_install_leaves_the_users_packages_alone(tmp_path: pathlib.Path) -> None:
    project = _user_project(tmp_path)
    python = pathlib.Path(sys.executable)
    for script in SCRIPTS:
        assert (python.parent / script).exists(), f"{script} is not installed next to {python}"
    _tools_work(python, project)
    # One pytest session runs the project's own test and the plugin's cases side by side (-rA names each one
    # passed): both were collected in the same session, which a separate --collect-only run used to show.
    ran = _run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "--memory-target", "refmem",
         "--memory-run", "view-file-*"],
        project,
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "PASSED test_own.py::test_own_packages" in ran.stdout, ran.stdout[-2000:]
    assert "PASSED memory-conformance::view-file-001" in ran.stdout, ran.stdout[-2000:]
    assert " passed" in ran.stdout and "failed" not in ran.stdout


@pytest.mark.slow
def test_a_wheel_installs_under_the_refmem_names(tmp_path: pathlib.Path) -> None:
    wheels = tmp_path / "wheels"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(REPO)], tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("refmem-*.whl")
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    installed = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)], tmp_path)
    assert installed.returncode == 0, installed.stderr[-2000:]
    top_level = _run(
        [str(python), "-c", "import importlib.metadata as m; "
         "print(sorted({f.parts[0] for f in m.distribution('refmem').files if f.suffix == '.py'}))"],
        tmp_path,
    )
    names = "['refmem', 'refmem_conformance', 'refmem_fuzz', 'refmem_harness', 'refmem_mcp']"
    assert top_level.stdout.strip() == names, top_level.stderr
    no_extra = _run([str(python), "-m", "refmem", "mcp", "--root", str(tmp_path)], tmp_path)  # no SDK installed here
    assert no_extra.returncode == 2 and "pip install 'refmem[mcp]'" in no_extra.stderr, no_extra.stderr[-2000:]
    assert "Traceback" not in no_extra.stderr
    plugin = _run(
        [str(python), "-c", "import importlib.metadata as m; "
         "print([e.value for e in m.entry_points(group='pytest11') if e.dist.name == 'refmem'])"],
        tmp_path,
    )
    assert plugin.stdout.strip() == "['refmem_conformance.pytest_plugin']", plugin.stderr
    _tools_work(python, _user_project(tmp_path))
