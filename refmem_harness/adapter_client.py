"""The runner's side of the adapter protocol (conformance/PROTOCOL.md): one child process, JSON lines.

The adapter only executes; every comparison happens in the runner. A child that dies, hangs, or writes
something that is not a well-formed reply is killed; the step that saw it is reported as crashed or
timed out, and the next `reset` starts a new child.
"""

from __future__ import annotations

import base64
import binascii
import os
import pathlib
import queue
import shlex
import signal
import subprocess
import threading
from typing import IO, Any, Dict, List, Optional, Union

from refmem import protocol as P  # the protocol's vocabulary, defined once and shared with `refmem serve`

from . import adapter_wire as wire
from .target_base import (
    DETAIL_CHARS,
    MESSAGE_CHARS,
    Options,
    StepResult,
    Target,
    TargetError,
    clipped,
    clipped_lines,
    described,
)

START_TIMEOUT = P.START_TIMEOUT_SECONDS
"""Seconds an adapter may take to answer `start` (an interpreter or a JIT may be slow to load)."""

STOP_GRACE = P.STOP_GRACE_SECONDS
"""Seconds an adapter has to exit after `stop` before it is killed."""

STDERR_KEPT = wire.STDERR_LINES
"""Lines of the adapter's standard error kept for crash reports (each cut to wire.STDERR_LINE_BYTES)."""

THREAD_GRACE = 2.0
"""Seconds a killed adapter's reading threads have to see the end of their pipes."""

_EOF = object()
Item = Union[wire.Line, object]


class ProtocolViolation(Exception):
    """The adapter wrote something that is not a reply the protocol allows here."""


def quoted(line: wire.Line) -> str:
    """The start of an adapter's line, as a report may show it."""
    return clipped(wire.excerpt(line), wire.EXCERPT_BYTES)


class _Child:
    """A started adapter process, its replies (one line read ahead at most) and the tail of its standard error."""

    def __init__(self, argv: List[str], env: Optional[Dict[str, str]] = None) -> None:
        self.process = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=(os.name == "posix"),
        )
        assert self.process.stdout is not None and self.process.stderr is not None
        self.replies: queue.Queue[Item] = queue.Queue(maxsize=1)
        self.stderr = wire.StderrTail()
        self._closed = threading.Event()
        self._readers = [
            threading.Thread(target=self._pump_stdout, args=(wire.reader(self.process.stdout),), daemon=True),
            threading.Thread(target=self.stderr.drain, args=(wire.reader(self.process.stderr),), daemon=True),
        ]
        for thread in self._readers:
            thread.start()

    def _pump_stdout(self, read: wire.Read) -> None:
        try:
            for line in wire.lines(read):
                if not self._offer(line):
                    return
        except (OSError, ValueError):  # the pipe was closed under the thread: the adapter is gone
            pass
        self._offer(_EOF)

    def _offer(self, item: Item) -> bool:
        """Queue one item, waiting while the runner has not taken the previous one; False once killed."""
        while not self._closed.is_set():
            try:
                self.replies.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def send(self, message: Dict[str, Any], timeout: float) -> None:
        """Write one request, waiting at most `timeout` seconds: an adapter that no longer reads its input would
        otherwise block the runner for good once the pipe is full. Raises queue.Empty on timeout (the caller
        kills the adapter, which ends the blocked write) and OSError when the pipe is closed."""
        stdin: Optional[IO[bytes]] = self.process.stdin
        assert stdin is not None
        data = P.encode_message(message).encode("ascii") + b"\n"  # ASCII: lone surrogates survive as escapes
        failed: List[BaseException] = []
        written = threading.Event()

        def write() -> None:
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError) as exc:  # a closed pipe, or a stream closed by kill()
                failed.append(exc)
            finally:
                written.set()

        threading.Thread(target=write, name="adapter-stdin", daemon=True).start()
        if not written.wait(timeout):
            raise queue.Empty
        if failed:
            raise OSError(str(failed[0]) or "the adapter's input is closed")

    def receive(self, timeout: float) -> Dict[str, Any]:
        """The next reply; raises queue.Empty on timeout, EOFError on a closed stdout, ProtocolViolation for a
        line that is not a reply (too long, too deep, not JSON, not an object)."""
        line = self.replies.get(timeout=timeout)
        if line is _EOF:
            raise EOFError
        assert isinstance(line, (bytes, wire.TooLong))
        try:
            reply = wire.decode(line)
        except wire.Unreadable as exc:
            raise ProtocolViolation(f"{exc}: {quoted(line)}") from None
        if not isinstance(reply, dict):
            raise ProtocolViolation(f"a reply must be a JSON object, got {P.json_type(reply)}: {quoted(line)}")
        return reply

    def tail(self) -> str:
        """The end of the adapter's standard error, printable, at most DETAIL_CHARS characters."""
        return clipped_lines("\n".join(self.stderr.lines()), DETAIL_CHARS, keep_end=True)

    def kill(self) -> None:
        self._closed.set()
        if self.process.poll() is None:
            try:
                if os.name == "posix":
                    os.killpg(self.process.pid, signal.SIGKILL)  # the group this child leads
                else:
                    self.process.kill()
            except ProcessLookupError:
                pass
        self.process.wait()
        while not self.replies.empty():  # a line read ahead is dropped now, not when the child is collected
            try:
                self.replies.get_nowait()
            except queue.Empty:
                break
        for thread in self._readers:
            thread.join(THREAD_GRACE)
        # A pipe still held open by a process that left the group keeps its reader: closing it would block.
        readers = {id(self.process.stdout): self._readers[0], id(self.process.stderr): self._readers[1]}
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            reading = readers.get(id(stream))
            if stream is not None and (reading is None or not reading.is_alive()):
                try:
                    stream.close()
                except OSError:
                    pass


def _check_ready(reply: Dict[str, Any]) -> None:
    if reply.get(P.READY) is not True:
        error = reply.get(P.ERROR)
        message = error.get(P.ERROR_MESSAGE, "") if isinstance(error, dict) else error
        raise ProtocolViolation(f"the adapter is not ready: {clipped(message or P.json_type(reply), MESSAGE_CHARS)}")
    version = reply.get(P.VERSION_FIELD)
    if version != P.VERSION:
        raise ProtocolViolation(
            f"the adapter speaks protocol version {clipped(version, MESSAGE_CHARS)}; this runner speaks {P.VERSION}"
        )
    info = reply.get(P.IMPLEMENTATION)
    if not isinstance(info, dict) or not isinstance(info.get("name"), str):
        raise ProtocolViolation("the start reply has no implementation.name")
    if reply.get(P.STORAGE, P.STORAGE_FILESYSTEM) not in P.STORAGE_KINDS:
        raise ProtocolViolation(f"storage must be one of {P.STORAGE_KINDS}")
    options = reply.get(P.OPTIONS, [])
    if not isinstance(options, list) or not all(isinstance(name, str) for name in options):
        raise ProtocolViolation("options in the start reply must be a list of option names")
    tools = reply.get(P.TOOLS, [P.TOOL_MEMORY])
    if not isinstance(tools, list) or not all(isinstance(name, str) and name for name in tools):
        raise ProtocolViolation("tools in the start reply must be a list of tool names")


def _check_reply(reply: Dict[str, Any], seq: int) -> None:
    if not P.valid_seq(reply.get(P.SEQ)) or reply[P.SEQ] != seq:  # true is not 1
        got = clipped(reply[P.SEQ], MESSAGE_CHARS) if P.SEQ in reply else "none"
        raise ProtocolViolation(f"expected a reply to seq {seq}, got seq {got}")


class AdapterTarget(Target):
    """A `cmd:COMMAND LINE` target: the command speaks the adapter protocol on stdin and stdout."""

    shares = False
    """The adapter said, in its start reply, that it shares its storage with the other sessions on the root."""
    share_reason = ""
    """Why it cannot share (its `share_reason`), when it said so."""
    tenants = False
    """The adapter's reset accepts a `tenant`."""
    reads = False
    """The adapter answers the optional `read` request (a file's bytes; PROTOCOL.md)."""

    def __init__(
        self,
        spec: str,
        command: str,
        root: pathlib.Path,
        step_timeout: float,
        *,
        share: bool = False,
        tenant: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
    ) -> None:
        """`share`: start it as one of several sessions over the same storage (the protocol's `share`);
        `tenant`: sent in every reset; `env`: the adapter's environment (default: the runner's)."""
        self.spec = spec
        self._argv = shlex.split(command)
        if not self._argv:
            raise TargetError(f"{spec}: empty command line")
        self._share = share
        self._tenant = tenant
        self._env = env
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
            child = _Child(self._argv, self._env)
        except OSError as exc:
            raise TargetError(f"{self.spec}: cannot start the adapter: {exc}") from exc
        start: Dict[str, Any] = {P.CMD: P.CMD_START, P.VERSION_FIELD: P.VERSION}
        if self._share:
            start[P.SHARE] = True  # sent only when asked: an adapter never started for sessions never sees it
        try:
            child.send(start, START_TIMEOUT)
            reply = child.receive(START_TIMEOUT)
            _check_ready(reply)
        except (OSError, EOFError, queue.Empty, ProtocolViolation) as exc:
            child.kill()
            raise TargetError(
                f"{self.spec}: the adapter did not start: {exc or type(exc).__name__}\n{child.tail()}"
            ) from exc
        self.implementation = described(reply[P.IMPLEMENTATION])
        self.storage = reply.get(P.STORAGE, P.STORAGE_FILESYSTEM)
        self.options = frozenset(name for name in reply.get(P.OPTIONS, []) if name in P.OPTION_NAMES)
        self.tools = tuple(dict.fromkeys(reply.get(P.TOOLS, [P.TOOL_MEMORY])))
        self.shares = reply.get(P.SHARE) is True
        reason = reply.get(P.SHARE_REASON)
        self.share_reason = clipped(reason, MESSAGE_CHARS) if isinstance(reason, str) else ""
        self.tenants = reply.get(P.TENANTS) is True
        self.reads = reply.get(P.READS) is True
        self.restarts += 1
        return child

    def _request(self, child: _Child, message: Dict[str, Any], timeout: float) -> Dict[str, Any]:
        self._seq += 1
        child.send(dict(message, **{P.SEQ: self._seq}), timeout)
        reply = child.receive(timeout)
        _check_reply(reply, self._seq)
        return reply

    def reset(self, root: pathlib.Path, options: Options = None) -> None:
        request: Dict[str, Any] = {P.CMD: P.CMD_RESET, P.ROOT: str(root)}
        if options:
            request[P.OPTIONS] = dict(options)  # sent only when set: an adapter that lists none never sees it
        if self._tenant is not None:
            request[P.TENANT] = self._tenant
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
                problem = f"reset refused: {_error_text(reply)}"
            except (OSError, EOFError, queue.Empty, ProtocolViolation) as exc:
                problem = f"reset failed: {exc or type(exc).__name__}"
            self._discard()
        raise TargetError(f"{self.spec}: {problem}")

    def serve_tenant(self, tenant: Optional[str]) -> None:
        """Send `tenant` in every reset from now on (the next reset builds the handler for it)."""
        self._tenant = tenant

    def _discard(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child = None

    def close(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        try:
            child.send({P.CMD: P.CMD_STOP}, STOP_GRACE)
            child.process.wait(timeout=STOP_GRACE)
        except (OSError, queue.Empty, subprocess.TimeoutExpired):
            pass
        child.kill()

    # --- commands -----------------------------------------------------------------------------

    def execute(self, input: Any, tool: str = P.TOOL_MEMORY, *, timeout: Optional[float] = None) -> StepResult:
        """Run `input`; `timeout` (seconds) replaces the step timeout for this call alone (the deployment tier
        cuts calls off part way)."""
        step_timeout = self._step_timeout if timeout is None else timeout
        child = self._child
        if child is None:
            return StepResult("", True, crashed=True, detail="the adapter is not running (it crashed earlier)")
        request: Dict[str, Any] = {P.CMD: P.CMD_EXECUTE, P.INPUT: input}
        if tool != P.TOOL_MEMORY:
            request[P.TOOL] = tool  # sent only for another tool: an adapter of the memory tool alone never sees it
        try:
            reply = self._request(child, request, step_timeout)
            return step_from_reply(reply)
        except queue.Empty:
            self._discard()
            detail = f"no reply within {step_timeout:g}s; the adapter was killed"
            return StepResult("", True, timed_out=True, detail=detail)
        except (OSError, EOFError, ProtocolViolation) as exc:
            self._discard()  # first: the killed child's reading threads finish its stderr
            tail = child.tail()
            what = str(exc) or "the adapter exited"
            return StepResult("", True, crashed=True, detail=f"{what}\n{tail}".strip())


    def read_bytes(self, path: str) -> Optional[bytes]:
        """The bytes of the file `path` by the optional `read` request; None when the adapter does not declare
        it, has no such file, or answers anything else (the caller then judges by what the views show). A read
        that hangs or breaks the protocol ends the adapter, as any request does."""
        child = self._child
        if not self.reads or child is None:
            return None
        try:
            reply = self._request(child, {P.CMD: P.CMD_READ, P.PATH: path}, self._step_timeout)
        except (queue.Empty, OSError, EOFError, ProtocolViolation):
            self._discard()
            return None
        data = reply.get(P.CONTENT_BASE64)
        if reply.get(P.FOUND) is not True or not isinstance(data, str):
            return None
        try:
            return base64.b64decode(data, validate=True)
        except (ValueError, binascii.Error):
            return None


def _error_text(reply: Dict[str, Any]) -> str:
    """What an error reply says (its message, else its code), as a report may show it."""
    error = reply.get(P.ERROR)
    if isinstance(error, dict):
        error = error.get(P.ERROR_MESSAGE) or error.get(P.ERROR_CODE) or ""
    return clipped(error if error is not None else f"no error, but {P.json_type(reply.get(P.OK))} ok", MESSAGE_CHARS)


def step_from_reply(reply: Dict[str, Any]) -> StepResult:
    """An execute reply (output, is_error, and `raised` or a tool's `result` when present) as a StepResult;
    ProtocolViolation for a reply without a string output and a boolean is_error."""
    if P.ERROR in reply:
        return StepResult("", True, crashed=True, detail=f"adapter error: {_error_text(reply)}")
    output, is_error = reply.get(P.OUTPUT), reply.get(P.IS_ERROR)
    if not isinstance(output, str) or not isinstance(is_error, bool):
        raise ProtocolViolation(
            "an execute reply needs a string output and a boolean is_error, "
            f"got {P.json_type(output)} output and {P.json_type(is_error)} is_error"
        )
    raised, result = reply.get(P.RAISED), reply.get(P.RESULT)
    if raised is not None:
        return StepResult(output, is_error, raised=True, detail=clipped_lines(raised, DETAIL_CHARS), result=result)
    return StepResult(output, is_error, result=result)
