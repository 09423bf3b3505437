"""The editions a report and `--version` name.

`SUITE_VERSION` names the edition of the cases and runner (`suite-N`: a new edition whenever a verdict can
change); `PROTOCOL_VERSION` the adapter protocol (conformance/PROTOCOL.md); `CASE_FORMAT_VERSION` the case
files (conformance/CASE-FORMAT.md). They move independently; conformance/VERSIONING.md says what each change
means for someone who pinned the suite.
"""

from __future__ import annotations

from refmem import protocol as _protocol

SUITE_VERSION = "suite-5"
PROTOCOL_VERSION = _protocol.VERSION
CASE_FORMAT_VERSION = 2
