"""A `python:` target (or the embedded reference) served over the adapter protocol, one process per session.

    python -m refmem_conformance.session_adapter SPEC [--error-prefix TEXT]...

The deployment tier (conformance/deployment.py) opens a target as several sessions over one store, and
sessions are processes, not threads: a lock that only works inside one interpreter must not pass for one
that works between processes. So a `python:` target is run in a process of its own per session, reached
through the same adapter protocol (PROTOCOL.md) as a `cmd:` target, and cut off the same way: a call that
overruns the step timeout kills the process, whatever it was doing.

The start reply says what the target declares: its storage, `share` when the handlers that several
processes build on one root share it (a target that stores in the root always does; one with its own
storage says so with `shared = True`), and `tenants` when its factory takes `tenant=`. Calls run on the
process's main thread, with no timeout of their own: the runner holds the timeout.

One call may instead be run the way the SDK's tool runner runs it: an execute with `abandon_after` (seconds,
a field only this server reads) runs on a worker thread, and when it has not finished by then the reply is
`abandoned: true` while the thread goes on; a later `late` request (`wait`: seconds, bounded) waits for it and
answers `finished` with its output. A call that finished in time answers `seconds`, how long it ran on its
thread (where the runner should stop waiting next time, without the protocol's round trip). The deployment
tier's abandoned-threads check (deployment.py) uses this.
"""

from __future__ import annotations

import argparse
import base64
import pathlib
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Dict, List, Optional

from refmem import protocol as P
from refmem_harness import hosttree
from refmem_harness.target_base import StepResult
from refmem_harness.targets import TENANT, Target, TargetError, open_target

ABANDON_AFTER = "abandon_after"
"""An execute field of this server alone: run the call on a worker thread and stop waiting after so many seconds."""
ABANDONED = "abandoned"
CMD_LATE = "late"
"""Wait (at most `wait` seconds, at most LATE_WAIT_MAX) for the call left running; reply `finished` and its output."""
WAIT = "wait"
SECONDS = "seconds"
FINISHED = "finished"
LATE_WAIT_MAX = 120.0


class _Late:
    """A call left running on its worker thread after the runner stopped waiting for it."""

    def __init__(self, target: Target, request: Dict[str, Any]) -> None:
        self.result: Optional[StepResult] = None
        self.seconds = 0.0
        self.thread = threading.Thread(target=self._run, args=(target, request), name="abandoned-call", daemon=True)
        self.thread.start()

    def _run(self, target: Target, request: Dict[str, Any]) -> None:
        started = time.monotonic()
        try:
            self.result = target.execute(request.get(P.INPUT), request.get(P.TOOL, P.TOOL_MEMORY))
        except Exception:  # noqa: BLE001 - a worker thread's exception would vanish; it is the call's answer
            self.result = StepResult("", True, raised=True, detail=traceback.format_exc()[-1000:])
        self.seconds = time.monotonic() - started

    def wait(self, seconds: float) -> bool:
        self.thread.join(seconds)
        return not self.thread.is_alive()


def _seconds(value: Any, most: float) -> Optional[float]:
    """A request's positive number of seconds, at most `most`, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    return min(float(value), most)


def _result_reply(result: StepResult) -> Dict[str, Any]:
    reply: Dict[str, Any] = {P.OUTPUT: result.output, P.IS_ERROR: result.is_error}
    if result.misbehaved:
        reply[P.RAISED] = result.detail or "the implementation misbehaved"
    return reply


class _Server:
    """What the process remembers between lines: the spec, and the target of the last reset."""

    def __init__(self, spec: str, error_prefix: List[str]) -> None:
        self.spec = spec
        self.error_prefix = error_prefix or None
        self.target: Optional[Target] = None
        self.late: Optional[_Late] = None
        self.root: Optional[pathlib.Path] = None

    def open(self, root: pathlib.Path) -> Target:
        return open_target(self.spec, root, None, error_prefix=self.error_prefix)

    def start(self, request: Dict[str, Any]) -> Dict[str, Any]:
        scratch = pathlib.Path(tempfile.mkdtemp(prefix="refmem-session-"))
        try:
            (scratch / "memories").mkdir()
            target = self.open(scratch / "memories")  # what it declares, before any root is known
            try:
                shared = bool(getattr(target, "shared", False))
                reply: Dict[str, Any] = {
                    P.READY: True,
                    P.VERSION_FIELD: P.VERSION,
                    P.IMPLEMENTATION: dict(target.implementation),
                    P.STORAGE: target.storage,
                    P.OPTIONS: sorted(name for name in target.options if name in P.OPTION_NAMES),
                    P.TENANTS: bool(getattr(target, "tenants", False)),
                    P.READS: True,
                }
            finally:
                target.close()
        finally:
            hosttree.remove(str(scratch))
        if request.get(P.SHARE) is True:
            reply[P.SHARE] = shared
            if not shared:
                reply[P.SHARE_REASON] = (
                    "the target keeps its own storage and does not declare `shared = True`: handlers built on one "
                    "root in several processes would each see their own store"
                )
        return reply

    def reset(self, request: Dict[str, Any]) -> Dict[str, Any]:
        if self.target is not None:
            self.target.close()
            self.target = None
        root = pathlib.Path(str(request.get(P.ROOT)))
        options = dict(request.get(P.OPTIONS) or {})
        if request.get(P.TENANT) is not None:
            options[TENANT] = request[P.TENANT]
        target = self.open(root)
        if options:
            target.reset(root, options)
        self.target = target
        self.root = root
        return {P.OK: True}

    def read(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """A file's bytes (the protocol's optional `read`): the target's own `read_bytes(path)` when it has one,
        else, for a target that stores in the root, the file in the root, read bounded and never through a
        link."""
        path = request.get(P.PATH)
        if self.target is None or self.root is None:
            return P.error_reply(P.NO_ROOT, "send reset before read")
        if not isinstance(path, str) or not (path + "/").startswith("/memories/"):
            return P.error_reply(P.BAD_REQUEST, "read needs a path below /memories")
        own = getattr(getattr(self.target, "_handler", None), "read_bytes", None)
        if callable(own):
            data = own(path)
        elif self.target.storage == P.STORAGE_FILESYSTEM:
            data = hosttree.read_bytes(str(self.root), path[len("/memories/") :])
        else:
            data = None
        if not isinstance(data, bytes):
            return {P.FOUND: False}
        return {P.FOUND: True, P.CONTENT_BASE64: base64.b64encode(data).decode("ascii")}

    def execute(self, request: Dict[str, Any]) -> Dict[str, Any]:
        if self.target is None:
            return P.error_reply(P.NO_ROOT, "send reset before execute")
        abandon_after = _seconds(request.get(ABANDON_AFTER), LATE_WAIT_MAX)
        if abandon_after is None:
            return _result_reply(self.target.execute(request.get(P.INPUT), request.get(P.TOOL, P.TOOL_MEMORY)))
        if self.late is not None and not self.late.wait(0):
            return P.error_reply(P.BAD_REQUEST, "a call left running has not finished (send late first)")
        late = _Late(self.target, request)
        if late.wait(abandon_after) and late.result is not None:
            return dict(_result_reply(late.result), **{ABANDONED: False, SECONDS: late.seconds})
        self.late = late  # the runner stops waiting, as the SDK's tool runner does; the thread goes on
        return {P.OUTPUT: "", P.IS_ERROR: True, ABANDONED: True}

    def finish_late(self, request: Dict[str, Any]) -> Dict[str, Any]:
        late = self.late
        if late is None:
            return {FINISHED: True, P.OUTPUT: "", P.IS_ERROR: False, ABANDONED: False}
        if not late.wait(_seconds(request.get(WAIT), LATE_WAIT_MAX) or LATE_WAIT_MAX) or late.result is None:
            return {FINISHED: False, P.OUTPUT: "", P.IS_ERROR: True}
        self.late = None
        return dict(_result_reply(late.result), **{FINISHED: True})

    def answer(self, request: Any) -> Optional[Dict[str, Any]]:
        if not isinstance(request, dict):
            return P.error_reply(P.BAD_REQUEST, "a request must be a JSON object")
        name, seq = request.get(P.CMD), request.get(P.SEQ)
        if name == P.CMD_STOP:
            return None
        try:
            if name == P.CMD_START:
                return self.start(request)
            handlers = {
                P.CMD_RESET: self.reset, P.CMD_EXECUTE: self.execute, CMD_LATE: self.finish_late, P.CMD_READ: self.read
            }
            reply = handlers[str(name)](request)
        except KeyError:
            return P.error_reply(P.UNKNOWN_CMD, "unknown cmd", seq if P.valid_seq(seq) else None)
        except TargetError as exc:
            return P.error_reply(P.RESET_FAILED, str(exc)[:1000], seq if P.valid_seq(seq) else None)
        except Exception:  # noqa: BLE001 - this process serves the runner; nothing may end it but stop
            return P.error_reply(P.INTERNAL, traceback.format_exc()[-1000:], seq if P.valid_seq(seq) else None)
        return dict({P.SEQ: seq}, **reply) if P.valid_seq(seq) else reply


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="session_adapter", description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("--error-prefix", action="append", default=[])
    args = parser.parse_args(argv)
    server = _Server(args.spec, args.error_prefix)
    replies = sys.stdout
    sys.stdout = sys.stderr  # what the target prints goes to standard error, never into the protocol
    for line in sys.stdin.buffer:
        try:
            request = P.decode_line(line.rstrip(b"\n"))
        except P.LineError as exc:
            request = exc
        if request is P.BLANK:
            continue
        reply = P.error_reply(P.BAD_JSON, "not JSON") if isinstance(request, P.LineError) else server.answer(request)
        if reply is None:
            break
        replies.write(P.encode_message(reply) + "\n")
        replies.flush()
    if server.target is not None:
        server.target.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
