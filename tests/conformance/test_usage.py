"""The harness's one meter (conformance/usage.py) reads a target through its public properties."""

from __future__ import annotations

import pathlib

from refmem_harness import usage
from refmem_harness.target_base import CallTime
from refmem_harness.targets import open_target


def test_an_in_process_target_times_each_call_on_a_new_clock(tmp_path: pathlib.Path) -> None:
    target = open_target("refmem", tmp_path, 5.0)
    try:
        assert target.pid is None and target.last_call is None
        target.execute({"command": "view", "path": "/memories"})
        first = target.last_call
        assert first is not None and first.seconds is not None and first.seconds >= 0
        target.execute({"command": "view", "path": "/memories"})
        assert target.last_call is not first
    finally:
        target.close()


def test_a_call_that_does_not_reach_the_target_is_not_given_the_last_calls_time(tmp_path: pathlib.Path) -> None:
    target = open_target("refmem", tmp_path, None)
    try:
        stale = CallTime()
        stale.seconds = 1000.0
        target.last_call = stale
        _, seconds, clock = usage.timed(target, lambda: None)
        assert clock == usage.CPU and seconds < 1000.0
        _, seconds, _ = usage.timed(target, lambda: target.execute({"command": "view", "path": "/memories"}))
        assert seconds < 1000.0 and target.last_call is not stale
    finally:
        target.close()


def test_the_process_readers_read_this_process() -> None:
    import os

    me = os.getpid()
    if not os.path.exists(f"/proc/{me}/status"):
        return
    cpu = usage.process_cpu(me)
    assert cpu is not None and cpu > 0
    resident = usage.status_bytes(me, "VmRSS")
    assert resident is not None and resident > 0
    assert usage.status_bytes(me, "NoSuchField") is None
    result, grown, _reset = usage.rss_peak(lambda: [me], lambda: bytearray(64 * 1024 * 1024))
    assert len(result) == 64 * 1024 * 1024 and grown is not None
