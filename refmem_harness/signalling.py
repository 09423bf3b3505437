"""How an in-process implementation says "this is an error": its results and exceptions read as (text, is_error).

Implementations signal errors in many ways, and the suite judges what they do, not how they say it:

- the Anthropic SDKs' `ToolError` (recognised by class name anywhere in the exception's MRO);
- a result object with `.output` (or `.content`) and `.is_error`; a `(text, is_error)` pair; a dict with
  `content` (or `output`) and `is_error`; a list of content blocks (`{"type": "text", "text": ...}`);
- a plain string, which is a success unless the implementation declares a convention for it:

      SIGNALLING = {"error_prefix": "Error:"}          # module level, next to the factory
      SIGNALLING = {"error_prefix": ["Error:", "The path", "No replacement"], "error_exceptions": ["BackendError"]}
      SIGNALLING = {"error_prefix": [...], "error_pattern": r"File .+ exceeds maximum line limit"}

  (`--error-prefix`, repeatable, on the command line does the first). A plain string starting with one of the
  prefixes, or whose first line matches `error_pattern` from its start (a Python regular expression, for the one
  documented error a prefix cannot tell from a success: "File {path} exceeds maximum line limit..." against
  "File created successfully..."), is an error result; an exception whose class (or a base) is named in
  `error_exceptions` is an error result like a `ToolError`, not a robustness finding. The documentation's own
  error strings need `["Error:", "The path", "No replacement", "Invalid", "Parameter"]` and that pattern.

Any other exception is an error result whose text is the exception's repr, as the SDKs' tool runners show an
unexpected exception to the model, and is marked `raised`: a robustness finding, and a safety finding only when
that text leaks something (the canary, the host path).
A coroutine or other awaitable result is awaited first. Standard library only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
import traceback
from typing import Any, Callable, Mapping, Optional, Pattern, Sequence, Tuple, Union

from .target_base import StepResult, TargetError

DECLARATION = "SIGNALLING"
"""The module-level name an implementation declares its convention under."""

DESIGNED_EXCEPTIONS = ("ToolError",)
"""Exception class names that are an error signal for every implementation (the SDKs' tool error)."""


@dataclasses.dataclass(frozen=True)
class Convention:
    """How plain results and exceptions of one implementation are read."""

    error_prefixes: Tuple[str, ...] = ()
    error_exceptions: Tuple[str, ...] = ()
    error_pattern: Optional[Pattern[str]] = None

    def text_is_error(self, text: str) -> bool:
        if any(text.startswith(prefix) for prefix in self.error_prefixes):
            return True
        if self.error_pattern is None:
            return False
        first = text[:PATTERN_CHARS].split("\n", 1)[0]  # bounded: the pattern never sees a whole output
        return self.error_pattern.match(first) is not None

    def designed(self, exc: BaseException) -> bool:
        names = {cls.__name__ for cls in type(exc).__mro__}
        return bool(names & (set(DESIGNED_EXCEPTIONS) | set(self.error_exceptions)))

    def describe(self) -> str:
        parts = [f"plain strings starting with {prefix!r} are errors" for prefix in self.error_prefixes]
        if self.error_pattern is not None:
            parts.append(f"plain strings whose first line matches {self.error_pattern.pattern!r} are errors")
        parts += [f"{name} is an error signal" for name in self.error_exceptions]
        return "; ".join(parts) or "plain strings are successes"


PATTERN_CHARS = 2000
"""Characters of an output's first line that `error_pattern` is matched against at most."""


def _strings(value: Any, key: str) -> Tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) and item for item in items):
        raise TargetError(f"{DECLARATION}[{key!r}] must be a non-empty string or a list of them")
    return tuple(items)


ErrorPrefix = Union[str, Sequence[str], None]
"""`--error-prefix`: one prefix, or several (the option repeated)."""


def convention(declared: Any = None, error_prefix: ErrorPrefix = None) -> Convention:
    """The convention from a `SIGNALLING` declaration (a dict or None) and the `--error-prefix` option(s)."""
    if declared is None:
        declared = {}
    if not isinstance(declared, Mapping):
        raise TargetError(f"{DECLARATION} must be a dict such as {{'error_prefix': 'Error:'}}")
    unknown = sorted(set(declared) - {"error_prefix", "error_exceptions", "error_pattern"})
    if unknown:
        raise TargetError(
            f"{DECLARATION} has unknown keys {unknown}: use error_prefix, error_pattern and error_exceptions"
        )
    prefixes = _strings(declared["error_prefix"], "error_prefix") if "error_prefix" in declared else ()
    extra = (error_prefix,) if isinstance(error_prefix, str) else tuple(error_prefix or ())
    if any(not isinstance(item, str) or not item for item in extra):
        raise TargetError("--error-prefix must be non-empty text")
    prefixes = tuple(dict.fromkeys(prefixes + extra))
    exceptions = _strings(declared["error_exceptions"], "error_exceptions") if "error_exceptions" in declared else ()
    pattern = None
    if "error_pattern" in declared:
        (text,) = _strings(declared["error_pattern"], "error_pattern")[:1]
        try:
            pattern = re.compile(text)
        except re.error as exc:
            raise TargetError(f"{DECLARATION}['error_pattern'] is not a regular expression: {exc}") from None
    return Convention(prefixes, exceptions, pattern)


# --- results ------------------------------------------------------------------------------------


def _block_text(block: Any) -> Optional[str]:
    """The text of one content block (a dict or an SDK object); None for a block that is not text."""
    kind = block.get("type") if isinstance(block, Mapping) else getattr(block, "type", None)
    text = block.get("text") if isinstance(block, Mapping) else getattr(block, "text", None)
    return str(text) if kind == "text" and text is not None else None


def _content_text(content: Any) -> Optional[str]:
    """A string, or a list of content blocks whose text blocks are joined; None for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)) and all(
        isinstance(block, Mapping) or hasattr(block, "type") for block in content
    ):
        return "".join(text for text in map(_block_text, content) if text is not None)
    return None


def _explicit(value: Any) -> Optional[Tuple[str, bool]]:
    """(text, is_error) from a result that states is_error itself; None when it does not."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], bool):
        text = _content_text(value[0])
        return (text, value[1]) if text is not None else None
    if isinstance(value, Mapping) and isinstance(value.get("is_error"), bool):
        for key in ("content", "output"):
            if key in value:
                text = _content_text(value[key])
                return (text, value["is_error"]) if text is not None else None
        return None
    flag = getattr(value, "is_error", None)
    if isinstance(flag, bool):
        for key in ("output", "content"):
            text = _content_text(getattr(value, key, None))
            if text is not None:
                return text, flag
    return None


def interpret(value: Any, rules: Convention) -> StepResult:
    """Turn what an in-process implementation returned into a StepResult."""
    explicit = _explicit(value)
    if explicit is not None:
        return StepResult(*explicit)
    text = _content_text(value)
    if text is None and isinstance(value, Mapping):  # {"content": ...} without is_error: read like its text
        text = next((_content_text(value[key]) for key in ("content", "output") if key in value), None)
    if text is not None:
        return StepResult(text, rules.text_is_error(text))
    return StepResult(
        f"unsupported result {type(value).__name__}",
        True,
        raised=True,
        detail=f"the implementation returned a {type(value).__name__}, not a string or a result with is_error",
    )


def _exception_text(exc: BaseException) -> str:
    content = getattr(exc, "content", None)
    text = _content_text(content) if content is not None else None
    return text if text is not None else str(exc)


def settle(value: Any) -> Any:
    """`value`, awaited first when it is a coroutine or another awaitable."""
    if not inspect.isawaitable(value):
        return value

    async def wait() -> Any:
        return await value

    return asyncio.run(wait())


def call(method: Callable[[Any], Any], input: Any, rules: Convention) -> StepResult:
    """Run one command through `method`; never raises for anything the implementation does."""
    try:
        value = settle(method(input))
    except Exception as exc:  # noqa: BLE001 - every exception is read, never a runner crash
        if rules.designed(exc):
            return StepResult(_exception_text(exc), True)
        return StepResult(repr(exc), True, raised=True, detail=traceback.format_exc())
    except SystemExit as exc:  # an implementation that exits is a crash, not the end of the run
        return StepResult("", True, crashed=True, detail=f"the implementation called exit({exc.code!r})")
    return interpret(value, rules)
