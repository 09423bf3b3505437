"""What a step expects and how a reply is judged: pure functions, no I/O.

A step's `result` is a partial expectation (WPT style: a key left out is not tested): an object
matches when every expected key matches, a list when it has the same length and each item
matches, anything else when it is equal; an expected object with one `$`-key is an operator:
`$prefix`, `$suffix`, `$contains` (a string or a list), `$excludes`, `$regex` (full match),
`$max_len`, `$range` ([low, high]), `$type` ("string", "number", "integer", "object", "list",
"bool", "null"). `absent` lists keys the result must not have. Search steps may also state
`paths` (the result paths in order), `paths_include`, `paths_exclude`, `count` ([low, high]), and
`each_result` (a partial expectation every hit must meet).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Sequence

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
    "bool": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _operator(name: str, argument: Any, actual: Any) -> bool:
    text = actual if isinstance(actual, str) else None
    if name == "$type":
        return bool(_TYPES[argument](actual))
    if name == "$range":
        low, high = float(argument[0]), float(argument[1])
        return isinstance(actual, (int, float)) and low <= actual <= high
    if text is None:
        return False
    if name == "$prefix":
        return text.startswith(argument)
    if name == "$suffix":
        return text.endswith(argument)
    if name == "$contains":
        return all(part in text for part in ([argument] if isinstance(argument, str) else argument))
    if name == "$excludes":
        return not any(part in text for part in ([argument] if isinstance(argument, str) else argument))
    if name == "$regex":
        return re.fullmatch(argument, text, re.DOTALL) is not None
    if name == "$max_len":
        return len(text) <= int(argument)
    raise ValueError(f"unknown operator {name}")


def is_operator(expected: Any) -> bool:
    return isinstance(expected, dict) and len(expected) == 1 and next(iter(expected)).startswith("$")


def mismatches(expected: Any, actual: Any, where: str = "result") -> List[str]:
    """Every way `actual` fails `expected`, as short sentences naming the place."""
    if is_operator(expected):
        name, argument = next(iter(expected.items()))
        return (
            []
            if _operator(name, argument, actual)
            else [f"{where}: {name} {argument!r:.120} not met by {actual!r:.200}"]
        )
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {actual!r:.200}"]
        found: List[str] = []
        for key, value in expected.items():
            if key not in actual:
                found.append(f"{where}.{key}: missing")
            else:
                found.extend(mismatches(value, actual[key], f"{where}.{key}"))
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected a list of {len(expected)}, got {actual!r:.300}"]
        return [
            problem
            for index, item in enumerate(expected)
            for problem in mismatches(item, actual[index], f"{where}[{index}]")
        ]
    if expected != actual or type(expected) is not type(actual) and not _same_number(expected, actual):
        return [f"{where}: expected {expected!r:.200}, got {actual!r:.200}"]
    return []


def _same_number(left: Any, right: Any) -> bool:
    numbers = (int, float)
    return isinstance(left, numbers) and isinstance(right, numbers) and not isinstance(left, bool) and left == right


def result_paths(result: Any) -> List[str]:
    if not isinstance(result, dict) or not isinstance(result.get("results"), list):
        return []
    return [str(hit.get("path")) for hit in result["results"] if isinstance(hit, dict)]


def judge_step(step: Mapping[str, Any], is_error: bool, result: Any) -> List[str]:
    """Every way one reply fails its step (leaks are judged by the runner, for every step)."""
    found: List[str] = []
    if "is_error" in step and step["is_error"] != is_error:
        found.append(f"is_error: expected {step['is_error']}, got {is_error}")
    if "result" in step:
        found.extend(mismatches(step["result"], result))
    for key in step.get("absent", []):
        if isinstance(result, dict) and key in result:
            found.append(f"result.{key}: expected absent, got {result[key]!r:.120}")
    paths = result_paths(result)
    if "paths" in step and paths != step["paths"]:
        found.append(f"paths: expected {step['paths']}, got {paths}")
    for path in step.get("paths_include", []):
        if path not in paths:
            found.append(f"paths: {path} expected among {paths}")
    for path in step.get("paths_exclude", []):
        if path in paths:
            found.append(f"paths: {path} must not be among the results")
    for index, hit in enumerate(hits(result)) if "each_result" in step else ():
        found.extend(mismatches(step["each_result"], hit, f"result.results[{index}]"))
    if "count" in step:
        low, high = step["count"]
        if not low <= len(paths) <= high:
            found.append(f"count: expected {low}..{high} results, got {len(paths)}")
    return found


def leaks(texts: Sequence[str], canary: str, host_paths: Sequence[str]) -> List[str]:
    """The security verdict on what a target said: never the canary, a host path or a traceback."""
    found: List[str] = []
    for text in texts:
        if canary in text:
            found.append("leak: the canary text from outside the workspace was returned")
        for host in host_paths:
            if host and host in text:
                found.append("leak: a host path was returned")
        if "Traceback (most recent call last)" in text:
            found.append("leak: a traceback was returned")
    return sorted(set(found))


def hits(result: Any) -> List[Dict[str, Any]]:
    if not isinstance(result, dict) or not isinstance(result.get("results"), list):
        return []
    return [hit for hit in result["results"] if isinstance(hit, dict)]
