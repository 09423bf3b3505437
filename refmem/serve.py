"""The adapter protocol, server side: the reference handler driven by JSON lines on stdin and stdout.

One request per line in, at most one reply per line out (conformance/PROTOCOL.md). A line that cannot be
understood gets an error reply and the server carries on; only `stop` or the end of input ends it.
Run it as `refmem serve` or `python -m refmem.serve`. Standard library only.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import sys
import traceback
from typing import Any, Callable, Dict, Optional, TextIO

PROTOCOL_VERSION = 1
HOMEPAGE = ""
OPTIONS = ("read_only", "allow", "limits", "content_policy")
"""Every handler option a `reset` may carry; all are listed in the `start` reply."""


class _Refusal(Exception):
    """A request this server answers with an error object instead of doing it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Session:
    """What the server remembers between lines: whether `start` was seen, and the current handler."""

    def __init__(self) -> None:
        self.started = False
        self.handler: Optional[Any] = None
        self.stopped = False


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return ""
    try:
        return version("refmem")
    except PackageNotFoundError:
        return ""


def _start(session: _Session, request: Dict[str, Any]) -> Dict[str, Any]:
    version = request.get("version")
    if version != PROTOCOL_VERSION:
        return {
            "ready": False,
            "version": PROTOCOL_VERSION,
            "error": {
                "code": "unsupported-version",
                "message": f"this server speaks protocol version {PROTOCOL_VERSION}, not {version!r}",
            },
        }
    session.started = True
    return {
        "ready": True,
        "version": PROTOCOL_VERSION,
        "implementation": {"name": "refmem", "language": "python", "version": _version(), "homepage": HOMEPAGE},
        "storage": "filesystem",
        "options": list(OPTIONS),
    }


def _handler_options(options: Any) -> Dict[str, Any]:
    """MemoryHandler keyword arguments for a `reset` request's `options`; refuses what it cannot build."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise _Refusal("bad-request", "`options` must be an object")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise _Refusal("bad-request", f"unknown option {unknown[0]!r:.80}")
    from refmem.limits import Limits
    from refmem.policy import ContentPolicy

    kwargs: Dict[str, Any] = {}
    if "read_only" in options:
        if not isinstance(options["read_only"], bool):
            raise _Refusal("bad-request", "option read_only must be true or false")
        kwargs["read_only"] = options["read_only"]
    if "allow" in options:
        allow = options["allow"]
        if not isinstance(allow, list) or not all(isinstance(pattern, str) for pattern in allow):
            raise _Refusal("bad-request", "option allow must be a list of glob strings")
        kwargs["allow"] = list(allow)
    if "limits" in options:
        if not isinstance(options["limits"], dict):
            raise _Refusal("bad-request", "option limits must be an object")
        try:
            kwargs["limits"] = Limits(**options["limits"])
        except (TypeError, ValueError) as exc:
            raise _Refusal("bad-request", f"option limits: {exc}") from None
    if "content_policy" in options:
        try:
            kwargs["content_policy"] = ContentPolicy(options["content_policy"])
        except ValueError as exc:
            raise _Refusal("bad-request", f"option content_policy: {exc}") from None
    return kwargs


def _reset(session: _Session, request: Dict[str, Any]) -> Dict[str, Any]:
    root = request.get("root")
    if not isinstance(root, str) or not os.path.isabs(root):
        raise _Refusal("bad-request", "reset needs an absolute directory path in `root`")
    if not os.path.isdir(root):
        raise _Refusal("bad-root", "the root is not an existing directory")
    import refmem  # late: the package imports this module's siblings, not the other way round

    session.handler = None  # a refused reset leaves no handler from an earlier case behind
    kwargs = _handler_options(request.get("options"))
    try:
        session.handler = refmem.MemoryHandler(pathlib.Path(root), **kwargs)
    except Exception as exc:  # noqa: BLE001 - reported, never fatal
        session.handler = None
        raise _Refusal("reset-failed", f"the handler could not be built: {type(exc).__name__}") from exc
    return {"ok": True}


def _execute(session: _Session, request: Dict[str, Any]) -> Dict[str, Any]:
    if session.handler is None:
        raise _Refusal("no-root", "send reset before execute")
    if "input" not in request:
        raise _Refusal("bad-request", "execute needs an `input`")
    try:
        result = session.handler.execute(request["input"])
    except Exception:  # noqa: BLE001 - the handler promises never to raise; a broken promise is a finding
        return {"output": "", "is_error": True, "raised": traceback.format_exc()}
    return {"output": result.output, "is_error": bool(result.is_error)}


def _stop(session: _Session, request: Dict[str, Any]) -> Dict[str, Any]:
    session.stopped = True
    return {}


_COMMANDS: Dict[str, Callable[[_Session, Dict[str, Any]], Dict[str, Any]]] = {
    "start": _start,
    "reset": _reset,
    "execute": _execute,
    "stop": _stop,
}

_NEEDS_START = {"reset", "execute"}


def _error(code: str, message: str, seq: Any = None) -> Dict[str, Any]:
    reply: Dict[str, Any] = {} if seq is None else {"seq": seq}
    reply["error"] = {"code": code, "message": message}
    return reply


def handle_line(session: _Session, line: str) -> Optional[Dict[str, Any]]:
    """The reply to one request line, or None when nothing is to be written (a blank line, `stop`)."""
    if not line.strip():
        return None
    try:
        request = json.loads(line)
    except ValueError:
        return _error("bad-json", "the line is not JSON")
    if not isinstance(request, dict):
        return _error("bad-request", "a request must be a JSON object")
    seq = request.get("seq")
    if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool)):
        return _error("bad-request", "`seq` must be an integer")
    command = _COMMANDS.get(request.get("cmd"))  # type: ignore[arg-type]
    if command is None:
        return _error("unknown-cmd", f"unknown cmd {request.get('cmd')!r:.80}", seq)
    if request["cmd"] in _NEEDS_START and not session.started:
        return _error("not-started", "send start first", seq)
    try:
        reply = command(session, request)
    except _Refusal as refusal:
        return _error(refusal.code, refusal.message, seq)
    except Exception as exc:  # noqa: BLE001 - never crash on a line
        return _error("internal", f"the server failed on this request: {type(exc).__name__}", seq)
    if session.stopped:
        return None
    return reply if seq is None else dict({"seq": seq}, **reply)


def _encode(reply: Dict[str, Any]) -> str:
    """One JSON line in ASCII escapes (any string, lone surrogates included, survives any pipe)."""
    try:
        return json.dumps(reply)
    except (TypeError, ValueError):
        return json.dumps(_error("internal", "the reply could not be encoded as JSON", reply.get("seq")))


def serve(stdin: TextIO, stdout: TextIO) -> int:
    """Answer requests from `stdin` on `stdout` until `stop` or end of input; returns the exit status."""
    session = _Session()
    for line in stdin:
        reply = handle_line(session, line)
        if reply is not None:
            stdout.write(_encode(reply) + "\n")
            stdout.flush()
        if session.stopped:
            break
    return 0


def main() -> int:
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    return serve(stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
