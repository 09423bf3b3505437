"""The tables of bounds (refmem.limits.Bounds): `Limits` and `OpenClawLimits` share one shape, checked when made,
made as well from a mapping of their fields, refusing with the messages of refmem/messages.py."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Type

import pytest

from refmem import MemoryHandler
from refmem.limits import DEFAULT_LIMITS, Bounds, Limits
from refmem.openclaw import DEFAULT_OPENCLAW_LIMITS, OpenClawLimits, OpenClawMemory


@pytest.mark.parametrize(
    ("table", "values", "message"),
    [
        (Limits, {"max_depth": 0}, "Limits.max_depth must be a positive integer"),
        (Limits, {"max_depth": True}, "Limits.max_depth must be a positive integer"),
        (Limits, {"max_view_chars": "60"}, "Limits.max_view_chars must be a positive integer"),
        (Limits, {"max_lines": 1.5}, "Limits.max_lines must be a positive integer"),
        (Limits, {"max_name_bytes": 256}, "Limits.max_name_bytes cannot exceed 255 (NAME_MAX)"),
        (OpenClawLimits, {"half_life_days": -1}, "OpenClawLimits.half_life_days must be a non-negative integer"),
        (
            OpenClawLimits,
            {"mmr_lambda_percent": False},
            "OpenClawLimits.mmr_lambda_percent must be a non-negative integer",
        ),
        (OpenClawLimits, {"get_max_chars": 0}, "OpenClawLimits.get_max_chars must be positive"),
        (OpenClawLimits, {"search_max_results": 0}, "OpenClawLimits.search_max_results must be positive"),
    ],
)
def test_a_bad_bound_is_refused_with_its_message(table: Type[Bounds], values: Dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as made:
        table(**values)
    assert str(made.value) == message
    with pytest.raises(ValueError) as mapped:
        table.from_mapping(values)
    assert str(mapped.value) == message


def test_the_floors_differ_where_the_tables_need_them() -> None:
    assert OpenClawLimits(half_life_days=0, fallback_terms=0).half_life_days == 0
    assert Limits(max_name_bytes=255, max_depth=1).max_depth == 1


def test_a_subclass_keeps_the_tables_name_in_its_messages() -> None:
    @dataclasses.dataclass(frozen=True)
    class Tighter(Limits):
        max_depth: int = 4

    with pytest.raises(ValueError, match=r"^Limits\.max_lines must be a positive integer$"):
        Tighter(max_lines=0)


@pytest.mark.parametrize(("table", "default"), [(Limits, DEFAULT_LIMITS), (OpenClawLimits, DEFAULT_OPENCLAW_LIMITS)])
def test_from_mapping_keeps_the_defaults_of_fields_not_named(table: Type[Bounds], default: Bounds) -> None:
    assert table.from_mapping(default) is default
    assert table.from_mapping({}) == default
    first = dataclasses.fields(table)[0].name
    changed = table.from_mapping({first: 7})
    assert getattr(changed, first) == 7
    assert dataclasses.replace(changed, **{first: getattr(default, first)}) == default
    with pytest.raises(TypeError):
        table.from_mapping({"no_such_bound": 1})


def test_the_tools_take_the_mapping_form(tmp_path: Any) -> None:
    handler = MemoryHandler(tmp_path / "m", limits={"max_view_chars": 100})
    created = handler.execute({"command": "create", "path": "/memories/memory/a.md", "file_text": "x" * 300})
    assert not created.is_error
    assert "was cut at 93." in handler.execute({"command": "view", "path": "/memories/memory/a.md"}).output
    memory = OpenClawMemory(tmp_path / "m", limits={"get_max_chars": 10}, path_limits={"max_depth": 3})
    assert memory.limits.get_max_chars == 10 and memory.path_limits.max_depth == 3
    assert memory.memory_get("memory/a.md")["text"].startswith("x" * 10)
