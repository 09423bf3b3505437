"""The finding files committed under fuzz/findings/ still replay as recorded."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from refmem_fuzz import finding as finding_files
from refmem_fuzz.replay import replay

FINDINGS = pathlib.Path(__file__).resolve().parent.parent.parent / "fuzz" / "findings"
FILES = sorted(FINDINGS.rglob("*.json")) if FINDINGS.is_dir() else []
RECORDED_WITH = {"anthropic-python-sdk": "2.12.0"}
"""The SDK version each folder's findings were recorded with. They are replayed against whatever is installed;
one that no longer reproduces on another version is an expected failure that says so (fixed upstream?), on the
recorded version a failure."""


def _installed_anthropic() -> str:
    if importlib.util.find_spec("anthropic") is None:
        return ""
    import anthropic

    return str(anthropic.__version__)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FINDINGS)) for p in FILES])
def test_committed_finding_replays(path: pathlib.Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "/dev/shm" not in text and "/tmp/" not in text and "CANARY-" not in text
    recorded = RECORDED_WITH.get(path.relative_to(FINDINGS).parts[0])
    installed = _installed_anthropic()
    if recorded is not None and not installed:
        pytest.skip("the anthropic package is not installed: this finding's target cannot be reached")
    found = finding_files.load(path)
    result = replay(found)
    if found.oracle not in {v.oracle for v in result.violations} and recorded not in (None, installed):
        pytest.xfail(f"no longer reproduces with anthropic {installed} (recorded with {recorded}): fixed upstream?")
    assert found.oracle in {v.oracle for v in result.violations}
