"""One way to reach an implementation of the memory tool, shared by the conformance runner and the fuzzer.

    target = open_target("refmem" | "refmem+sqlite" | "refmem+postgres" | "python:MODULE:CALLABLE" | "cmd:LINE", root)
    step = target.execute({"command": "view", "path": "/memories"})   # -> StepResult
    target = open_target(spec, root, tools=("memory_get", "memory_search"))   # other tools (OpenClaw's)
    step = target.execute({"path": "MEMORY.md"}, tool="memory_get")           # step.result: the tool's object
    target.reset(new_root)   # a fresh handler on a new root (restarts a crashed adapter)
    target.reset(new_root, {"read_only": True})   # configured (only options in target.options)
    target.close()

A target never raises for anything an implementation does while executing a command: a crash, a hang
or an exception becomes a `StepResult` flag, so one bad case never stops a run. `TargetError` is raised
only when a target cannot be opened or started at all (a usage or adapter failure).

Standard library only: the fuzzer imports this module inside its harness.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import pathlib
import queue
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from refmem import protocol as P  # the protocol's vocabulary: an in-process tool answers in its terms

from . import adapter_wire as wire
from . import signalling
from .adapter_client import AdapterTarget, ProtocolViolation, step_from_reply
from .signalling import ErrorPrefix
from .target_base import (
    DEFAULT_STEP_TIMEOUT,
    MESSAGE_CHARS,
    NAME_CHARS,
    OPTION_NAMES,
    STORAGE_KINDS,
    TOOL_MEMORY,
    CallTime,
    Options,
    StepResult,
    Target,
    TargetError,
    clipped,
    described,
    implementation_info,
)

__all__ = [
    "DEFAULT_STEP_TIMEOUT",
    "OPTION_NAMES",
    "STORAGE_KINDS",
    "TOOL_MEMORY",
    "InProcessTarget",
    "Options",
    "StepResult",
    "Target",
    "TargetError",
    "implementation_info",
    "open_target",
    "option_converters",
]


# ---------------------------------------------------------------------------------------------------
# In-process targets (the embedded reference and python:MODULE:CALLABLE)


def _method(handler: Any) -> Callable[[Any], Any]:
    """The handler's entry point: `call` first (on an SDK tool it takes the raw input, while its `execute`
    takes a parsed model), then `execute`, then the handler itself when it is a plain callable."""
    for name in ("call", "execute"):
        found = getattr(handler, name, None)
        if callable(found):
            return found  # type: ignore[no-any-return]
    if callable(handler) and not inspect.isclass(handler):
        return handler  # type: ignore[no-any-return]
    raise TargetError("the handler has neither call(input) nor execute(input) and is not callable")


ToolCall = Callable[[str, Any], Any]


def declared_tools(handler: Any) -> Tuple[Tuple[str, ...], Optional[ToolCall]]:
    """(the tools a handler runs, its `run_tool`): the memory tool alone, unless it has `run_tool(tool, input)`
    and names its tools in `tools` (the protocol's names; the memory tool among them only if it runs it too)."""
    run_tool = getattr(handler, "run_tool", None)
    if not callable(run_tool):
        return (TOOL_MEMORY,), None
    names = getattr(handler, "tools", None)
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(name, str) and name for name in names):
        raise TargetError("a handler with run_tool(tool, input) names the tools it runs in `tools`, a list of names")
    return tuple(dict.fromkeys(names)), run_tool


def call_tool(run_tool: ToolCall, tool: str, input: Any) -> StepResult:
    """One call of a tool other than the memory tool: `run_tool(tool, input)` answers with the protocol's execute
    reply fields (`output`, `is_error`, and `result`, `raised` when it has them), which are read as an adapter's
    reply is, after the trip through JSON the protocol would make (bounded, plain data). Never raises."""
    try:
        reply = signalling.settle(run_tool(tool, input))
    except Exception as exc:  # noqa: BLE001 - every exception is read, never a runner crash
        return StepResult(repr(exc), True, raised=True, detail=traceback.format_exc())
    except SystemExit as exc:
        return StepResult("", True, crashed=True, detail=f"the implementation called exit({exc.code!r})")
    try:
        if not isinstance(reply, dict):
            raise ProtocolViolation(f"a tool's reply must be an object, got {P.json_type(reply)}")
        return step_from_reply(wire.decode(P.encode_message(reply).encode("ascii")))
    except (ProtocolViolation, wire.Unreadable, TypeError, ValueError, RecursionError) as exc:
        detail = f"the tool's reply is not one the protocol can carry: {clipped(exc, MESSAGE_CHARS)}"
        return StepResult(f"unsupported reply to {clipped(tool, NAME_CHARS)}", True, raised=True, detail=detail)


class _Worker:
    """A daemon thread that runs calls so that a hung one can be abandoned after a timeout."""

    def __init__(self) -> None:
        self._inbox: queue.Queue[Tuple[Callable[[], StepResult], queue.Queue[StepResult]]] = queue.Queue()
        threading.Thread(target=self._loop, name="conformance-target", daemon=True).start()

    def _loop(self) -> None:
        while True:
            job, box = self._inbox.get()
            box.put(job())

    def run(self, job: Callable[[], StepResult], timeout: float) -> Optional[StepResult]:
        box: queue.Queue[StepResult] = queue.Queue(maxsize=1)
        self._inbox.put((job, box))
        try:
            return box.get(timeout=timeout)
        except queue.Empty:
            return None


class InProcessTarget(Target):
    """An object built by `factory(root, **options)` whose `call`/`execute` (or itself) runs one input.

    With a timeout, each call runs on a worker thread; a call that overruns is abandoned (Python cannot
    kill a thread) and the next reset builds a new object. `timeout=None` calls directly on the caller's
    thread, which is what a fuzzer wants. `rules` says how plain results and exceptions are read
    (refmem_harness/signalling.py). An object that runs other tools says so with `tools` and `run_tool`
    (`declared_tools`). An object with `close()` is closed when the next one replaces it and when the target
    closes, unless a call on it was abandoned (it may still be running).
    """

    def __init__(
        self,
        spec: str,
        factory: Callable[..., Any],
        root: pathlib.Path,
        implementation: Dict[str, str],
        timeout: Optional[float],
        converters: Optional[Mapping[str, Callable[[Any], Any]]] = None,
        rules: Optional[signalling.Convention] = None,
    ) -> None:
        self.spec = spec
        self._factory = factory
        self._timeout = timeout
        self._worker: Optional[_Worker] = None
        self._converters = dict(converters or {})
        self.options = frozenset(name for name in self._converters if name != TENANT)
        self.tenants = TENANT in self._converters
        """The factory takes `tenant=` (the deployment tier's tenants check; a reset may then carry one)."""
        self.rules = rules or signalling.Convention()
        self.implementation = implementation
        self._handler: Any = None
        self._call: Optional[Callable[[Any], Any]] = None
        self._run_tool: Optional[ToolCall] = None
        self._abandoned = False
        self.reset(root)
        declared = getattr(self._handler, "implementation", None)
        self.implementation = described(declared if isinstance(declared, dict) and declared else implementation)
        self.storage = str(getattr(self._handler, "storage", None) or getattr(factory, "storage", "filesystem"))
        self.shared = self.storage == "filesystem" or bool(
            getattr(self._handler, "shared", None) or getattr(factory, "shared", False)
        )
        """Handlers built on one root by several processes share what they store: always for a target that
        stores in the root; a target with its own storage says so with `shared = True` (the deployment tier)."""
        if self.storage not in STORAGE_KINDS:
            storage = clipped(self.storage, MESSAGE_CHARS)
            raise TargetError(f"{spec}: storage must be one of {STORAGE_KINDS}, not {storage}")

    def reset(self, root: pathlib.Path, options: Options = None) -> None:
        missing = next((name for name in options or {} if name not in self._converters), None)
        if missing is not None:
            raise TargetError(f"{self.spec}: option {missing} not supported")
        self._release()
        try:
            kwargs = {name: self._converters[name](value) for name, value in (options or {}).items()}
            self._handler = signalling.settle(self._factory(root, **kwargs))
        except Exception as exc:  # noqa: BLE001
            raise TargetError(f"{self.spec}: building the handler failed: {clipped(repr(exc), MESSAGE_CHARS)}") from exc
        try:
            self.tools, self._run_tool = declared_tools(self._handler)
            self._call = _method(self._handler) if TOOL_MEMORY in self.tools else None
        except TargetError as exc:
            raise TargetError(f"{self.spec}: {exc}") from None

    def execute(self, input: Any, tool: str = TOOL_MEMORY) -> StepResult:
        job = self._job(input, tool)
        if job is None:
            detail = f"{self.spec} does not run the tool {clipped(tool, NAME_CHARS)}"
            return StepResult("", True, crashed=True, detail=detail)
        job = self._clocked(job)
        if self._timeout is None:
            return job()
        if self._worker is None:
            self._worker = _Worker()
        result = self._worker.run(job, self._timeout)
        if result is not None:
            return result
        self._worker = None  # abandoned with the hung call
        self._abandoned = True
        return StepResult("", True, timed_out=True, detail=f"no result within {self._timeout:g}s")

    def _job(self, input: Any, tool: str) -> Optional[Callable[[], StepResult]]:
        """The call that runs `input` as `tool`; None for a tool the handler does not run."""
        call, run_tool, rules = self._call, self._run_tool, self.rules
        if tool == TOOL_MEMORY and call is not None:
            return lambda: signalling.call(call, input, rules)
        if tool in self.tools and run_tool is not None:
            return lambda: call_tool(run_tool, tool, input)
        return None

    def _clocked(self, job: Callable[[], StepResult]) -> Callable[[], StepResult]:
        """`job`, timing itself into a new `last_call` on whichever thread runs it."""
        clock = self.last_call = CallTime()

        def run() -> StepResult:
            started = time.thread_time()
            try:
                return job()
            finally:
                clock.seconds = time.thread_time() - started

        return run

    def _release(self) -> None:
        """Close the handler being replaced, unless a call on it was abandoned (it may still be running)."""
        handler, abandoned = self._handler, self._abandoned
        self._handler, self._abandoned = None, False
        close = getattr(handler, "close", None)
        if handler is not None and not abandoned and callable(close):
            with contextlib.suppress(Exception):  # a handler that fails to close is done with all the same
                close()

    def close(self) -> None:
        self._release()


def _import_callable(spec: str, module_name: str, attr_path: str) -> Tuple[Any, Callable[..., Any]]:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name.split(".")[0] or os.getcwd() in sys.path:
            raise TargetError(f"{spec}: cannot import {module_name}: {exc}") from exc
        sys.path.insert(0, os.getcwd())  # a console script does not look in the working directory
        return _import_callable(spec, module_name, attr_path)
    except Exception as exc:  # noqa: BLE001
        raise TargetError(f"{spec}: importing {module_name} failed: {exc!r}") from exc
    value: Any = module
    for part in attr_path.split("."):
        value = getattr(value, part, None)
        if value is None:
            raise TargetError(f"{spec}: {module_name} has no attribute {attr_path}")
    if not callable(value):
        raise TargetError(f"{spec}: {module_name}:{attr_path} is not callable")
    return module, value


def _module_info(module: Any, language: str = "python") -> Dict[str, str]:
    declared = getattr(module, "IMPLEMENTATION", None)
    if isinstance(declared, dict):
        return described(declared)
    return described(implementation_info(module.__name__, language, str(getattr(module, "__version__", ""))))


OPTION_VALUES: Dict[str, Callable[[Any], Any]] = {
    "read_only": bool,
    "allow": list,
    "limits": dict,
    "content_policy": str,
}
"""How a case's option value reaches a python target: as the case format states it (CASE-FORMAT.md), plain
data. `limits` is a dict of the limit names the case schema lists; `content_policy` is "reject" or "redact"."""


TENANT = "tenant"
"""The keyword a factory names to serve one tenant's memories (the deployment tier's tenants check; the
protocol's `tenant`); never a case option."""


def option_converters(factory: Callable[..., Any]) -> Dict[str, Callable[[Any], Any]]:
    """The options `factory` accepts as keyword arguments, each with how a case's value becomes its argument
    (and `tenant`, a name as a string, when it takes one)."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    accepted = {name for name, parameter in parameters.items() if parameter.kind in keyword}
    values = dict(OPTION_VALUES, **{TENANT: str})
    return {name: convert for name, convert in values.items() if name in accepted}


Tools = Tuple[str, ...]


def _python_target(
    spec: str, root: pathlib.Path, timeout: Optional[float], error_prefix: ErrorPrefix, tools: Tools
) -> Target:
    module_name, _, attr_path = spec[len("python:") :].partition(":")
    if not module_name or not attr_path:
        raise TargetError(f"{spec}: expected python:MODULE:CALLABLE")
    module, factory = _import_callable(spec, module_name, attr_path)
    try:
        rules = signalling.convention(getattr(module, signalling.DECLARATION, None), error_prefix)
    except TargetError as exc:
        raise TargetError(f"{spec}: {exc}") from None
    return InProcessTarget(spec, factory, root, _module_info(module), timeout, option_converters(factory), rules)


def _reference_target(
    spec: str, root: pathlib.Path, timeout: Optional[float], error_prefix: ErrorPrefix, tools: Tools
) -> Target:
    """The memory handler, or `refmem.openclaw`'s tools when those are the tools asked for (not both at once:
    `refmem serve` runs all three over one root)."""
    if TOOL_MEMORY in tools and len(tools) > 1:
        raise TargetError(f"{spec}: the embedded reference runs the memory tool or OpenClaw's tools, not both in one "
                          "target (cmd:refmem serve runs all three)")
    if TOOL_MEMORY not in tools:
        module, factory = _import_callable(spec, f"{__package__}.reference_target", "make_openclaw")
        info = implementation_info("refmem.openclaw", "python", module.version())
        return InProcessTarget(spec, factory, root, info, timeout)
    return _embedded_reference(spec, "reference_target", root, timeout, error_prefix)


def _embedded_reference(
    spec: str, module_name: str, root: pathlib.Path, timeout: Optional[float], error_prefix: ErrorPrefix
) -> Target:
    """The memory handler made by `make` of this package's `module_name`, with the reference's options (and
    `tenant=` where that `make` takes it)."""
    module, factory = _import_callable(spec, f"{__package__}.{module_name}", "make")
    check = getattr(module, "check_environment", None)
    problem = check() if callable(check) else None
    if problem:
        raise TargetError(f"{spec}: {problem}")
    info = implementation_info("refmem", "python", module.version())
    converters = option_converters(factory)
    return InProcessTarget(spec, factory, root, info, timeout, converters, signalling.convention(None, error_prefix))


def _reference_sqlite_target(
    spec: str, root: pathlib.Path, timeout: Optional[float], error_prefix: ErrorPrefix, tools: Tools
) -> Target:
    """The memory handler over the SQLite store (refmem_harness/reference_sqlite_target.py): its own storage."""
    return _embedded_reference(spec, "reference_sqlite_target", root, timeout, error_prefix)


def _reference_postgres_target(
    spec: str, root: pathlib.Path, timeout: Optional[float], error_prefix: ErrorPrefix, tools: Tools
) -> Target:
    """The memory handler over the PostgreSQL store (refmem_harness/reference_postgres_target.py): its own storage, in
    the database the environment names."""
    return _embedded_reference(spec, "reference_postgres_target", root, timeout, error_prefix)


def _command_target(
    spec: str, root: pathlib.Path, timeout: Optional[float], error_prefix: ErrorPrefix, tools: Tools
) -> Target:
    return AdapterTarget(spec, spec[len("cmd:") :], root, timeout or DEFAULT_STEP_TIMEOUT)


def _mcp_target(
    spec: str, root: pathlib.Path, timeout: Optional[float], error_prefix: ErrorPrefix, tools: Tools
) -> Target:
    """An MCP server through the `mcp` SDK's client (refmem_harness/mcp_target.py, imported only here)."""
    from .mcp_target import open_mcp

    return open_mcp(spec, root, timeout)


_KINDS: Dict[str, Callable[[str, pathlib.Path, Optional[float], ErrorPrefix, Tools], Target]] = {
    "refmem": _reference_target,
    "refmem+sqlite": _reference_sqlite_target,
    "refmem+postgres": _reference_postgres_target,
    "python:": _python_target,
    "cmd:": _command_target,
    "mcp:": _mcp_target,
}


def open_target(
    spec: str,
    root: pathlib.Path,
    timeout: Optional[float] = DEFAULT_STEP_TIMEOUT,
    *,
    error_prefix: ErrorPrefix = None,
    tools: Sequence[str] = (TOOL_MEMORY,),
) -> Target:
    """Open the target named by `spec` on `root`: `refmem`, `python:MODULE:CALLABLE` or `cmd:COMMAND LINE`.

    The callable of a python target is called with the root directory (a `pathlib.Path`) and returns an
    object with `call(input)` or `execute(input)` (tried in that order), or a callable; sync or async. How its
    results and exceptions are read is refmem_harness/signalling.py: an SDK `ToolError` is an error result, a
    result may carry `is_error` in any of the usual shapes, and plain strings follow the module's
    `SIGNALLING` declaration or `error_prefix`. Any other exception is an error result with its message as
    text, flagged `raised` (a robustness finding).
    The object (or its module, as `IMPLEMENTATION`) may describe itself with an `implementation` dict,
    and the object or the factory with a `storage` of "filesystem" (default) or "own".
    A case's `options` (read_only, allow, limits, content_policy) reach a python target as keyword
    arguments of the callable, as plain data, and only those its signature names; cases using any other are
    skipped. `error_prefix` applies to in-process targets; an adapter states is_error in every reply.
    `tools` are the tools the caller will run (default: the memory tool): a target that does not run them all
    is refused, and the embedded reference is built to run them (`refmem.openclaw` for OpenClaw's).
    """
    wanted = tuple(dict.fromkeys(tools))
    for prefix, opener in _KINDS.items():
        if spec == prefix or (prefix.endswith(":") and spec.startswith(prefix)):
            target = opener(spec, pathlib.Path(root), timeout, error_prefix, wanted)
            missing = [tool for tool in wanted if tool not in target.tools]
            if missing:
                target.close()
                runs = clipped(", ".join(target.tools), MESSAGE_CHARS)
                raise TargetError(f"{spec}: does not run {', '.join(missing)}; it runs {runs}")
            return target
    raise TargetError(
        f"unknown target {spec!r}: use refmem, refmem+sqlite, refmem+postgres, python:MODULE:CALLABLE, "
        "cmd:COMMAND LINE or mcp:stdio:COMMAND LINE / mcp:http://HOST:PORT/PATH"
    )
