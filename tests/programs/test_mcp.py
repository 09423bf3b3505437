"""`refmem mcp` held by the mcp SDK's own client, over stdio and streamable HTTP, and the suite through
`--target mcp:...` (refmem_harness/mcp_target.py). Each server is a real process; the cases run are few, since every
reset starts a server afresh."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
import httpx2  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from refmem import MemoryHandler  # noqa: E402
from refmem_mcp.schema import memory_input_schema  # noqa: E402

SERVER = [sys.executable, "-m", "refmem", "mcp"]
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


@pytest.fixture
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir=SCRATCH) as made:
        yield Path(made)


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def _stdio_session(root: Path) -> Dict[str, Any]:
    params = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], "--root", str(root), "--openclaw"])
    seen: Dict[str, Any] = {}
    async with stdio_client(params) as (read_stream, write_stream):
        async with ClientSession(read_stream, write_stream) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            seen["tools"] = {tool.name: tool.input_schema for tool in tools}
            create = {"command": "create", "path": "/memories/a.md", "file_text": "x\n"}
            made = await session.call_tool("memory", create)
            seen["create"] = (_text(made), made.is_error)
            bad = await session.call_tool("memory", {"command": "view", "path": "/etc/passwd"})
            seen["escape"] = (_text(bad), bad.is_error)
            missing = await session.call_tool("memory", {"command": "create"})
            seen["missing"] = (_text(missing), missing.is_error)
            got = await session.call_tool("memory_get", {"path": "MEMORY.md"})
            seen["memory_get"] = got.structured_content
            other = await session.call_tool("shell", {})
            seen["unknown"] = other.is_error
    return seen


def test_a_client_session_over_stdio(root: Path) -> None:
    seen = anyio.run(_stdio_session, root)
    assert list(seen["tools"]) == ["memory", "memory_get", "memory_search"]
    assert seen["tools"]["memory"] == memory_input_schema()
    assert seen["create"] == ("File created successfully at: /memories/a.md", False)
    assert (root / "a.md").read_text() == "x\n"
    text, is_error = seen["escape"]
    assert is_error and text.startswith("Error: ") and "/memories" in text
    direct = MemoryHandler(root).execute({"command": "create"})  # the handler's own words, not the SDK's
    assert seen["missing"] == (direct.output, True) and direct.is_error
    assert seen["memory_get"] == {"status": "not_found", "text": "", "path": "MEMORY.md"}
    assert seen["unknown"] is True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve_http(args: List[str]) -> subprocess.Popen[bytes]:
    port = int(args[args.index("--port") + 1])
    process = subprocess.Popen([*SERVER, "--http", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(process.stderr.read().decode() if process.stderr else "exited")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.1)
    process.kill()
    raise AssertionError("the HTTP server did not listen")


async def _http_calls(url: str, token: Optional[str], calls: List[Dict[str, Any]]) -> List[Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answers: List[Any] = []
    async with httpx2.AsyncClient(headers=headers) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                for call in calls:
                    result = await session.call_tool("memory", call)
                    answers.append((_text(result), result.is_error))
    return answers


def test_http_needs_a_token_and_the_token_picks_the_tenant(root: Path) -> None:
    tokens = root.parent / f"{root.name}.tokens"
    alice, bob = "a" * 16 + "-alice-token", "b" * 16 + "-bob-token"
    tokens.write_text(f"# TOKEN TENANT\n{alice} alice\n{bob} bob\n")
    tokens.chmod(0o600)
    port = _free_port()
    process = _serve_http(["--root", str(root), "--port", str(port), "--token-file", str(tokens)])
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30)
        assert refused.status_code == 401
        wrong = httpx2.post(url, json={}, headers={"Authorization": "Bearer " + "c" * 20}, timeout=30)
        assert wrong.status_code == 401
        create = {"command": "create", "path": "/memories/secret.md", "file_text": "alice's\n"}
        view = {"command": "view", "path": "/memories/secret.md"}
        assert anyio.run(_http_calls, url, alice, [create, view])[0] == (
            "File created successfully at: /memories/secret.md",
            False,
        )
        text, is_error = anyio.run(_http_calls, url, bob, [view])[0]
        assert is_error and "alice's" not in text  # another tenant's memories are not there
        assert "alice's" in anyio.run(_http_calls, url, alice, [view])[0][0]
    finally:
        process.terminate()
        process.wait(timeout=30)
        tokens.unlink()


def test_the_http_target_reaches_a_running_server(root: Path) -> None:
    from refmem_harness.targets import open_target

    port = _free_port()
    process = _serve_http(["--root", str(root), "--port", str(port)])  # loopback: no token needed
    try:
        target = open_target(f"mcp:http://127.0.0.1:{port}/mcp", root)
        try:
            assert target.storage == "own" and target.tools == ("memory",)
            made = target.execute({"command": "create", "path": "/memories/h.md", "file_text": "y"})
            assert (made.output, made.is_error, made.misbehaved) == ("File created successfully at: /memories/h.md",
                                                                      False, False)
            escape = target.execute({"command": "view", "path": "/memories/../.."})
            assert escape.is_error and not escape.misbehaved and escape.output.startswith("Error: ")
        finally:
            target.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_http_off_loopback_needs_a_token_file(root: Path) -> None:
    done = subprocess.run(
        [*SERVER, "--http", "--host", "0.0.0.0", "--port", str(_free_port()), "--root", str(root)],  # noqa: S104
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "needs --token-file" in done.stderr and "Traceback" not in done.stderr


def test_a_token_file_others_can_read_is_refused(root: Path) -> None:
    tokens = root / "tokens"
    tokens.write_text("t" * 20 + " alice\n")
    tokens.chmod(0o644)
    done = subprocess.run(
        [*SERVER, "--http", "--port", "1", "--root", str(root), "--token-file", str(tokens)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "open to other users" in done.stderr and "Traceback" not in done.stderr


def test_without_the_extra_it_says_which_to_install(root: Path) -> None:
    blocker = root / "blocker"
    (blocker / "mcp").mkdir(parents=True)
    (blocker / "mcp" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n")
    env = dict(os.environ, PYTHONPATH=str(blocker))
    done = subprocess.run([*SERVER, "--root", str(root)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2
    assert "pip install 'refmem[mcp]'" in done.stderr and "Traceback" not in done.stderr


def _suite(target: str, workdir: Path, *extra: str) -> Dict[str, Any]:
    report = workdir / "report.json"
    command = [sys.executable, "-m", "conformance", "run", "--target", target, "--workdir", str(workdir)]
    done = subprocess.run(
        [*command, "--report-json", str(report), "-q", *extra], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return dict(json.loads(report.read_text()))


def _passed(report: Dict[str, Any]) -> int:
    return sum(1 for case in report["cases"] if case["status"] == "pass")


@pytest.mark.slow
def test_the_suite_passes_refmem_through_mcp_on_the_filesystem(root: Path) -> None:
    """The standard profile, a few cases of it (each starts a server): the target, its `{root}` and its reading of
    results, end to end."""
    target = f"mcp:stdio:{sys.executable} -m refmem mcp --root {{root}}"
    report = _suite(target, root, "--profile", "standard", "--run", "create-00[1-3]", "--run", "paths-00[1-2]")
    assert report["storage"] == "filesystem"
    assert _passed(report) == 5


@pytest.mark.slow
def test_the_suite_passes_refmem_through_mcp_on_sqlite(root: Path) -> None:
    target = f"mcp:stdio:{sys.executable} -m refmem mcp --store sqlite:memory.db"
    report = _suite(target, root, "--run", "create-00[1-2]", "--run", "str_replace-001")
    assert report["storage"] == "own"
    assert _passed(report) == 3


@pytest.mark.slow
def test_the_fuzzer_runs_through_mcp(root: Path) -> None:
    target = f"mcp:stdio:{sys.executable} -m refmem mcp --harness --root {{root}}"  # reset in place (D-MCP-RESET)
    command = [sys.executable, "-m", "fuzz", "run", "--target", target, "--runs", "3", "--max-time", "240", "--no-cost"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=root)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " 0 new finding(s)" in done.stdout + done.stderr


# Every line gets an answer (D-MCP-INPUT): the SDK's stdio transport answered nothing to a line its parser refused
# (a tool call's arguments nested 200 deep), and the client waited for its timeout.

ANSWER_SECONDS = 30  # a generous bound on a busy machine; a hang waits for it, an answer takes well under a second


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


async def _deep_call_then_view(root: Path) -> Dict[str, Any]:
    params = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], "--root", str(root)])
    seen: Dict[str, Any] = {}
    async with stdio_client(params) as (read_stream, write_stream):
        async with ClientSession(read_stream, write_stream) as session:
            await _deep_then_view(session, seen)
    return seen


async def _deep_then_view(session: Any, seen: Dict[str, Any]) -> None:
    """A call nested 200 deep, then a plain view, each within ANSWER_SECONDS: what each answered goes in `seen`."""
    from mcp.shared.exceptions import MCPError

    await session.initialize()
    with anyio.fail_after(ANSWER_SECONDS):
        try:
            await session.call_tool("memory", {"command": "view", "path": "/memories", "view_range": _nested(200)})
        except MCPError as exc:
            seen["deep"] = (exc.error.code, exc.error.message)
    with anyio.fail_after(ANSWER_SECONDS):
        view = await session.call_tool("memory", {"command": "view", "path": "/memories"})
    seen["view"] = (_text(view), view.is_error)


def test_arguments_nested_200_deep_get_an_error_not_a_hang(root: Path) -> None:
    seen = anyio.run(_deep_call_then_view, root)
    code, message = seen["deep"]
    assert code == -32700 and "recursion limit" in message
    text, is_error = seen["view"]
    assert not is_error and text.startswith("Here're the files and directories up to 2 levels deep in /memories")


async def _raw_lines_then_view(root: Path, raw: List[bytes]) -> Dict[str, Any]:
    """The SDK's ClientSession over the server's pipes, with `raw` written on the same stdin first: lines the SDK's
    client cannot produce. Replies with a `raw-` id or a null id are the raw lines' answers."""
    import mcp_types as types
    from anyio.streams.buffered import BufferedByteReceiveStream
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process([*SERVER, "--root", str(root)], stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    to_client, client_reads = anyio.create_memory_object_stream[Any](16)
    client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](16)
    stdout = BufferedByteReceiveStream(process.stdout)
    answers: List[Dict[str, Any]] = []
    seen: Dict[str, Any] = {"answers": answers}

    async def pump_out() -> None:
        while True:
            line = await stdout.receive_until(b"\n", 1 << 24)
            reply = json.loads(line)
            if reply.get("id") is None or str(reply.get("id")).startswith("raw-"):
                answers.append(reply)
            else:
                await to_client.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(reply)))

    async def pump_in() -> None:
        async for message in from_client:
            line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
            await process.stdin.send(line.encode() + b"\n")

    async with process, anyio.create_task_group() as group:
        group.start_soon(pump_out)
        group.start_soon(pump_in)
        with anyio.fail_after(ANSWER_SECONDS * 2):
            for line in raw:
                await process.stdin.send(line)
            while len(answers) < len([line for line in raw if line.strip()]):
                await anyio.sleep(0.05)
        async with ClientSession(client_reads, client_writes) as session:
            with anyio.fail_after(ANSWER_SECONDS):
                await session.initialize()
                view = await session.call_tool("memory", {"command": "view", "path": "/memories"})
            seen["view"] = (_text(view), view.is_error)
        group.cancel_scope.cancel()
        process.kill()
    return seen


def test_lines_no_parser_takes_get_an_error_and_the_server_goes_on(root: Path) -> None:
    deep = b'{"jsonrpc":"2.0","id":"raw-deep","method":"tools/call","params":' + b"[" * 100_000 + b"\n"
    long = b'{"jsonrpc":"2.0","id":"raw-long","params":"' + b"a" * (17 << 20) + b'"}\n'
    utf8 = b'{"jsonrpc":"2.0","id":"raw-utf8","method":"ping","params":{"x":"\xff\xfe"}}\n'
    lines = [deep, long, b"\n", b"  \r\n", utf8, b"not json\n", b'{"id":"raw-x","a":1}\n']  # empty lines: no answer
    seen = anyio.run(_raw_lines_then_view, root, lines)
    got = [(answer["id"], answer["error"]["code"]) for answer in seen["answers"]]
    assert got == [("raw-deep", -32700), (None, -32700), ("raw-utf8", -32700), (None, -32700), ("raw-x", -32600)]
    assert "recursion limit" in seen["answers"][0]["error"]["message"]
    assert "at most 16777216 bytes" in seen["answers"][1]["error"]["message"]
    text, is_error = seen["view"]
    assert not is_error and text.startswith("Here're the files and directories up to 2 levels deep in /memories")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"jsonrpc":"2.0","id":7,"params":' + "[" * 1000, 7),
        ('{"params":{"id":1},"id":"a\\"b","x":[', 'a"b'),
        ('{"params":{"id":1}}', None),
        ('{"id":[1]}', None),
        ('{"id":1.5}', None),
        ('{"x":"unterminated', None),
        ('[{"id":1}]', None),
        ('{"a":"\\"id\\":3","id":4}', 4),
    ],
)
def test_the_id_of_a_refused_line(text: str, found: Any) -> None:
    from refmem_mcp.stdio import request_id

    assert request_id(text) == found


async def _deep_http(url: str) -> Dict[str, Any]:
    seen: Dict[str, Any] = {}
    async with httpx2.AsyncClient() as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await _deep_then_view(session, seen)
    return seen


def test_http_answers_deep_and_over_long_bodies(root: Path) -> None:
    port = _free_port()
    process = _serve_http(["--root", str(root), "--port", str(port)])
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        seen = anyio.run(_deep_http, url)
        code, message = seen["deep"]
        assert code == -32700 and "recursion limit" in message
        assert seen["view"][0].startswith("Here're the files and directories") and not seen["view"][1]
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        long = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (17 << 20) + b'"}}'
        stated = httpx2.post(url, content=long, headers=headers, timeout=ANSWER_SECONDS)
        chunked = httpx2.post(url, content=iter([long[i:i + 65536] for i in range(0, len(long), 65536)]),
                              headers=headers, timeout=ANSWER_SECONDS)
        for answer in (stated, chunked):
            assert answer.status_code == 413
            assert answer.json()["error"]["code"] == -32700 and "at most 16777216 bytes" in answer.text
    finally:
        process.terminate()
        process.wait(timeout=30)
