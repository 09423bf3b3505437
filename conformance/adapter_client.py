"""The runner's side of the adapter protocol (conformance/PROTOCOL.md): one child process, JSON lines.

The adapter only executes; every comparison happens in the runner. A child that dies, hangs, or writes
something that is not a well-formed reply is killed; the step that saw it is reported as crashed or
timed out, and the next `reset` starts a new child.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import queue
import shlex
import signal
import subprocess
import threading
from typing import IO, Any, Deque, Dict, List, Optional

from refmem import protocol as P  # the protocol's vocabulary, defined once and shared with `refmem serve`

from .target_base import Options, StepResult, Target, TargetError

START_TIMEOUT = P.START_TIMEOUT_SECONDS
"""Seconds an adapter may take to answer `start` (an interpreter or a JIT may be slow to load)."""

STOP_GRACE = P.STOP_GRACE_SECONDS
"""Seconds an adapter has to exit after `stop` before it is killed."""

STDERR_KEPT = 200
"""Lines of the adapter's standard error kept for crash reports."""

_EOF = object()


class ProtocolViolation(Exception):
    """The adapter wrote something that is not a reply the protocol allows here."""


class _Child:
    """A started adapter process, its reply queue and the tail of its standard error."""

    def __init__(self, argv: List[str]) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=(os.name == "posix"),
        )
        self.replies: queue.Queue[Any] = queue.Queue()
        self.stderr: Deque[str] = collections.deque(maxlen=STDERR_KEPT)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()

    def _pump_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(line)
        self.replies.put(_EOF)

    def _pump_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    def send(self, message: Dict[str, Any]) -> None:
        stdin: Optional[IO[bytes]] = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message).encode("ascii") + b"\n")  # ASCII: lone surrogates survive as escapes
        stdin.flush()

    def receive(self, timeout: float) -> Dict[str, Any]:
        """The next reply; raises queue.Empty on timeout, EOFError on a closed stdout."""
        line = self.replies.get(timeout=timeout)
        if line is _EOF:
            raise EOFError
        try:
            reply = json.loads(line.decode("utf-8"))
        except ValueError as exc:
            raise ProtocolViolation(f"not a JSON line: {line[:200]!r}") from exc
        if not isinstance(reply, dict):
            raise ProtocolViolation(f"a reply must be a JSON object, got {line[:200]!r}")
        return reply

    def tail(self) -> str:
        return "\n".join(self.stderr)

    def kill(self) -> None:
        if self.process.poll() is None:
            try:
                if os.name == "posix":
                    os.killpg(self.process.pid, signal.SIGKILL)  # the group this child leads
                else:
                    self.process.kill()
            except ProcessLookupError:
                pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


def _check_ready(reply: Dict[str, Any]) -> None:
    if reply.get(P.READY) is not True:
        error = reply.get(P.ERROR) or {}
        raise ProtocolViolation(f"the adapter is not ready: {error.get(P.ERROR_MESSAGE, reply)}")
    if reply.get(P.VERSION_FIELD) != P.VERSION:
        raise ProtocolViolation(
            f"the adapter speaks protocol version {reply.get(P.VERSION_FIELD)!r}; this runner speaks {P.VERSION}"
        )
    info = reply.get(P.IMPLEMENTATION)
    if not isinstance(info, dict) or not isinstance(info.get("name"), str):
        raise ProtocolViolation("the start reply has no implementation.name")
    if reply.get(P.STORAGE, P.STORAGE_FILESYSTEM) not in P.STORAGE_KINDS:
        raise ProtocolViolation(f"storage must be one of {P.STORAGE_KINDS}")
    options = reply.get(P.OPTIONS, [])
    if not isinstance(options, list) or not all(isinstance(name, str) for name in options):
        raise ProtocolViolation("options in the start reply must be a list of option names")


def _check_reply(reply: Dict[str, Any], seq: int) -> None:
    if reply.get(P.SEQ) != seq:
        raise ProtocolViolation(f"expected a reply to seq {seq}, got {reply!r:.200}")


class AdapterTarget(Target):
    """A `cmd:COMMAND LINE` target: the command speaks the adapter protocol on stdin and stdout."""

    def __init__(self, spec: str, command: str, root: pathlib.Path, step_timeout: float) -> None:
        self.spec = spec
        self._argv = shlex.split(command)
        if not self._argv:
            raise TargetError(f"{spec}: empty command line")
        self._step_timeout = step_timeout
        self._seq = 0
        self._child: Optional[_Child] = None
        self.restarts = -1  # the first start is not a restart
        self.reset(root)

    @property
    def pid(self) -> Optional[int]:
        """The running adapter's process ID (the stress tier reads its memory and CPU time), or None."""
        child = self._child
        return None if child is None or child.process.poll() is not None else child.process.pid

    # --- lifecycle ----------------------------------------------------------------------------

    def _start(self) -> _Child:
        try:
            child = _Child(self._argv)
        except OSError as exc:
            raise TargetError(f"{self.spec}: cannot start the adapter: {exc}") from exc
        try:
            child.send({P.CMD: P.CMD_START, P.VERSION_FIELD: P.VERSION})
            reply = child.receive(START_TIMEOUT)
            _check_ready(reply)
        except (OSError, EOFError, queue.Empty, ProtocolViolation) as exc:
            child.kill()
            raise TargetError(
                f"{self.spec}: the adapter did not start: {exc or type(exc).__name__}\n{child.tail()}"
            ) from exc
        info = reply[P.IMPLEMENTATION]
        self.implementation = {key: str(info.get(key, "")) for key in P.IMPLEMENTATION_FIELDS}
        self.storage = reply.get(P.STORAGE, P.STORAGE_FILESYSTEM)
        self.options = frozenset(name for name in reply.get(P.OPTIONS, []) if name in P.OPTION_NAMES)
        self.restarts += 1
        return child

    def _request(self, child: _Child, message: Dict[str, Any], timeout: float) -> Dict[str, Any]:
        self._seq += 1
        child.send(dict(message, **{P.SEQ: self._seq}))
        reply = child.receive(timeout)
        _check_reply(reply, self._seq)
        return reply

    def reset(self, root: pathlib.Path, options: Options = None) -> None:
        request: Dict[str, Any] = {P.CMD: P.CMD_RESET, P.ROOT: str(root)}
        if options:
            request[P.OPTIONS] = dict(options)  # sent only when set: an adapter that lists none never sees it
        for _attempt in (1, 2):
            if self._child is None or self._child.process.poll() is not None:
                self._discard()
                self._child = self._start()
            missing = self.unsupported(options)
            if missing is not None:
                raise TargetError(f"{self.spec}: option {missing} not supported")
            try:
                reply = self._request(self._child, request, self._step_timeout)
                if reply.get(P.OK) is True:
                    return
                problem = f"reset refused: {reply.get(P.ERROR, reply)}"
            except (OSError, EOFError, queue.Empty, ProtocolViolation) as exc:
                problem = f"reset failed: {exc or type(exc).__name__}"
            self._discard()
        raise TargetError(f"{self.spec}: {problem}")

    def _discard(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child = None

    def close(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        try:
            child.send({P.CMD: P.CMD_STOP})
            child.process.wait(timeout=STOP_GRACE)
        except (OSError, subprocess.TimeoutExpired):
            pass
        child.kill()

    # --- commands -----------------------------------------------------------------------------

    def execute(self, input: Any) -> StepResult:
        child = self._child
        if child is None:
            return StepResult("", True, crashed=True, detail="the adapter is not running (it crashed earlier)")
        try:
            reply = self._request(child, {P.CMD: P.CMD_EXECUTE, P.INPUT: input}, self._step_timeout)
            return _step_from_reply(reply)
        except queue.Empty:
            self._discard()
            return StepResult(
                "", True, timed_out=True, detail=f"no reply within {self._step_timeout:g}s; the adapter was killed"
            )
        except (OSError, EOFError, ProtocolViolation) as exc:
            tail = child.tail()
            self._discard()
            what = str(exc) or "the adapter exited"
            return StepResult("", True, crashed=True, detail=f"{what}\n{tail}".strip())


def _step_from_reply(reply: Dict[str, Any]) -> StepResult:
    if P.ERROR in reply:
        error = reply[P.ERROR] if isinstance(reply[P.ERROR], dict) else {P.ERROR_MESSAGE: str(reply[P.ERROR])}
        return StepResult("", True, crashed=True, detail=f"adapter error: {error.get(P.ERROR_MESSAGE, error)}")
    output, is_error = reply.get(P.OUTPUT), reply.get(P.IS_ERROR)
    if not isinstance(output, str) or not isinstance(is_error, bool):
        raise ProtocolViolation(f"an execute reply needs a string output and a boolean is_error: {reply!r:.200}")
    raised = reply.get(P.RAISED)
    if raised is not None:
        return StepResult(output, is_error, raised=True, detail=str(raised))
    return StepResult(output, is_error)
