"""`--target mcp:...`: an MCP server's memory tool, reached through the official `mcp` SDK's client session.

    mcp:stdio:COMMAND LINE      a server on stdio, started afresh on every reset, unless it advertises the
                                experimental capability `refmem/reset`: then it is sent that request, naming the
                                new root, and keeps running (`refmem mcp --harness`; D-MCP-RESET); `{root}` in the
                                command line stands for the case's root (then its storage is the root's files),
                                and the server's working directory is the first root either way
    mcp:http://127.0.0.1:8765/mcp    a running server, over streamable HTTP (its own storage; a reset opens a new
                                session, the memories stay); REFMEM_MCP_TOKEN, when set, is sent as the bearer
                                token (never named in the spec, never clipped)

The memory tool is the listed tool named `memory`, else the one whose input schema has a `command` property naming
the six commands; OpenClaw's tools are `memory_get` and `memory_search` by name. A `tools/call` result is read as
the cases judge a step: its text content (the text blocks joined) is the output, `isError` the error flag, its
structured content the tool's result object. A JSON-RPC error in answer to a call, a message that is not MCP, or a
result with content that is not text is a robustness finding (`raised`); a server that exits or closes the
connection has crashed; a call that overruns the step timeout has timed out (and the server is stopped).

Bounded like every adapter: on stdio the transport here frames the server's lines itself and drops any line longer
than `MAX_MESSAGE_BYTES` (the SDK's own stdio client would hold it whole), and keeps only the tail of its standard
error; over HTTP every server-sent event is bounded by the SDK's `max_sse_event_size`, and a response body that
states a Content-Length over `MAX_MESSAGE_BYTES` is refused. A JSON body sent chunked, with no length, is read whole
by the SDK: a gap of the HTTP form, which is for servers one runs oneself.

Needs the `mcp` extra; imported only for an `mcp:` target (D-MCP-TARGET).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shlex
import signal
import subprocess
from typing import Any, AsyncIterator, Dict, List, Optional, Tuple

from refmem import protocol as P

from .target_base import (
    DEFAULT_STEP_TIMEOUT,
    DETAIL_CHARS,
    MESSAGE_CHARS,
    StepResult,
    Target,
    TargetError,
    clipped,
    clipped_lines,
    described,
    implementation_info,
)

try:
    import anyio
    import anyio.from_thread
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.shared.message import SessionMessage
except ImportError as exc:  # pragma: no cover - said as a usage error
    raise TargetError("an mcp: target needs the MCP SDK: pip install 'refmem[mcp]'") from exc

MAX_MESSAGE_BYTES = P.MAX_LINE_BYTES
"""The longest message read from a server (a stdio line, an HTTP body or event): the adapter protocol's line."""
START_TIMEOUT = P.START_TIMEOUT_SECONDS
STOP_GRACE = P.STOP_GRACE_SECONDS
TOKEN_VARIABLE = "REFMEM_MCP_TOKEN"  # noqa: S105 - the name of the variable, not a token
ROOT_FIELD = "{root}"
NOT_AN_OBJECT = "Error: MCP carries only an object as a tool's arguments"
"""The step's text for an input that is not a JSON object: not sent (D-MCP-TARGET)."""
NOT_UTF8 = "MCP carries text as UTF-8, which has no lone surrogate"
NOT_FINITE = "MCP carries JSON, which has no NaN or infinity"
_READ_CHUNK = 65536
RESET_METHOD = "refmem/reset"
"""A server's own fresh start on a new root, asked for instead of a new process when the server advertises it as an
experimental capability (`refmem mcp --harness`; D-MCP-RESET)."""


class ResetParams(types.RequestParams):
    root: str


class ResetRequest(types.Request[ResetParams, str]):
    method: str = RESET_METHOD
    params: ResetParams


class _Unbounded(Exception):
    """The server sent more than a message may hold."""


def memory_tool_name(tools: List[Any]) -> Optional[str]:
    """The memory tool among the listed `tools`: by name, else by an input schema whose `command` names the six
    commands."""
    from refmem import tool as memory_tool

    names = [getattr(listed, "name", None) for listed in tools]
    if P.TOOL_MEMORY in names:
        return P.TOOL_MEMORY
    for listed in tools:
        schema = getattr(listed, "input_schema", None)
        properties = schema.get("properties") if isinstance(schema, dict) else None
        command = properties.get("command") if isinstance(properties, dict) else None
        choices = command.get("enum") if isinstance(command, dict) else None
        if isinstance(choices, list) and set(memory_tool.NAMES) <= set(choices):
            return str(listed.name)
    return None


def uncarried(input: Any) -> Optional[str]:
    """Why MCP cannot carry `input` as a tool's arguments (a message is UTF-8 JSON, arguments an object), or None.
    Such an input is never sent: the SDK cannot encode it, and a server could not read it (D-MCP-TARGET). Walked
    without recursion."""
    if not isinstance(input, dict):
        return NOT_AN_OBJECT[len("Error: ") :]
    pending: List[Any] = [input]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return NOT_UTF8
        elif isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return NOT_FINITE
    return None


def step_from_result(result: Any) -> StepResult:
    """A `tools/call` result as the cases judge it."""
    texts: List[str] = []
    other: List[str] = []
    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) == "text" and isinstance(getattr(block, "text", None), str):
            texts.append(block.text)
        else:
            other.append(str(getattr(block, "type", "?")))
    output = "\n".join(texts)
    is_error = getattr(result, "is_error", False) is True
    structured = getattr(result, "structured_content", None)
    if other:
        detail = f"the result holds content that is not text: {clipped(', '.join(other), MESSAGE_CHARS)}"
        return StepResult(output, is_error, raised=True, detail=detail, result=structured)
    return StepResult(output, is_error, result=structured)


# --- a bounded stdio transport for the SDK's session ---------------------------------------------------------


def _parse(line: bytes) -> Any:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return ValueError(f"not an MCP message: {clipped(str(exc), MESSAGE_CHARS)}")


class _Tail:
    """The last DETAIL_CHARS bytes of a stream."""

    def __init__(self) -> None:
        self.data = b""

    def add(self, chunk: bytes) -> None:
        self.data = (self.data + chunk)[-DETAIL_CHARS:]

    def text(self) -> str:
        return clipped_lines(self.data.decode("utf-8", "replace"), DETAIL_CHARS, keep_end=True)


@contextlib.asynccontextmanager
async def _stdio(argv: List[str], cwd: str, stderr: _Tail) -> AsyncIterator[Tuple[Any, Any, Any]]:
    """(read stream, write stream, process) for the SDK's ClientSession, over a server process whose stdout is
    framed into lines of at most MAX_MESSAGE_BYTES here."""
    process = await anyio.open_process(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        start_new_session=True,
    )
    to_session, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, from_session = anyio.create_memory_object_stream[Any](0)

    async def read_stdout() -> None:
        assert process.stdout is not None
        buffer, dropping = b"", False
        async with to_session:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                while True:
                    chunk = await process.stdout.receive(_READ_CHUNK)
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if dropping:
                            dropping = False
                            continue
                        if line.strip():
                            await to_session.send(_parse(line))
                    if len(buffer) > MAX_MESSAGE_BYTES and not dropping:
                        dropping, buffer = True, b""
                        await to_session.send(_Unbounded(f"a line longer than {MAX_MESSAGE_BYTES} bytes"))
                    elif dropping:
                        buffer = b""

    async def read_stderr() -> None:
        assert process.stderr is not None
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                stderr.add(await process.stderr.receive(_READ_CHUNK))

    async def write_stdin() -> None:
        assert process.stdin is not None
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async with from_session:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))

    async with anyio.create_task_group() as group:
        group.start_soon(read_stdout)
        group.start_soon(read_stderr)
        group.start_soon(write_stdin)
        try:
            yield read_stream, write_stream, process
        finally:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(Exception):
                    assert process.stdin is not None
                    await process.stdin.aclose()
                with anyio.move_on_after(STOP_GRACE):
                    await process.wait()
                if process.returncode is None:
                    with contextlib.suppress(OSError):
                        os.killpg(process.pid, signal.SIGKILL)
                    with anyio.move_on_after(STOP_GRACE):
                        await process.wait()
            group.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def _http(url: str) -> AsyncIterator[Tuple[Any, Any, Any]]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers: Dict[str, str] = {}
    token = os.environ.get(TOKEN_VARIABLE)
    if token:
        headers["Authorization"] = f"Bearer {token}"

    async def bounded(response: Any) -> None:
        length = response.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_MESSAGE_BYTES:
            await response.aclose()
            raise _Unbounded(f"a response of {length} bytes, more than {MAX_MESSAGE_BYTES}")

    client = httpx2.AsyncClient(headers=headers, event_hooks={"response": [bounded]})
    async with client:
        async with streamable_http_client(url, http_client=client, max_sse_event_size=MAX_MESSAGE_BYTES) as streams:
            yield streams[0], streams[1], None


# --- the target ----------------------------------------------------------------------------------------------


class McpTarget(Target):
    """An MCP server's tools, one SDK client session per reset, run on an event loop in a thread of its own."""

    def __init__(self, spec: str, root: pathlib.Path, step_timeout: float) -> None:
        self.spec = spec
        rest = spec[len("mcp:") :]
        self._url: Optional[str] = None
        self._argv: List[str] = []
        if rest.startswith("stdio:"):
            self._argv = shlex.split(rest[len("stdio:") :])
            if not self._argv:
                raise TargetError(f"{spec}: empty command line")
            self.storage = P.STORAGE_FILESYSTEM if any(ROOT_FIELD in arg for arg in self._argv) else P.STORAGE_OWN
        elif rest.startswith(("http://", "https://")):
            self._url = rest
            self.storage = P.STORAGE_OWN
        else:
            raise TargetError(f"{spec}: expected mcp:stdio:COMMAND LINE or mcp:http://HOST:PORT/PATH")
        self._step_timeout = step_timeout
        self._stderr = _Tail()
        self._portal_context: Any = anyio.from_thread.start_blocking_portal()
        self._portal = self._portal_context.__enter__()
        self._session_context: Any = None
        self._session: Any = None
        self._process: Any = None
        self._names: Dict[str, str] = {}
        self.resettable = False
        """Whether the running server takes `refmem/reset` (else every reset starts it again)."""
        self.resets = 0
        """Resets the server made itself, without a new process."""
        self.restarts = -1
        self.implementation = implementation_info(spec, "")
        self.options = frozenset()
        try:
            self.reset(root)
        except BaseException:
            self.close()
            raise

    @property
    def pid(self) -> Optional[int]:
        process = self._process
        return None if process is None or process.returncode is not None else int(process.pid)

    @contextlib.asynccontextmanager
    async def _connect(self, root: pathlib.Path) -> AsyncIterator[Tuple[Any, Any, Any]]:
        if self._url is not None:
            transport = _http(self._url)
        else:
            argv = [arg.replace(ROOT_FIELD, str(root)) for arg in self._argv]
            transport = _stdio(argv, str(root), self._stderr)
        async with transport as (read_stream, write_stream, process):
            async with ClientSession(read_stream, write_stream) as session:
                with anyio.fail_after(START_TIMEOUT):
                    initialized = await session.initialize()
                    listed = await session.list_tools()
                yield session, (initialized, listed.tools), process

    def _open(self, root: pathlib.Path) -> None:
        self._stderr = _Tail()
        context = self._portal.wrap_async_context_manager(self._connect(root))
        try:
            session, (initialized, tools), process = context.__enter__()
        except Exception as exc:  # noqa: BLE001 - any failure to start is the target's usage error
            detail = clipped(str(exc) or type(exc).__name__, MESSAGE_CHARS)
            raise TargetError(f"{self.spec}: the MCP server did not start: {detail}\n{self._stderr.text()}") from None
        self._session_context, self._session, self._process = context, session, process
        names: Dict[str, str] = {}
        memory = memory_tool_name(tools)
        if memory is not None:
            names[P.TOOL_MEMORY] = memory
        listed = {getattr(listed, "name", None) for listed in tools}
        for other in P.TOOL_NAMES[1:]:
            if other in listed:
                names[other] = other
        self._names = names
        self.tools = tuple(name for name in P.TOOL_NAMES if name in names)
        capabilities = getattr(initialized, "capabilities", None)
        experimental = getattr(capabilities, "experimental", None)
        self.resettable = isinstance(experimental, dict) and RESET_METHOD in experimental
        info = getattr(initialized, "server_info", None)
        self.implementation = described(
            implementation_info(
                str(getattr(info, "name", "") or self.spec), "", str(getattr(info, "version", "") or "")
            )
        )
        self.restarts += 1

    def _drop(self) -> None:
        context, self._session_context, self._session, self._process = self._session_context, None, None, None
        if context is not None:
            with contextlib.suppress(BaseException):
                context.__exit__(None, None, None)

    def reset(self, root: pathlib.Path, options: Any = None) -> None:
        missing = self.unsupported(options)
        if missing is not None:
            raise TargetError(f"{self.spec}: option {missing} not supported")
        if self._session is not None and self.resettable and self._reset_in_place(pathlib.Path(root)):
            return
        self._drop()
        self._open(pathlib.Path(root))

    async def _reset(self, root: str) -> Any:
        with anyio.fail_after(START_TIMEOUT):
            return await self._session.send_request(ResetRequest(params=ResetParams(root=root)), types.EmptyResult)

    def _reset_in_place(self, root: pathlib.Path) -> bool:
        """The running server's own fresh start on `root`; False (and the server stopped) when it did not make one,
        so that a new process is started: a reset never leaves the previous case's state in place."""
        try:
            self._portal.call(self._reset, str(root))
        except Exception:  # noqa: BLE001 - any failure: started again instead
            self._drop()
            return False
        self.resets += 1
        return True

    async def _call(self, name: str, arguments: Any, timeout: float) -> Any:
        with anyio.fail_after(timeout):
            return await self._session.call_tool(name, arguments)

    def execute(self, input: Any, tool: str = P.TOOL_MEMORY) -> StepResult:
        name = self._names.get(tool)
        if name is None:
            return StepResult("", True, crashed=True, detail=f"{self.spec} does not run the tool {clipped(tool, 80)}")
        if self._session is None:
            return StepResult("", True, crashed=True, detail="the MCP server is not running (it failed earlier)")
        why = uncarried(input)
        if why is not None:  # not sent: an error, no finding (the runner skips cases that send one)
            return StepResult(NOT_AN_OBJECT if why == NOT_AN_OBJECT[len("Error: ") :] else f"Error: {why}", True,
                              detail=why)
        try:
            result = self._portal.call(self._call, name, input, self._step_timeout)
        except TimeoutError:
            self._drop()
            detail = f"no result within {self._step_timeout:g}s; the MCP server was stopped"
            return StepResult("", True, timed_out=True, detail=detail)
        except Exception as exc:  # noqa: BLE001 - read as a finding, never a runner crash
            return self._failed(exc)
        return step_from_result(result)

    def _failed(self, exc: Exception) -> StepResult:
        """A call that got no result: a server that is gone has crashed; any other failure is the protocol's."""
        process = self._process
        closed = getattr(getattr(exc, "error", None), "code", None) == types.CONNECTION_CLOSED
        gone = closed or (process is not None and process.returncode is not None) or isinstance(
            exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError)
        )
        what = f"{type(exc).__name__}: {clipped(str(exc), MESSAGE_CHARS)}"
        if gone:
            self._drop()
            return StepResult("", True, crashed=True, detail=f"{what}\n{self._stderr.text()}".strip())
        return StepResult("", True, raised=True, detail=f"MCP protocol error: {what}")

    def uncarried(self, input: Any) -> Optional[str]:
        return uncarried(input)

    def close(self) -> None:
        self._drop()
        context, self._portal_context = self._portal_context, None
        if context is not None:
            with contextlib.suppress(BaseException):
                context.__exit__(None, None, None)


def open_mcp(spec: str, root: pathlib.Path, timeout: Optional[float]) -> Target:
    return McpTarget(spec, root, timeout or DEFAULT_STEP_TIMEOUT)
