"""MemoryHandler: check the model's input, then run one thin command over `fs.Root`.

The order of checks is fixed and documented (docs/spec-notes.md): input shape, parameters, mode,
path syntax, allow-list, then the filesystem. Each command is a short function; anything about
where a name lives or whether it may be touched belongs to `fs.Root`'s walk, not here.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections import abc
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import fs, text
from .expiry import AccessTracker
from .limits import DEFAULT_LIMITS, Limits
from .messages import Result, clip, escape, render
from .paths import PathError, VirtualPath, is_addressable, parse_path
from .viewcache import ViewCache

DIR_SIZE = "4.0K"  # D-VIEW-DIR-SIZE
ESCAPED_REASON = "a folder on the way moved outside /memories while it was in use"
SMALL_FILE_BYTES = 1024 * 1024  # views of files up to this size read them whole; larger ones stream
PARSE_CACHE_SIZE = 4096  # parsed paths remembered per handler (each at most max_path_bytes)
ADDRESSABLE_CACHE_SIZE = 16384  # names found on disk whose addressability a handler remembers
VIEW_CACHE_BYTES = 4 * 1024 * 1024  # remembered views per handler, file bytes and results together
RULE_FILE_SLASH = 'a file path must not end with "/"'


# Parameter kinds: how to check a value and how to name the expected type in the message.
STR, INT, RANGE = "a string", "an integer", "a list of two integers"
OPTIONAL = False
REQUIRED = True

# command -> ((parameter, kind, required), ...) in the order they are checked
PARAMETERS: Dict[str, Tuple[Tuple[str, str, bool], ...]] = {
    "view": (("path", STR, REQUIRED), ("view_range", RANGE, OPTIONAL)),
    "create": (("path", STR, REQUIRED), ("file_text", STR, REQUIRED)),
    "str_replace": (
        ("path", STR, REQUIRED),
        ("old_str", STR, REQUIRED),
        ("new_str", STR, REQUIRED),
    ),
    "insert": (
        ("path", STR, REQUIRED),
        ("insert_line", INT, REQUIRED),
        ("insert_text", STR, REQUIRED),
    ),
    "delete": (("path", STR, REQUIRED),),
    "rename": (("old_path", STR, REQUIRED), ("new_path", STR, REQUIRED)),
}
MUTATING = frozenset({"create", "str_replace", "insert", "delete", "rename"})
TEXT_PARAMETERS = ("file_text", "old_str", "new_str", "insert_text")
# What the walk met, for any command: the message that says so.
PROBLEM_MESSAGES: Dict[type, str] = {
    fs.IsLink: "path_symlink",
    fs.NotRegular: "path_not_regular",
    fs.HardLinked: "path_hard_linked",
}
IO_ACTION = {
    "view": "read",
    "create": "create",
    "str_replace": "write",
    "insert": "write",
    "delete": "delete",
    "rename": "rename",
}


class Refusal(Exception):
    """A finished result raised from deep inside a command, so commands stay straight-line."""

    def __init__(self, result: Result) -> None:
        super().__init__(result.output)
        self.result = result


_is_str: Callable[[object], bool] = str.__instancecheck__


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_range(value: object) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(_is_int(v) for v in value)


# Parameter kind -> the check its values must pass.
KIND_CHECKS: Dict[str, Callable[[object], bool]] = {STR: _is_str, INT: _is_int, RANGE: _is_range}


# A content policy takes the text to be written and returns (text to write, kinds refused).
ContentPolicy = Callable[[str], Tuple[str, List[str]]]


class MemoryHandler:
    """The reference memory tool handler over one real directory.

    `execute` never raises for anything a model can send: every outcome is a `Result`.
    """

    def __init__(
        self,
        root: Union[str, os.PathLike[str]],
        *,
        limits: Limits = DEFAULT_LIMITS,
        read_only: bool = False,
        allow: Optional[Sequence[str]] = None,
        content_policy: Optional[ContentPolicy] = None,
        portable_walk: bool = False,
        refuse_hard_links: bool = True,
        track_access: bool = True,
        view_cache_bytes: int = VIEW_CACHE_BYTES,
    ) -> None:
        self._limits = limits
        self.read_only = read_only
        self.allow = tuple(allow) if allow is not None else None
        self.content_policy = content_policy
        self.refuse_hard_links = refuse_hard_links
        self.root = fs.Root(root, portable=portable_walk)
        self._views = ViewCache(view_cache_bytes)  # 0: every view renders its page afresh
        # Parsing is pure, and a model names the same few paths again and again: remember the answers
        # (refusals are not cached; they are rare and their messages cheap to rebuild).
        self._parse: Callable[[str], VirtualPath] = functools.lru_cache(maxsize=PARSE_CACHE_SIZE)(
            functools.partial(parse_path, limits=limits)
        )
        # Listings ask the same of every name they meet; keyed by the name alone (not the limits).
        self._addressable: Callable[[str], bool] = functools.lru_cache(maxsize=ADDRESSABLE_CACHE_SIZE)(
            functools.partial(is_addressable, limits=limits)
        )
        # Last-access records for `refmem prune` (filesystem atime is often off). Never fails a command.
        self.access: Optional[AccessTracker] = AccessTracker(self.root) if track_access and not read_only else None
        self._commands: Dict[str, Callable[[Mapping[str, Any]], Result]] = {
            "view": self._view,
            "create": self._create,
            "str_replace": self._str_replace,
            "insert": self._insert,
            "delete": self._delete,
            "rename": self._rename,
        }

    @property
    def limits(self) -> Limits:
        """The bounds this handler was made with; fixed, since parsed paths and pages are remembered under them."""
        return self._limits

    # -- entry point --

    def execute(self, command: object) -> Result:
        try:
            return self._execute(command)
        except Refusal as refusal:
            return refusal.result
        except Exception:  # noqa: BLE001 - the promise is a result, never a traceback
            return render("internal_error")

    __call__ = execute

    def close(self) -> None:
        """Release the root's descriptors (also done when the handler is garbage-collected)."""
        self.root.close()
        if self.access is not None:
            self.access.close()

    def __enter__(self) -> MemoryHandler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _execute(self, command: object) -> Result:
        if not (type(command) is dict or isinstance(command, abc.Mapping)) or not all(map(_is_str, command)):
            return render("input_not_object")
        name = command.get("command")
        if name is None:
            return render("command_missing")
        if not isinstance(name, str):
            return render("command_not_string")
        if name not in PARAMETERS:
            return render("command_unknown", command=escape(name, self.limits.max_echo_chars))
        self._check_parameters(name, command)
        if self.read_only and name in MUTATING:
            return render("read_only", command=name)
        return self._commands[name](command)

    def _check_parameters(self, name: str, command: Mapping[str, Any]) -> None:
        for parameter, kind, required in PARAMETERS[name]:
            value = command.get(parameter)
            if value is None:
                if required:
                    raise Refusal(render("param_missing", name=parameter, command=name))
                continue
            if not KIND_CHECKS[kind](value):
                if kind == RANGE:
                    raise Refusal(render("view_range_shape"))
                raise Refusal(render("param_type", name=parameter, kind=kind, command=name))
            if kind == STR:
                if value.isascii():  # the common case: valid, one byte a character
                    size = len(value)
                else:
                    try:
                        size = len(value.encode("utf-8"))
                    except UnicodeEncodeError:
                        raise Refusal(render("param_not_unicode", name=parameter)) from None
                if parameter in TEXT_PARAMETERS and size > self.limits.max_file_bytes:
                    raise Refusal(render("param_too_big", name=parameter, n=size, max=self.limits.max_file_bytes))

    # -- shared steps --

    def _path(self, raw: str) -> VirtualPath:
        try:
            return self._parse(raw)
        except PathError as error:
            raise Refusal(
                render("path_invalid", path=escape(raw, self.limits.max_echo_chars), rule=error.rule)
            ) from None

    def _file_slash(self, raw: str) -> Result:
        return render("path_invalid", path=escape(raw, self.limits.max_echo_chars), rule=RULE_FILE_SLASH)

    def _allowed(self, path: VirtualPath) -> bool:
        if self.allow is None:
            return True
        relative = "/".join(path.parts)
        return any(fnmatch.fnmatchcase(relative, pattern) for pattern in self.allow)

    def _require_allowed(self, path: VirtualPath) -> None:
        if not self._allowed(path):
            raise Refusal(render("not_allowed", path=path.canonical))

    def _require_allowed_tree(self, path: VirtualPath, kind: Optional[str]) -> None:
        """Under an allow-list, a folder may hold files that are not allowed: refuse moving it."""
        if self.allow is not None and (kind == fs.DIR or path.is_root):
            raise Refusal(render("not_allowed", path=path.canonical))
        self._require_allowed(path)

    def _problem(self, problem: fs.FsProblem, command: str, path: VirtualPath) -> Result:
        """The messages every command shares for what the walk can meet."""
        for kind, key in PROBLEM_MESSAGES.items():
            if isinstance(problem, kind):
                return render(key, path=path.canonical)
        if isinstance(problem, fs.OsFailure):
            return render("io_error", action=IO_ACTION[command], path=path.canonical, reason=problem.reason)
        if isinstance(problem, fs.Escaped):
            return render("io_error", action=IO_ACTION[command], path=path.canonical, reason=ESCAPED_REASON)
        if isinstance(problem, fs.TooBig):
            return render("file_too_big_to_edit", path=path.canonical, n=problem.size, max=self.limits.max_file_bytes)
        raise problem

    def _policy(self, value: str) -> str:
        if self.content_policy is None:
            return value
        cleaned, refused = self.content_policy(value)
        if refused:
            raise Refusal(render("content_refused", what=_human_list(refused)))
        return cleaned

    def _encode_checked(self, path: VirtualPath, content: str) -> bytes:
        data = content.encode("utf-8")
        if len(data) > self.limits.max_file_bytes:
            raise Refusal(render("file_too_big", path=path.canonical, n=len(data), max=self.limits.max_file_bytes))
        return data

    # -- view --

    def _view(self, command: Mapping[str, Any]) -> Result:
        path = self._path(command["path"])
        view_range = command.get("view_range")
        if path.is_root:
            return self._view_dir(path, view_range)
        try:
            opened = self.root.open_regular(path, self.refuse_hard_links)
            try:
                if self.allow is not None:
                    self._require_allowed(path)
                rendered = self._show_file(path, opened, view_range)
                info = opened.info
            finally:
                opened.close()
        except fs.NotRegular as problem:
            if problem.kind == fs.DIR:
                return self._view_dir(path, view_range)
            return self._problem(problem, "view", path)
        except UnicodeDecodeError:
            return render("not_utf8", path=path.canonical)
        except fs.Missing:
            return render("view_missing", path=path.canonical)
        except fs.FsProblem as problem:
            return self._problem(problem, "view", path)
        if self.access is not None and not rendered.is_error:
            self.access.touch(path.canonical, changed_at=info.st_mtime, file_id=(info.st_dev, info.st_ino))
        return rendered

    def _view_dir(self, path: VirtualPath, view_range: Optional[Sequence[int]]) -> Result:
        if view_range is not None:
            return render("view_range_on_dir")
        return self._listing(path)

    def _show_file(self, path: VirtualPath, opened: fs.OpenFile, view_range: Optional[Sequence[int]]) -> Result:
        """Small files are read whole (one call); larger ones are streamed in bounded memory.

        A small file's view is remembered with the bytes it was made from and reused only when the
        bytes just read are the same (see viewcache): the walk, the checks and the read still happen.
        """
        start, end = (view_range[0], view_range[1]) if view_range is not None else (1, -1)
        last_wanted = None if end == -1 else end
        budget = self.limits.max_view_chars
        if opened.info.st_size > SMALL_FILE_BYTES:
            chunks = self.root.read_chunks(opened.fd)
            return self._render_file(path, text.read_window(chunks, max(start, 1), last_wanted, budget), view_range)
        raw = self.root.read_all(opened.fd, opened.info.st_size)
        key = (path.parts, None if view_range is None else (start, end))
        remembered = self._views.get(key, raw)
        if remembered is not None:
            return remembered
        content = raw.decode("utf-8")
        whole = text.number_whole(content, budget) if view_range is None else None
        if whole is not None and whole[1] <= self.limits.max_lines:
            header = render("view_file_header", path=path.canonical).output
            result = Result(header + "\n" + whole[0] if whole[1] else header, False)
        else:
            result = self._render_file(path, text.window_from_text(content, start, last_wanted, budget), view_range)
        self._views.put(key, raw, result)
        return result

    def _listing(self, path: VirtualPath) -> Result:
        try:
            found, truncated = self.root.list_tree(
                path,
                self.limits.max_listing_depth,
                self.limits.max_listing_entries,
                self._addressable,
            )
        except fs.Missing:
            return render("view_missing", path=path.canonical)
        except fs.FsProblem as problem:
            return self._problem(problem, "view", path)
        base = path.canonical
        lines = [render("view_dir_header", path=base).output, f"{DIR_SIZE}\t{base}"]
        for item in found:
            relative = "/".join(item.parts)
            if item.kind == fs.DIR:
                lines.append(f"{DIR_SIZE}\t{base}/{relative}/")
            elif self.allow is None or self._allowed(VirtualPath(path.parts + item.parts)):
                lines.append(f"{text.human_size(item.size)}\t{base}/{relative}")
        if truncated:
            lines.append(render("listing_truncated", n=len(found)).output)
        return Result("\n".join(lines), False)

    def _render_file(
        self, path: VirtualPath, window: text.WindowResult, view_range: Optional[Sequence[int]]
    ) -> Result:
        start, end = (view_range[0], view_range[1]) if view_range is not None else (1, -1)
        last_wanted = None if end == -1 else end
        n_lines = window.n_lines
        if n_lines > self.limits.max_lines:
            return render("view_too_many_lines", path=path.canonical)
        if view_range is not None:
            shown_range = f"[{start}, {end}]"
            if not 1 <= start <= n_lines:
                return render("view_range_start", view_range=shown_range, start=start, n_lines=n_lines)
            if end > n_lines:
                return render("view_range_end_past", view_range=shown_range, end=end, n_lines=n_lines)
            if end != -1 and end < start:
                return render("view_range_end_before", view_range=shown_range, end=end, start=start)
        body = text.fit_numbered(window.lines, self.limits.max_view_chars, window.complete)
        parts = [render("view_file_header", path=path.canonical).output]
        if body.body:
            parts.append(body.body)
        last_requested = n_lines if last_wanted is None else last_wanted
        if body.cut_line is not None:
            number, length, shown = body.cut_line
            if number >= last_requested:
                parts.append(render("view_last_line_cut", n=number, length=length, shown=shown).output)
            else:
                parts.append(
                    render("view_line_cut", n=number, length=length, shown=shown, next=number + 1, end=end).output
                )
        elif body.last_shown < last_requested and n_lines > 0:
            parts.append(
                render(
                    "view_truncated",
                    last=body.last_shown,
                    n_lines=n_lines,
                    next=body.last_shown + 1,
                    end=end,
                ).output
            )
        return Result("\n".join(parts), False)

    # -- create --

    def _create(self, command: Mapping[str, Any]) -> Result:
        path = self._path(command["path"])
        if path.is_root:
            return render("create_exists", path=path.canonical)
        if path.trailing_slash:
            return self._file_slash(command["path"])
        self._require_allowed(path)
        data = self._encode_checked(path, self._policy(command["file_text"]))
        try:
            with self.root.locked():
                self.root.write_new(path, data)
        except fs.Exists:
            return render("create_exists", path=path.canonical)
        except fs.ParentNotDir as problem:
            return render("create_parent_not_dir", path=path.canonical, parent=problem.parent.canonical)
        except fs.Missing:
            return render("create_parent_not_dir", path=path.canonical, parent=path.parent.canonical)
        except fs.FsProblem as problem:
            return self._problem(problem, "create", path)
        return render("create_ok", path=path.canonical)  # no access record: the new file's mtime says it

    # -- str_replace and insert: read, change, write back under the lock --

    def _edit(
        self, path: VirtualPath, name: str, change: Callable[[VirtualPath, str, bool], Tuple[str, Result]]
    ) -> Result:
        missing = "str_replace_missing" if name == "str_replace" else "insert_missing"
        if path.is_root:
            return render(missing, path=path.canonical)
        outcome: List[Result] = []

        def rewrite(raw: bytes) -> bytes:
            try:
                content = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise Refusal(render("not_utf8", path=path.canonical)) from None
            crlf = text.is_crlf(content)
            working = content.replace("\r\n", "\n") if crlf else content
            new_content, rendered = change(path, working, crlf)
            if crlf:
                new_content = new_content.replace("\n", "\r\n")
            outcome.append(rendered)
            return self._encode_checked(path, new_content)

        try:
            with self.root.locked():
                self.root.rewrite(path, self.limits.max_file_bytes, rewrite)
                return outcome[0]  # no access record: the rewritten file's mtime says it
        except fs.Missing:
            return render(missing, path=path.canonical)
        except fs.FsProblem as problem:
            # The documentation: a folder "does not exist" for edits.
            if isinstance(problem, fs.NotRegular) and problem.kind == fs.DIR:
                return render(missing, path=path.canonical)
            return self._problem(problem, name, path)

    def _str_replace(self, command: Mapping[str, Any]) -> Result:
        path = self._path(command["path"])
        old_raw: str = command["old_str"]
        if old_raw == "":
            return render("str_replace_empty")
        self._require_allowed(path)
        new_raw = self._policy(command["new_str"])

        def change(path: VirtualPath, content: str, crlf: bool) -> Tuple[str, Result]:
            old, new = (old_raw.replace("\r\n", "\n"), new_raw.replace("\r\n", "\n")) if crlf else (old_raw, new_raw)
            found = text.occurrences(content, old)
            echoed = clip(old_raw, self.limits.max_echo_chars)
            if not found:
                raise Refusal(render("str_replace_not_found", old_str=echoed, path=path.canonical))
            if len(found) > 1:
                lines = sorted({text.line_of(content, offset) for offset in found})
                raise Refusal(
                    render(
                        "str_replace_multiple",
                        old_str=echoed,
                        line_numbers=", ".join(str(n) for n in lines),
                    )
                )
            edit = text.replace_once(content, found[0], old, new)
            snippet = text.fit_numbered(
                text.snippet_lines(edit.text, edit.first_line, edit.last_line), self.limits.max_view_chars, True
            )
            head = render("str_replace_ok", path=path.canonical).output
            output = head + ("\n" + snippet.body if snippet.body else "")
            return edit.text, Result(output, False)

        return self._edit(path, "str_replace", change)

    def _insert(self, command: Mapping[str, Any]) -> Result:
        path = self._path(command["path"])
        line: int = command["insert_line"]
        self._require_allowed(path)
        insert_text = self._policy(command["insert_text"])

        def change(path: VirtualPath, content: str, crlf: bool) -> Tuple[str, Result]:
            n_lines = len(text.split_lines(content))
            if not 0 <= line <= n_lines:
                raise Refusal(render("insert_bad_line", insert_line=line, n_lines=n_lines))
            lines_text = insert_text.replace("\r\n", "\n") if crlf else insert_text
            return text.insert_lines(content, line, lines_text), render("insert_ok", path=path.canonical)

        return self._edit(path, "insert", change)

    # -- delete and rename --

    def _delete(self, command: Mapping[str, Any]) -> Result:
        path = self._path(command["path"])
        if path.is_root:
            return render("delete_root")
        try:
            with self.root.locked():
                entry = self.root.entry(path)
                if entry is None:
                    return render("delete_missing", path=path.canonical)
                self._require_allowed_tree(path, entry.kind)
                self.root.delete(path)
                if self.access is not None:
                    self.access.forget(path.canonical, is_dir=entry.kind == fs.DIR)
        except fs.Missing:
            return render("delete_missing", path=path.canonical)
        except fs.FsProblem as problem:
            return self._problem(problem, "delete", path)
        return render("delete_ok", path=path.canonical)

    def _rename(self, command: Mapping[str, Any]) -> Result:
        old = self._path(command["old_path"])
        new = self._path(command["new_path"])
        if old.is_root or new.is_root:
            return render("rename_root")
        names = {"old_path": old.canonical, "new_path": new.canonical}
        try:
            with self.root.locked():
                entry = self.root.entry(old)
                if entry is None:
                    return render("rename_missing", **names)
                if new.trailing_slash and entry.kind != fs.DIR:
                    return self._file_slash(command["new_path"])
                self._require_allowed_tree(old, entry.kind)
                self._require_allowed_tree(new, entry.kind)
                if old.parts == new.parts:
                    return render("rename_exists", **names)
                if entry.kind == fs.DIR and new.is_within(old):
                    return render("rename_into_self", **names)
                self.root.rename(old, new)
                if self.access is not None:
                    self.access.move(old.canonical, new.canonical, is_dir=entry.kind == fs.DIR)
        except fs.Exists:
            return render("rename_exists", **names)
        except fs.ParentNotDir as problem:
            return render("rename_parent_not_dir", parent=problem.parent.canonical, **names)
        except fs.Missing:
            return render("rename_missing", **names)
        except fs.FsProblem as problem:
            return self._problem(problem, "rename", old)
        return render("rename_ok", **names)


def _human_list(kinds: Sequence[str]) -> str:
    unique = list(dict.fromkeys(kinds))
    if len(unique) == 1:
        return unique[0]
    return ", ".join(unique[:-1]) + " and " + unique[-1]
