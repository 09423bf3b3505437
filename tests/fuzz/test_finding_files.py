"""Finding files: the loader (fuzz/finding.py, by hand) and the published schema
(conformance/schema/fuzz-finding.schema.json) agree on good and bad files, and what the fuzzer writes it can
load again."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Callable, Dict, List, Tuple

import pytest

from refmem_harness import finding as finding_files
from refmem_harness import grow
from refmem_harness.finding import Finding, FindingError

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SCHEMA = json.loads((ROOT / "conformance" / "schema" / "fuzz-finding.schema.json").read_text(encoding="utf-8"))
COMMITTED = sorted((ROOT / "fuzz" / "findings").rglob("*.json"))
MAX_VALUE = finding_files.MAX_VALUE_CHARS


def _base(**changes: Any) -> Dict[str, Any]:
    data: Dict[str, Any] = {
        "format": "refmem-fuzz-finding/2",
        "target": "cmd:node adapter.js",
        "harness": "sequence",
        "oracle": "escape:outside-changed",
        "detail": "changed outside the root: outside/secret.txt",
        "step": None,
        "hostile_layout": True,
        "differential": False,
        "commands": [{"command": "delete", "path": "/memories/link_out/secret.txt"}],
        "observed": [{"input": {"command": "delete", "path": "/memories/link_out/secret.txt"},
                      "output": "Successfully deleted", "is_error": False}],
    }
    data.update(changes)
    return data


def _without(key: str) -> Dict[str, Any]:
    data = _base()
    del data[key]
    return data


def _repeat(unit: str, times: Any, then: Any = "", **extra: Any) -> Dict[str, Any]:
    return dict({"$repeat": unit, "times": times, "then": then}, **extra)


def _with_command(**parameters: Any) -> Dict[str, Any]:
    return _base(commands=[dict({"command": "create", "path": "/memories/a"}, **parameters)])


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


LABELS = ("view", "create", "str_replace", "insert", "delete", "rename", "input", "View", "list")
ORACLES = (
    ["escape:outside-changed", "escape:parser", "crash:result-type", "diverge:tree", "parser:invariant",
     "parser:canonical-refused", "parser:canonical-unstable", "exception:unknown", "exception:OSError",
     "exception:UnicodeDecodeError", "exception:parser:ValueError", "exception:parser:RecursionError"]
    + [f"{family}:{label}" for family in ("hang", "crash") for label in LABELS]
    + [f"leak:{kind}:{label}" for kind in ("canary", "host-path", "traceback") for label in LABELS]
    + [f"cost:{kind}:{label}" for kind in ("time", "output", "memory") for label in LABELS]
    + [f"diverge:{label}:{a}-vs-{b}" for label in LABELS for a, b in (("ok", "error"), ("error", "ok"))]
)
"""Every oracle class the fuzzer's code can name (oracles.py, cost.py, harness.py)."""

GOOD: List[Tuple[str, Any]] = [
    ("minimal", _base()),
    ("format-1", _base(format="refmem-fuzz-finding/1")),
    ("paths-harness", _base(harness="paths", oracle="exception:parser:ValueError", step=0)),
    ("step-integral-float", _base(step=3.0)),
    ("optional-fields", _base(tree_after={"notes.md": "x", "docs": "<dir>"}, engine="random", seed=-4, runs=0,
                              other_oracles=["leak:canary:view"], cost={"step": 0})),
    ("nulls", _base(tree_after=None, seed=None, runs=None)),
    ("malformed-commands", _base(commands=[None, "view", 3, [{"command": "view"}], {"path": {"p": 1}}])),
    ("observed-flags", _base(observed=[{"input": None, "output": None, "is_error": None, "crashed": True,
                                        "timed_out": False, "raised": True, "extra": 1}])),
    ("repeat", _with_command(file_text=_repeat("a\n", 1 << 19, "a"))),
    ("repeat-largest", _with_command(file_text=_repeat("a", MAX_VALUE))),
    ("repeat-integral-float", _with_command(file_text=_repeat("ab", 3.0))),
    ("repeat-nested-is-data", _with_command(file_text=[{"$repeat": 1}])),
    ("nested-parameter", _with_command(file_text=_nested(256))),
] + [(f"oracle-{oracle}", _base(oracle=oracle)) for oracle in ORACLES]

BAD: List[Tuple[str, Any]] = [
    ("not-an-object", []),
    ("empty-object", {}),
    ("wrong-format", _base(format="refmem-fuzz-finding/3")),
    ("unknown-key", _base(extra=1)),
    ("target-too-long", _base(target="x" * 4097)),
    ("target-not-a-string", _base(target=None)),
    ("harness-unknown", _base(harness="fork")),
    ("step-negative", _base(step=-1)),
    ("step-boolean", _base(step=True)),
    ("step-fraction", _base(step=0.5)),
    ("layout-not-boolean", _base(hostile_layout=1)),
    ("differential-null", _base(differential=None)),
    ("detail-number", _base(detail=3)),
    ("commands-object", _base(commands={"command": "view"})),
    ("commands-empty", _base(commands=[])),
    ("commands-too-many", _base(commands=[{"command": "view"}] * (finding_files.MAX_COMMANDS + 1))),
    ("repeat-extra-key", _with_command(file_text=_repeat("a", 3, "", x=1))),
    ("repeat-no-then", _with_command(file_text={"$repeat": "a", "times": 3})),
    ("repeat-empty-unit", _with_command(file_text=_repeat("", 3))),
    ("repeat-long-unit", _with_command(file_text=_repeat("a" * 65, 3))),
    ("repeat-unit-number", _with_command(file_text=_repeat(7, 3))),  # type: ignore[arg-type]
    ("repeat-negative", _with_command(file_text=_repeat("a", -1))),
    ("repeat-times-string", _with_command(file_text=_repeat("a", "3"))),
    ("repeat-times-boolean", _with_command(file_text=_repeat("a", True))),
    ("repeat-times-over", _with_command(file_text=_repeat("a", MAX_VALUE + 1))),
    ("repeat-long-then", _with_command(file_text=_repeat("a", 3, "b" * 65))),
    ("repeat-then-null", _with_command(file_text=_repeat("a", 3, None))),
    ("observed-object", _base(observed={})),
    ("observed-too-many", _base(observed=[{"input": 1, "output": "", "is_error": False}] * 257)),
    ("observed-no-output", _base(observed=[{"input": 1, "is_error": False}])),
    ("observed-output-number", _base(observed=[{"input": 1, "output": 3, "is_error": False}])),
    ("observed-is-error-string", _base(observed=[{"input": 1, "output": "", "is_error": "no"}])),
    ("observed-flag-string", _base(observed=[{"input": 1, "output": "", "is_error": False, "crashed": "yes"}])),
    ("tree-list", _base(tree_after=[])),
    ("tree-value-number", _base(tree_after={"a": 1})),
    ("engine-number", _base(engine=1)),
    ("seed-string", _base(seed="1")),
    ("runs-negative", _base(runs=-1)),
    ("other-oracles-unknown", _base(other_oracles=["pwned"])),
    ("other-oracles-too-many", _base(other_oracles=["diverge:tree"] * (finding_files.MAX_OTHER_ORACLES + 1))),
    ("cost-string", _base(cost="x")),
] + [(f"missing-{key}", _without(key)) for key, (required, _) in finding_files.FIELDS.items() if required] + [
    (f"oracle-{name}", _base(oracle=oracle))
    for name, oracle in (
        ("empty", ""), ("no-label", "leak:canary:"), ("newline", "leak:canary:view\n"), ("digit", "hang:1view"),
        ("outcome", "diverge:view:ok-vs-maybe"), ("escape-kind", "escape:anything"), ("cost-kind", "cost:cpu:view"),
        ("upper-family", "LEAK:canary:view"), ("non-ascii", "leak:canary:v\u00efew"), ("space", "hang:view now"),
        ("long-label", "hang:" + "v" * 65), ("exception-empty", "exception:"), ("escape-sequence", "hang:\x1b[2J"),
    )
]

LOADER_ONLY: List[Tuple[str, Any]] = [
    ("repeat-product", _with_command(file_text=_repeat("a" * 64, 1 << 20))),
    ("repeat-product-with-then", _with_command(file_text=_repeat("ab", MAX_VALUE // 2, "c"))),
    ("total", _base(commands=[{"command": "create", "path": f"/memories/{i}", "file_text": _repeat("a", MAX_VALUE)}
                              for i in range(5)])),
    ("deep", _with_command(file_text=_nested(finding_files.MAX_DEPTH))),
]
"""What the schema cannot say (it does not multiply, add up over a file, or count nesting): the loader refuses,
the schema accepts, and its description says so."""


def _loads(data: Any) -> bool:
    try:
        finding_files.parse(json.dumps(data).encode())
    except FindingError:
        return False
    return True


def _schema_accepts() -> Callable[[Any], bool]:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    return lambda data: not list(validator.iter_errors(data))


@pytest.mark.parametrize("data", [data for _, data in GOOD], ids=[name for name, _ in GOOD])
def test_good_files_load_and_follow_the_schema(data: Any) -> None:
    assert _loads(data)
    assert _schema_accepts()(data)


@pytest.mark.parametrize("data", [data for _, data in BAD], ids=[name for name, _ in BAD])
def test_bad_files_are_refused_by_both(data: Any) -> None:
    assert not _loads(data)
    assert not _schema_accepts()(data)


@pytest.mark.parametrize("data", [data for _, data in LOADER_ONLY], ids=[name for name, _ in LOADER_ONLY])
def test_what_only_the_loader_can_check(data: Any) -> None:
    assert not _loads(data)
    assert _schema_accepts()(data)


def test_committed_findings_load() -> None:
    assert len(COMMITTED) >= 20
    for path in COMMITTED:
        assert finding_files.load(path).commands


def test_the_schema_states_the_loaders_bounds() -> None:
    properties, defs = SCHEMA["properties"], SCHEMA["$defs"]
    assert defs["oracle"]["pattern"] == finding_files.ORACLE_PATTERN
    assert properties["commands"]["maxItems"] == properties["observed"]["maxItems"] == finding_files.MAX_COMMANDS
    assert defs["repeat"]["properties"]["times"]["maximum"] == finding_files.MAX_VALUE_CHARS
    assert defs["repeat"]["properties"]["$repeat"]["maxLength"] == finding_files.PACK_MAX_UNIT
    assert properties["other_oracles"]["maxItems"] == finding_files.MAX_OTHER_ORACLES
    assert properties["target"]["maxLength"] == finding_files.MAX_NAME_CHARS
    assert set(SCHEMA["required"]) == {key for key, (required, _) in finding_files.FIELDS.items() if required}
    assert set(properties) == set(finding_files.FIELDS)
    # The bounds leave room for everything the fuzzer makes.
    assert finding_files.MAX_COMMANDS >= grow.MAX_EXPANDED
    assert finding_files.MAX_VALUE_CHARS >= grow.MAX_CHARS
    assert finding_files.MAX_DEPTH > max(grow.NESTING) + 4


def test_refusals_are_one_line_and_do_not_echo_values() -> None:
    for name, data in BAD + LOADER_ONLY:
        with pytest.raises(FindingError) as refused:
            finding_files.parse(json.dumps(data).encode())
        message = str(refused.value)
        assert "\n" not in message and len(message) < 300, name
        assert "\x1b" not in message and "v" * 65 not in message, name


def test_what_the_fuzzer_writes_it_loads_again() -> None:
    """A finding with growth-sized inputs, long outputs and a deep observed tree: packed, cut, and loaded back."""
    big = "a\n" * (1 << 19)
    deep = "/".join(["x" * 50] * 400)
    commands: List[Any] = [{"command": "create", "path": "/memories/a", "file_text": big},
                           {"command": "view", "path": "/memories/" + deep, "view_range": _nested(256)}]
    commands += [{"command": "create", "path": f"/memories/many/f{i:04d}.md", "file_text": ""} for i in range(150)]
    tree = {"/".join(["x" * 50] * depth): "<dir>" for depth in range(1, 401)}
    found = Finding(target="python:pkg:make", harness="sequence", oracle="cost:time:view", detail="slow",
                    step=1, hostile_layout=True, differential=False, commands=commands,
                    observed=[{"input": command, "output": "y" * 100_000, "is_error": False} for command in commands],
                    tree_after=tree, cost={"step": 1})
    text = finding_files.dumps(found)
    assert len(text.encode()) < finding_files.MAX_FILE_BYTES
    loaded = finding_files.parse(text.encode())
    assert loaded.commands == commands
    assert loaded.tree_after is not None and 0 < len(loaded.tree_after) < len(tree)


def test_depth_is_measured_without_recursion() -> None:
    assert finding_files.depth(1) == 0
    assert finding_files.depth({"a": [1, {"b": []}]}) == 4
    assert finding_files.depth(_nested(100_000)) == 100_000


def test_a_fifo_is_not_waited_on(tmp_path: pathlib.Path) -> None:
    fifo = tmp_path / "finding.json"
    os.mkfifo(fifo)
    with pytest.raises(FindingError, match="not a regular file"):
        finding_files.load(fifo)
