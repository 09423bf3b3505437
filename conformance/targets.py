"""One way to reach an implementation of the memory tool, shared by the conformance runner and the fuzzer.

    target = open_target("refmem" | "python:MODULE:CALLABLE" | "cmd:COMMAND LINE", root)
    step = target.execute({"command": "view", "path": "/memories"})   # -> StepResult
    target.reset(new_root)   # a fresh handler on a new root (restarts a crashed adapter)
    target.reset(new_root, {"read_only": True})   # configured (only options in target.options)
    target.close()

A target never raises for anything an implementation does while executing a command: a crash, a hang
or an exception becomes a `StepResult` flag, so one bad case never stops a run. `TargetError` is raised
only when a target cannot be opened or started at all (a usage or adapter failure).

Standard library only: the fuzzer imports this module inside its harness.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import pathlib
import queue
import sys
import threading
import traceback
from typing import Any, Callable, Dict, FrozenSet, Mapping, Optional, Tuple

DEFAULT_STEP_TIMEOUT = 10.0
"""Seconds one command may take before the target counts as hung."""

STORAGE_KINDS = ("filesystem", "own")
"""`filesystem`: the target stores under the root it is given; `own`: it keeps its own storage."""


OPTION_NAMES = ("read_only", "allow", "limits", "content_policy")
"""Handler options a case may set (CASE-FORMAT.md `options`); a target lists those it honours."""

Options = Optional[Mapping[str, Any]]


class TargetError(Exception):
    """The target could not be opened, started or reset: nothing can be run against it."""


@dataclasses.dataclass(frozen=True)
class StepResult:
    """What one command produced, and whether the implementation misbehaved while producing it."""

    output: str
    is_error: bool
    crashed: bool = False
    """The implementation's process died, or broke the adapter protocol, during the command."""
    timed_out: bool = False
    """The command took longer than the step timeout; an adapter process was killed."""
    raised: bool = False
    """The implementation raised an unexpected exception (not its designed error signal)."""
    detail: str = ""
    """For a crash, timeout or exception: what happened (traceback, stderr tail), for the report."""

    @property
    def misbehaved(self) -> bool:
        return self.crashed or self.timed_out or self.raised


class Target:
    """Base class: one implementation, reached one way. Subclasses implement the three methods."""

    spec: str = ""
    implementation: Dict[str, str] = {}
    storage: str = "filesystem"
    restarts: int = 0
    options: FrozenSet[str] = frozenset()
    """The names of OPTION_NAMES this target can configure its implementation with."""

    def execute(self, input: Any) -> StepResult:
        raise NotImplementedError

    def reset(self, root: pathlib.Path, options: Options = None) -> None:
        """A fresh implementation on `root`, configured with `options` (names from `self.options` only)."""
        raise NotImplementedError

    def unsupported(self, options: Options) -> Optional[str]:
        """The first option in `options` this target cannot honour, or None."""
        for name in options or {}:
            if name not in self.options:
                return name
        return None

    def close(self) -> None:
        """Release the target; the default has nothing to release."""

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def implementation_info(name: str, language: str, version: str = "", homepage: str = "") -> Dict[str, str]:
    return {"name": name, "language": language, "version": version, "homepage": homepage}


# ---------------------------------------------------------------------------------------------------
# In-process targets (the embedded reference and python:MODULE:CALLABLE)


def _is_tool_error(exc: BaseException) -> bool:
    """The Anthropic SDK's `ToolError` (recognised by name, so the SDK need not be installed)."""
    return any(cls.__name__ == "ToolError" for cls in type(exc).__mro__)


def _tool_error_text(exc: BaseException) -> str:
    content = getattr(exc, "content", None)
    return content if isinstance(content, str) else str(exc)


def _content_text(value: Any) -> Optional[str]:
    """A result's text: a string, or a list of content blocks whose text blocks are joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(block, dict) for block in value):
        return "".join(str(block.get("text", "")) for block in value if block.get("type") == "text")
    return None


def _interpret(value: Any) -> StepResult:
    """Turn what an in-process implementation returned into a StepResult."""
    text = _content_text(value)
    if text is not None:
        return StepResult(text, False)
    if hasattr(value, "output") and hasattr(value, "is_error"):
        output = value.output
        if isinstance(output, str) and isinstance(value.is_error, bool):
            return StepResult(output, value.is_error)
    return StepResult(
        f"unsupported result {type(value).__name__}",
        True,
        raised=True,
        detail=f"the implementation returned a {type(value).__name__}, not a string or a Result",
    )


def _call(handler: Any, input: Any) -> StepResult:
    # `call` first: on an Anthropic SDK tool it takes the raw input, while its `execute` takes a parsed model.
    method = getattr(handler, "call", None) or handler.execute
    try:
        value = method(input)
    except Exception as exc:  # noqa: BLE001 - every exception is a finding, never a runner crash
        if _is_tool_error(exc):
            return StepResult(_tool_error_text(exc), True)
        # repr(), as the Anthropic SDK's tool runner shows a tool's unexpected exception to the model.
        return StepResult(repr(exc), True, raised=True, detail=traceback.format_exc())
    return _interpret(value)


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
    """An object built by `factory(root)` with an `execute(dict)` or `call(dict)` method.

    With a timeout, each call runs on a worker thread; a call that overruns is abandoned (Python cannot
    kill a thread) and the next reset builds a new object. `timeout=None` calls directly on the caller's
    thread, which is what a fuzzer wants.
    """

    def __init__(
        self,
        spec: str,
        factory: Callable[..., Any],
        root: pathlib.Path,
        implementation: Dict[str, str],
        timeout: Optional[float],
        converters: Optional[Mapping[str, Callable[[Any], Any]]] = None,
    ) -> None:
        self.spec = spec
        self._factory = factory
        self._timeout = timeout
        self._worker: Optional[_Worker] = None
        self._converters = dict(converters or {})
        self.options = frozenset(self._converters)
        self.implementation = implementation
        self.reset(root)
        self.implementation = dict(getattr(self._handler, "implementation", None) or implementation)
        self.storage = str(getattr(self._handler, "storage", "filesystem"))
        if self.storage not in STORAGE_KINDS:
            raise TargetError(f"{spec}: storage must be one of {STORAGE_KINDS}, not {self.storage!r}")

    def reset(self, root: pathlib.Path, options: Options = None) -> None:
        missing = self.unsupported(options)
        if missing is not None:
            raise TargetError(f"{self.spec}: option {missing} not supported")
        try:
            kwargs = {name: self._converters[name](value) for name, value in (options or {}).items()}
            self._handler = self._factory(root, **kwargs)
        except Exception as exc:  # noqa: BLE001
            raise TargetError(f"{self.spec}: building the handler failed: {exc!r}") from exc
        for name in ("call", "execute"):
            if callable(getattr(self._handler, name, None)):
                return
        raise TargetError(f"{self.spec}: the handler has neither execute(dict) nor call(dict)")

    def execute(self, input: Any) -> StepResult:
        handler = self._handler
        if self._timeout is None:
            return _call(handler, input)
        if self._worker is None:
            self._worker = _Worker()
        result = self._worker.run(lambda: _call(handler, input), self._timeout)
        if result is not None:
            return result
        self._worker = None  # abandoned with the hung call
        return StepResult("", True, timed_out=True, detail=f"no result within {self._timeout:g}s")


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
        return {key: str(declared.get(key, "")) for key in ("name", "language", "version", "homepage")}
    return implementation_info(module.__name__, language, str(getattr(module, "__version__", "")))


def _refmem_class(module_name: str, name: str) -> Optional[Callable[..., Any]]:
    """A class of the reference package, imported late; None when refmem is not importable."""
    try:
        found: Optional[Callable[..., Any]] = getattr(importlib.import_module(module_name), name, None)
        return found
    except ImportError:
        return None


def _limits(value: Any) -> Any:
    cls = _refmem_class("refmem.limits", "Limits")
    assert cls is not None  # only offered when importable
    return cls(**dict(value))


def _content_policy(value: Any) -> Any:
    cls = _refmem_class("refmem.policy", "ContentPolicy")
    assert cls is not None
    return cls(str(value))


def option_converters(factory: Callable[..., Any]) -> Dict[str, Callable[[Any], Any]]:
    """The options `factory` accepts as keyword arguments, each with how a case's value becomes its argument.

    `read_only` and `allow` are passed as they are (a bool, a list of globs); `limits` and `content_policy`
    become the reference's `Limits` and `ContentPolicy` objects, so they are offered only when refmem is importable.
    """
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    accepted = {name for name, parameter in parameters.items() if parameter.kind in keyword}
    converters: Dict[str, Callable[[Any], Any]] = {}
    if "read_only" in accepted:
        converters["read_only"] = bool
    if "allow" in accepted:
        converters["allow"] = list
    if "limits" in accepted and _refmem_class("refmem.limits", "Limits") is not None:
        converters["limits"] = _limits
    if "content_policy" in accepted and _refmem_class("refmem.policy", "ContentPolicy") is not None:
        converters["content_policy"] = _content_policy
    return converters


def _python_target(spec: str, root: pathlib.Path, timeout: Optional[float]) -> Target:
    module_name, _, attr_path = spec[len("python:") :].partition(":")
    if not module_name or not attr_path:
        raise TargetError(f"{spec}: expected python:MODULE:CALLABLE")
    module, factory = _import_callable(spec, module_name, attr_path)
    return InProcessTarget(spec, factory, root, _module_info(module), timeout, option_converters(factory))


def _reference_target(spec: str, root: pathlib.Path, timeout: Optional[float]) -> Target:
    module, factory = _import_callable(spec, "refmem", "MemoryHandler")
    info = implementation_info("refmem", "python", str(getattr(module, "__version__", "")))
    converters: Dict[str, Callable[[Any], Any]] = {
        "read_only": bool,
        "allow": list,
        "limits": _limits,
        "content_policy": _content_policy,
    }
    return InProcessTarget(spec, factory, root, info, timeout, converters)


def _command_target(spec: str, root: pathlib.Path, timeout: Optional[float]) -> Target:
    from conformance.adapter_client import AdapterTarget

    return AdapterTarget(spec, spec[len("cmd:") :], root, timeout or DEFAULT_STEP_TIMEOUT)


_KINDS: Dict[str, Callable[[str, pathlib.Path, Optional[float]], Target]] = {
    "refmem": _reference_target,
    "python:": _python_target,
    "cmd:": _command_target,
}


def open_target(spec: str, root: pathlib.Path, timeout: Optional[float] = DEFAULT_STEP_TIMEOUT) -> Target:
    """Open the target named by `spec` on `root`: `refmem`, `python:MODULE:CALLABLE` or `cmd:COMMAND LINE`.

    The callable of a python target is called with the root directory (a `pathlib.Path`) and returns an
    object with `call(dict)` or `execute(dict)` (tried in that order); that method returns a string (success), a list of
    content blocks, or an object with `.output` and `.is_error`. An SDK `ToolError` is an error result;
    any other exception is an error result whose text is the exception's repr and a `raised` finding.
    The object (or its module, as `IMPLEMENTATION`) may describe itself with an `implementation` dict
    and a `storage` of "filesystem" (default) or "own".
    A case's `options` (read_only, allow, limits, content_policy) reach a python target as keyword
    arguments of the callable, and only those its signature names; cases using any other are skipped.
    """
    for prefix, opener in _KINDS.items():
        if spec == prefix or (prefix.endswith(":") and spec.startswith(prefix)):
            return opener(spec, pathlib.Path(root), timeout)
    raise TargetError(f"unknown target {spec!r}: use refmem, python:MODULE:CALLABLE or cmd:COMMAND LINE")
