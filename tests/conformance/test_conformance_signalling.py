"""How results and errors of a python target are read: every usual shape, declared conventions, exceptions, async."""

from __future__ import annotations

import asyncio
import pathlib
import types
from typing import Any

import pytest

from refmem_harness import signalling
from refmem_harness.signalling import Convention, convention
from refmem_harness.target_base import TargetError
from refmem_harness.targets import InProcessTarget


class ToolError(Exception):
    """Stands in for the SDKs' ToolError (recognised by name)."""


class BackendError(Exception):
    pass


def _read(value: Any, rules: Convention = Convention()) -> tuple:
    result = signalling.call(lambda _input: value, {}, rules)
    return result.output, result.is_error, result.raised


@pytest.mark.parametrize(
    "value, expected",
    [
        ("plain text", ("plain text", False, False)),
        (("text", True), ("text", True, False)),
        ({"content": "c", "is_error": True}, ("c", True, False)),
        ({"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}, ("ab", False, False)),
        ([{"type": "text", "text": "x"}], ("x", False, False)),
        (types.SimpleNamespace(output="o", is_error=True), ("o", True, False)),
        (types.SimpleNamespace(content=[types.SimpleNamespace(type="text", text="t")], is_error=False), ("t", False, False)),
    ],
)
def test_every_usual_result_shape_is_read(value: Any, expected: tuple) -> None:
    assert _read(value) == expected


def test_an_unreadable_result_is_a_robustness_finding() -> None:
    assert _read(42) == ("unsupported result int", True, True)


def test_plain_strings_follow_the_declared_prefix() -> None:
    rules = convention({"error_prefix": ["Error:", "The path"]})
    assert _read("Error: no", rules)[1] and _read("The path x does not exist", rules)[1]
    assert not _read("File created", rules)[1]
    assert not _read(("Error: explicit flag wins", False), rules)[1]
    assert convention(None, "ERR").text_is_error("ERR x")


def test_exceptions_tool_error_and_declared_classes_are_signals_others_are_robustness() -> None:
    def raising(exc: Exception) -> Any:
        def method(_input: Any) -> Any:
            raise exc

        return method

    assert signalling.call(raising(ToolError("nope")), {}, Convention()).raised is False
    declared = convention({"error_exceptions": ["BackendError"]})
    result = signalling.call(raising(BackendError("Error: gone")), {}, declared)
    assert (result.output, result.is_error, result.raised) == ("Error: gone", True, False)
    result = signalling.call(raising(BackendError("Error: gone")), {}, Convention())
    # not declared: shown as the SDKs' tool runners show it, and a robustness finding
    assert (result.output, result.is_error, result.raised) == ("BackendError('Error: gone')", True, True)
    assert "BackendError" in result.detail


def test_coroutines_and_async_methods_are_awaited() -> None:
    async def handle(input: Any) -> Any:
        await asyncio.sleep(0)
        return ("async " + input["command"], False)

    result = signalling.call(handle, {"command": "view"}, Convention())
    assert (result.output, result.is_error) == ("async view", False)


def test_a_bad_declaration_is_a_usage_error() -> None:
    for declared in ("Error:", {"error_prefix": ""}, {"prefix": "Error:"}, {"error_exceptions": [3]}):
        with pytest.raises(TargetError):
            convention(declared)


def test_an_async_factory_and_a_plain_callable_handler_work(tmp_path: pathlib.Path) -> None:
    async def factory(root: pathlib.Path) -> Any:
        return lambda input: f"seen {input['path']}"

    target = InProcessTarget("python:x:y", factory, tmp_path, {"name": "x"}, timeout=None)
    assert target.execute({"command": "view", "path": "/memories"}).output == "seen /memories"


def test_the_documentations_own_error_strings_need_a_prefix_list_and_one_pattern() -> None:
    """The line-limit error and the create success both start with "File ": no prefix tells them apart."""
    rules = convention(
        {"error_prefix": ["Error:", "The path", "No replacement"], "error_pattern": r"File .+ exceeds maximum line limit"},
        ["Invalid", "Parameter"],
    )
    for text in (
        "The path /memories/x does not exist. Please provide a valid path.",
        "No replacement was performed, old_str `a` did not appear verbatim in /memories/x.",
        "File /memories/big.txt exceeds maximum line limit of 999,999 lines.",
        "Invalid `view_range`. It should be a list of two integers.",
        "Parameter `file_text` is required for command: create",
    ):
        assert rules.text_is_error(text), text
    for text in ("File created successfully at: /memories/x", "Here's the content of /memories/x with line numbers:"):
        assert not rules.text_is_error(text), text
    # the pattern sees a bounded first line only: a huge output costs nothing more to read
    assert not rules.text_is_error("File " + "x" * 10_000_000 + " exceeds maximum line limit")
    with pytest.raises(TargetError):
        convention({"error_pattern": "("})
