"""Every string the OpenClaw tools return, in one table: error codes with their text, and notices.

Where OpenClaw 2026.9.6 has a string for the same situation it is used verbatim (basis `openclaw`);
the others are the reference's decisions (a spec-notes ID). The `code` is what a program should
branch on; the text is for the model.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, NamedTuple


class Refusal(NamedTuple):
    """A problem found while checking input, before any work: its key and the template's values."""

    key: str
    values: Mapping[str, Any]


def refuse(key: str, **values: Any) -> Refusal:
    return Refusal(key, values)


class Problem(NamedTuple):
    code: str
    template: str
    basis: str


PROBLEMS: Dict[str, Problem] = {
    # --- input ------------------------------------------------------------------------------
    "input_object": Problem("INVALID_INPUT", "the tool input must be a JSON object", "D-OPENCLAW-INPUT"),
    "path_required": Problem("INVALID_INPUT", "path required", "openclaw"),
    "from_integer": Problem("INVALID_INPUT", "from must be a positive integer", "openclaw"),
    "lines_integer": Problem("INVALID_INPUT", "lines must be a positive integer", "openclaw"),
    "query_required": Problem("INVALID_INPUT", "query required", "openclaw"),
    "query_too_long": Problem(
        "INVALID_INPUT", "query is {n} characters long, over the limit of {max}", "D-OPENCLAW-SEARCH-BOUNDS"
    ),
    "max_results_integer": Problem("INVALID_INPUT", "maxResults must be a positive integer", "openclaw"),
    "min_score_number": Problem("INVALID_INPUT", "minScore must be a finite number", "openclaw"),
    "corpus": Problem("INVALID_INPUT", "corpus must be one of: memory, all", "D-OPENCLAW-INPUT"),
    "not_unicode": Problem("INVALID_INPUT", "{name} is not valid Unicode text", "D-OPENCLAW-INPUT"),
    # --- paths ------------------------------------------------------------------------------
    "path_invalid": Problem("MEMORY_PATH_INVALID", "invalid path: {rule}", "D-OPENCLAW-GET-PATH"),
    "not_memory": Problem("MEMORY_PATH_NOT_ALLOWED", "path is not an allowed Markdown memory file", "openclaw"),
    "not_in_allow_list": Problem(
        "MEMORY_PATH_NOT_ALLOWED", "path is not one of the allowed memory paths", "D-OPENCLAW-ALLOW"
    ),
    "read_only": Problem("MEMORY_READ_ONLY", "the memory directory is read-only", "D-OPENCLAW-ALLOW"),
    # --- the file ---------------------------------------------------------------------------
    "link": Problem("MEMORY_SYMLINK", "path is a symbolic link; links are not followed", "D-OPENCLAW-GET-FS"),
    "not_regular": Problem("MEMORY_NOT_REGULAR", "path is not a regular file", "D-OPENCLAW-GET-FS"),
    "hard_linked": Problem(
        "MEMORY_HARDLINKED",
        "path has more than one hard link and is refused: its content may be shared with a file outside the workspace",
        "D-OPENCLAW-GET-FS",
    ),
    "not_utf8": Problem("MEMORY_NOT_UTF8", "the file is not valid UTF-8 text", "D-OPENCLAW-GET-TEXT"),
    "read_failed": Problem("MEMORY_READ_FAILED", "the file could not be read: {reason}", "D-OPENCLAW-GET-FS"),
    # --- search -----------------------------------------------------------------------------
    "index_failed": Problem(
        "MEMORY_INDEX_FAILED", "the memory index could not be used: {reason}", "D-OPENCLAW-INDEX-FILE"
    ),
    "embedder_failed": Problem(
        "MEMORY_EMBEDDER_FAILED", "the embedding function failed; keyword results only", "D-OPENCLAW-SEARCH-HYBRID"
    ),
    "embedder_deadline": Problem(
        "MEMORY_EMBEDDER_FAILED",
        "the embeddings did not come within {ms} ms; keyword results only",
        "D-OPENCLAW-EMBED-DEADLINE",
    ),
    "embedder_down": Problem(
        "MEMORY_EMBEDDER_FAILED",
        "the embeddings endpoint failed less than {s} s ago and is not asked again before then; keyword results only",
        "D-OPENCLAW-EMBED-OUTAGE",
    ),
    # --- daily log --------------------------------------------------------------------------
    "log_text": Problem("INVALID_INPUT", "the log text must be a non-empty string", "D-OPENCLAW-LOG"),
    "log_control": Problem(
        "INVALID_INPUT", "the log text must not contain control characters other than TAB and newline", "D-OPENCLAW-LOG"
    ),
    "log_too_big": Problem(
        "MEMORY_LOG_TOO_BIG", "the daily log would be {n} bytes, over the limit of {max}", "D-OPENCLAW-LOG"
    ),
    "log_folder": Problem(
        "MEMORY_WRITE_FAILED", "the daily log could not be written: memory is not a folder", "D-OPENCLAW-LOG"
    ),
    "log_failed": Problem("MEMORY_WRITE_FAILED", "the daily log could not be written: {reason}", "D-OPENCLAW-LOG"),
}

NOTICES: Dict[str, str] = {
    # OpenClaw's continuation notice, verbatim.
    "continue": "[More content available. Use from={next} to continue.]",
    # D-OPENCLAW-GET-LONGLINE: a line longer than the budget, and how to get past it.
    "line_cut": "[Line {n} is {length} characters long and was cut at {shown}. Use from={next} to continue.]",
    "last_line_cut": "[Line {n} is {length} characters long and was cut at {shown}.]",
    # D-OPENCLAW-INDEX-FILE: the index file could not be used; search ran on a temporary index.
    "index_in_memory": "The search index file could not be used ({reason}); this search used a temporary index.",
}

NOTICE_SEPARATOR = "\n\n"
"""What comes between an excerpt and its notice (OpenClaw's blank line)."""


def problem(key: str, **values: Any) -> Problem:
    """The problem `key` with its template filled in."""
    found = PROBLEMS[key]
    return found._replace(template=found.template.format(**values)) if values else found


def error_result(key: str, path: str, **values: Any) -> Dict[str, Any]:
    """memory_get's error result, in OpenClaw's shape: path, empty text, status, code, error."""
    found = problem(key, **values)
    return {"path": path, "text": "", "status": "error", "code": found.code, "error": found.template}


def search_error(key: str, unavailable: bool = False, **values: Any) -> Dict[str, Any]:
    """memory_search's error result: no results, status, code, error; `unavailable` (OpenClaw's flag
    for a search that could not run at all) when the index itself failed."""
    found = problem(key, **values)
    result: Dict[str, Any] = {"results": [], "status": "error", "code": found.code, "error": found.template}
    if unavailable:
        result["unavailable"] = True
    return result
