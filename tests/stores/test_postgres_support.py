"""The throwaway cluster's fixture says exactly why it cannot start, and fails instead of skipping where CI requires
PostgreSQL (REFMEM_REQUIRE_POSTGRES=1)."""

from __future__ import annotations

from pathlib import Path

import postgres_support
import pytest


def test_missing_binaries_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres_support, "BIN", tmp_path)
    assert postgres_support.missing() == (
        f"PostgreSQL 15's initdb and pg_ctl are not in {tmp_path} (apt-get install postgresql-15)"
    )


def test_unavailable_skips_or_fails_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(postgres_support.REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL server for this test: because"):
        postgres_support._unavailable("because")
    monkeypatch.setenv(postgres_support.REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="REFMEM_REQUIRE_POSTGRES=1"):
        postgres_support._unavailable("because")
