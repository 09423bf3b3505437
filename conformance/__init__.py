"""The memory tool conformance suite: cases as data, a runner, and the adapter protocol.

It stands on the harness (`harness/`: targets, the case directory, the host tree, visible output), which it
imports and which never imports it. Its editions are in versions.py.
"""

from __future__ import annotations

from .versions import CASE_FORMAT_VERSION, PROTOCOL_VERSION, SUITE_VERSION

__all__ = ["CASE_FORMAT_VERSION", "PROTOCOL_VERSION", "SUITE_VERSION"]
