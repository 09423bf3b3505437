"""MemoryHandler: check the model's input, then run one thin command over a store (`store_protocol.Store`).

The order of checks is fixed and documented (D-INPUT-ORDER): input shape, parameters, mode, path
syntax, allow-list, then the store. Commands are rows of one table (`COMMANDS`); each command
function is short, and anything about where a name lives or whether it may be touched belongs to
the store (for the filesystem store, the kernel's walk), not here. The handler speaks only the
storage interface, so every store gives the same results, byte for byte, for the same memories.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections import abc
from typing import Any, Callable, ContextManager, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from . import _listing as listing
from . import _text as text
from . import _view as view
from . import problems, tool
from ._optional import required_module
from ._viewcache import ViewCache
from .directory import open_directory
from .limits import DEFAULT_LIMITS, Limits
from .messages import (
    KIND_INTEGER,
    KIND_RANGE,
    KIND_STRING,
    RULE_FILE_SLASH,
    TENANT_UNSUPPORTED,
    Result,
    clip,
    escape,
    io_reason,
    line_list,
    render,
)
from .paths import PathError, VirtualPath, is_addressable, parse_path
from .problems import DIR, FsProblem, Missing, TooBig
from .store_protocol import ReadFile, Store, TenantStore

SMALL_FILE_BYTES = 1024 * 1024  # views of files up to this size read them whole; larger ones stream
PARSE_CACHE_SIZE = 4096  # parsed paths remembered per handler (each at most max_path_bytes)
ADDRESSABLE_CACHE_SIZE = 16384  # names found on disk whose addressability a handler remembers
VIEW_CACHE_BYTES = 4 * 1024 * 1024  # remembered views per handler, file bytes and results together

# Parameter kinds (tool.py's): how to name the expected type in the message, and the check values must pass.
KIND_NAMES: Dict[str, str] = {tool.STRING: KIND_STRING, tool.INTEGER: KIND_INTEGER, tool.RANGE: KIND_RANGE}
Parameter = Tuple[str, str, bool, bool]  # (name, kind, required, bounded by max_file_bytes), checked in order


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_range(value: object) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(_is_int(v) for v in value)


_is_str: Callable[[object], bool] = str.__instancecheck__
KIND_CHECKS: Dict[str, Callable[[object], bool]] = {tool.STRING: _is_str, tool.INTEGER: _is_int, tool.RANGE: _is_range}

# What the walk met, for any command: the message that says so.
PROBLEM_MESSAGES: Dict[type, str] = {
    problems.IsLink: "path_symlink",
    problems.NotRegular: "path_not_regular",
    problems.HardLinked: "path_hard_linked",
}

# A content policy takes the text to be written and returns (text to write, kinds refused).
ContentPolicy = Callable[[str], Tuple[str, List[str]]]


class EarlyResult(Exception):
    """A finished result raised from deep inside a command, so commands stay straight-line."""

    def __init__(self, result: Result) -> None:
        super().__init__(result.output)
        self.result = result


class Command(NamedTuple):
    """One row of the command table."""

    parameters: Tuple[Parameter, ...]
    mutating: bool
    action: str  # the verb of the D-IO message: "Could not {action} {path}"
    run: Callable[[MemoryHandler, Mapping[str, Any]], Result]  # an unbound method: no handler cycle


class MemoryHandler:
    """The reference memory tool handler over one store: a real directory by default.

    `execute` never raises for anything a model can send: every outcome is a `Result`.
    """

    def __init__(
        self,
        root: Union[str, os.PathLike[str], Store],
        *,
        tenant: Optional[str] = None,
        limits: Union[Limits, Mapping[str, int]] = DEFAULT_LIMITS,
        read_only: bool = False,
        allow: Optional[Sequence[str]] = None,
        content_policy: Union[ContentPolicy, str, None] = None,
        portable_walk: bool = False,
        refuse_hard_links: bool = True,
        track_access: Optional[bool] = None,
        view_cache_bytes: int = VIEW_CACHE_BYTES,
    ) -> None:
        """Serve `root` as `/memories`: a directory (made if missing: the filesystem store `open_directory` gives)
        or a `store_protocol.Store` object, used as it is (the caller keeps it and closes it).

        `tenant` names whose memories these are (`store_protocol.tenant_name`; D-STORE-TENANT): the filesystem store
        keeps them in a folder of their own, another store gives its own `for_tenant(tenant)`.
        `limits` bounds every command (a `Limits`, or a mapping of its fields, the others keeping their
        defaults); `read_only` refuses every mutating command; `allow` is a list of glob patterns a file
        path below `/memories` must match; `content_policy` vets every text written (a callable, or the
        name of the built-in policy's action, "reject" or "redact": `refmem.policy.ContentPolicy`). The
        plain-data forms are what the conformance suite passes a `python:` factory, so a vendored copy's
        `MemoryHandler` is a target as it is; `portable_walk` forces the filesystem store's path-checking
        walk (see SECURITY.md); `track_access` keeps last-access records for `refmem prune` where the store
        keeps them (`store_protocol.AccessRecords`; None, the default: wherever it can, False: never, True: a directory
        gets them or `optional.MissingModule`, D-VENDOR-SET);
        `view_cache_bytes` bounds remembered views.
        """
        self._limits = Limits.from_mapping(limits)
        self.read_only = read_only
        self.allow = tuple(allow) if allow is not None else None
        self.content_policy = _content_policy(content_policy)
        self.refuse_hard_links = refuse_hard_links
        self.track_access = track_access is not False and not read_only
        wanted = (None if track_access is None else bool(track_access)) if self.track_access else False
        self.store, self._owns_store = _open_store(root, tenant, portable_walk, wanted)
        # A store that keeps access records is told of each view (store_protocol.AccessRecords, D-EXPIRY).
        self._record_use: Optional[Callable[[VirtualPath, ReadFile], None]] = (
            getattr(self.store, "record_use", None) if self.track_access else None
        )
        # A store that keeps history is told which command its mutations belong to (store_protocol.VersionedStore).
        self._acting: Optional[Callable[[str], ContextManager[None]]] = getattr(self.store, "acting", None)
        self._views = ViewCache(view_cache_bytes)  # 0: every view renders its page afresh
        # Parsing is pure and a model names the same few paths again and again: remember the answers
        # (refusals are not cached; they are rare and their messages cheap to rebuild).
        self._parse: Callable[[str], VirtualPath] = functools.lru_cache(maxsize=PARSE_CACHE_SIZE)(
            functools.partial(parse_path, limits=self._limits)
        )
        # Listings ask the same of every name they meet; keyed by the name alone.
        self._addressable: Callable[[str], bool] = functools.lru_cache(maxsize=ADDRESSABLE_CACHE_SIZE)(
            functools.partial(is_addressable, limits=self._limits)
        )

    @property
    def limits(self) -> Limits:
        """The bounds this handler was made with; fixed, since parsed paths and pages are remembered under them."""
        return self._limits

    def execute(self, command: object) -> Result:
        """Run one tool input exactly as the model sent it (any value) and return its `Result`.

        Never raises for anything a model can send: malformed input, refused paths and filesystem
        failures are error results, and anything unforeseen is the D-INTERNAL message.
        """
        try:
            return self._execute(command)
        except EarlyResult as early:
            return early.result
        except Exception:  # noqa: BLE001 - the promise is a result, never a traceback
            return render("internal_error")

    __call__ = execute

    def close(self) -> None:
        """Release the store this handler opened (its descriptors and locks; also done when the handler is
        garbage-collected). A store given to the handler is left to its owner."""
        if self._owns_store:
            self.store.close()

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
        spec = COMMANDS.get(name)
        if spec is None:
            return render("command_unknown", command=escape(name, self.limits.max_echo_chars))
        self._check_parameters(name, spec.parameters, command)
        if self.read_only and spec.mutating:
            return render("read_only", command=name)
        if spec.mutating and self._acting is not None:
            with self._acting(name):
                return spec.run(self, command)
        return spec.run(self, command)

    def _check_parameters(self, name: str, parameters: Tuple[Parameter, ...], command: Mapping[str, Any]) -> None:
        for parameter, kind, required, bounded in parameters:
            value = command.get(parameter)
            if value is None:
                if required:
                    raise EarlyResult(render("param_missing", name=parameter, command=name))
                continue
            if not KIND_CHECKS[kind](value):
                if kind == tool.RANGE:
                    raise EarlyResult(render("view_range_shape"))
                raise EarlyResult(render("param_type", name=parameter, kind=KIND_NAMES[kind], command=name))
            if kind == tool.STRING:
                if value.isascii():  # the common case: valid, one byte a character
                    size = len(value)
                else:
                    try:
                        size = len(value.encode("utf-8"))
                    except UnicodeEncodeError:
                        raise EarlyResult(render("param_not_unicode", name=parameter)) from None
                if bounded and size > self.limits.max_file_bytes:
                    raise EarlyResult(render("param_too_big", name=parameter, n=size, max=self.limits.max_file_bytes))

    # -- shared steps --

    def _path(self, raw: str) -> VirtualPath:
        try:
            return self._parse(raw)
        except PathError as error:
            raise EarlyResult(
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
            raise EarlyResult(render("not_allowed", path=path.canonical))

    def _require_allowed_file(self, path: VirtualPath) -> None:
        """D-ALLOW, for delete and rename: under an allow-list only allowed files are touched; a
        folder may hold files that are not allowed. The pattern is checked before the disk, so a
        refused name says nothing about what is there (D-INPUT-ORDER)."""
        if self.allow is None:
            return
        self._require_allowed(path)
        entry = self.store.entry(path)
        if path.is_root or (entry is not None and entry.kind == DIR):
            raise EarlyResult(render("not_allowed", path=path.canonical))

    def _problem(self, problem: FsProblem, command: str, path: VirtualPath) -> Result:
        """The messages every command shares for what the walk can meet."""
        for kind, key in PROBLEM_MESSAGES.items():
            if isinstance(problem, kind):
                return render(key, path=path.canonical)
        if isinstance(problem, TooBig):
            return render("file_too_big_to_edit", path=path.canonical, n=problem.size, max=self.limits.max_file_bytes)
        reason = io_reason(problem.code)
        return render("io_error", action=COMMANDS[command].action, path=path.canonical, reason=reason)

    def _policy(self, value: str) -> str:
        if self.content_policy is None:
            return value
        cleaned, refused = self.content_policy(value)
        if refused:
            raise EarlyResult(render("content_refused", what=_human_list(refused)))
        return cleaned

    def _encode_checked(self, path: VirtualPath, content: str) -> bytes:
        data = content.encode("utf-8")
        if len(data) > self.limits.max_file_bytes:
            raise EarlyResult(render("file_too_big", path=path.canonical, n=len(data), max=self.limits.max_file_bytes))
        return data

    # -- view --

    def _view(self, command: Mapping[str, Any]) -> Result:
        path = self._path(command["path"])
        view_range = command.get("view_range")
        if path.is_root:
            return self._view_dir(path, view_range)
        if self.allow is not None and not self._allowed(path):
            # D-ALLOW before the disk: a refused name reads the same whether it is there or not;
            # only a folder (which listings show anyway) is listed.
            entry = self.store.entry(path)
            if entry is not None and entry.kind == DIR:
                return self._view_dir(path, view_range)
            return render("not_allowed", path=path.canonical)
        try:
            opened = self.store.open_regular(path, self.refuse_hard_links)
            try:  # try/finally, not `with`: the commonest command's path (about 1,000 instructions fewer)
                rendered = self._show_file(path, opened, view_range)
            finally:
                opened.close()
        except problems.NotRegular as problem:
            if problem.kind == DIR:
                return self._view_dir(path, view_range)
            return self._problem(problem, "view", path)
        except UnicodeDecodeError:
            return render("not_utf8", path=path.canonical)
        except Missing:
            return render("view_missing", path=path.canonical)
        except FsProblem as problem:
            return self._problem(problem, "view", path)
        if self._record_use is not None and not rendered.is_error:
            try:  # bookkeeping never fails a view whose page is made (no `suppress` object: the commonest command)
                self._record_use(path, opened)
            except Exception:  # noqa: BLE001, S110  # nosec B110: a failed access record never fails the view
                pass
        return rendered

    def _view_dir(self, path: VirtualPath, view_range: Optional[Sequence[int]]) -> Result:
        if view_range is not None:
            return render("view_range_on_dir")
        limits = self.limits
        try:
            found, truncated = listing.list_tree(
                self.store,
                path, limits.max_listing_depth, limits.max_listing_entries, self._addressable
            )
        except Missing:
            return render("view_missing", path=path.canonical)
        except FsProblem as problem:
            return self._problem(problem, "view", path)
        shown = None if self.allow is None else (lambda parts: self._allowed(VirtualPath(path.parts + parts)))
        return view.listing(path.canonical, found, truncated, shown)

    def _show_file(self, path: VirtualPath, opened: ReadFile, view_range: Optional[Sequence[int]]) -> Result:
        """Small files are read whole (one call); larger ones are streamed in bounded memory.

        A small file's page is remembered with the bytes it was made from and reused only when the
        bytes just read are the same (see viewcache): the walk, the checks and the read still happen.
        """
        if opened.size > SMALL_FILE_BYTES:
            return view.streamed_page(path.canonical, opened.chunks(), view_range, self.limits)
        raw = opened.read_all()
        key = (path.parts, None if view_range is None else (view_range[0], view_range[1]))
        remembered = self._views.get(key, raw)
        if remembered is not None:
            return remembered
        result = view.file_page(path.canonical, raw.decode("utf-8"), view_range, self.limits)
        self._views.put(key, raw, result)
        return result

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
            with self.store.locked():
                self.store.write_new(path, data)
        except problems.Exists:
            return render("create_exists", path=path.canonical)
        except problems.ParentNotDir as problem:
            parent = VirtualPath(path.parts[: problem.depth]).canonical
            return render("create_parent_not_dir", path=path.canonical, parent=parent)
        except Missing:
            return render("create_parent_not_dir", path=path.canonical, parent=path.parent.canonical)
        except FsProblem as problem:
            return self._problem(problem, "create", path)
        return render("create_ok", path=path.canonical)  # no access record: the new file's mtime says it

    # -- str_replace and insert: read, change, write back under the lock --

    def _edit(self, path: VirtualPath, name: str, change: Callable[[str, bool], Tuple[str, Result]]) -> Result:
        """Read the file, let `change` turn its text into new text and a result, and write it back in
        place, all under the root's lock. A CRLF file is given with LF line ends (and `crlf` True)
        and keeps its CRLF line ends (D-STR-CRLF, D-INSERT-CRLF)."""
        missing = "str_replace_missing" if name == "str_replace" else "insert_missing"
        if path.is_root:
            return render(missing, path=path.canonical)
        try:
            with self.store.locked(), self.store.open_edit(path, self.limits.max_file_bytes) as edit:
                try:
                    content = edit.data.decode("utf-8")
                except UnicodeDecodeError:
                    return render("not_utf8", path=path.canonical)
                crlf = text.is_crlf(content)
                new_content, result = change(content.replace("\r\n", "\n") if crlf else content, crlf)
                if crlf:
                    new_content = new_content.replace("\n", "\r\n")
                edit.replace(self._encode_checked(path, new_content))
                return result  # no access record: the rewritten file's mtime says it
        except Missing:
            return render(missing, path=path.canonical)
        except FsProblem as problem:
            # The documentation: a folder "does not exist" for edits.
            if isinstance(problem, problems.NotRegular) and problem.kind == DIR:
                return render(missing, path=path.canonical)
            return self._problem(problem, name, path)

    def _str_replace(self, command: Mapping[str, Any]) -> Result:
        path = self._path(command["path"])
        old_raw: str = command["old_str"]
        if old_raw == "":
            return render("str_replace_empty")
        self._require_allowed(path)
        new_raw = self._policy(command["new_str"])
        limits = self.limits

        def change(content: str, crlf: bool) -> Tuple[str, Result]:
            return _replace_unique(path, content, old_raw, new_raw, crlf, limits)

        return self._edit(path, "str_replace", change)

    def _insert(self, command: Mapping[str, Any]) -> Result:
        path = self._path(command["path"])
        line: int = command["insert_line"]
        self._require_allowed(path)
        insert_text = self._policy(command["insert_text"])

        def change(content: str, crlf: bool) -> Tuple[str, Result]:
            n_lines = len(text.split_lines(content))
            if not 0 <= line <= n_lines:
                raise EarlyResult(render("insert_bad_line", insert_line=line, n_lines=n_lines))
            lines_text = insert_text.replace("\r\n", "\n") if crlf else insert_text
            return text.insert_lines(content, line, lines_text), render("insert_ok", path=path.canonical)

        return self._edit(path, "insert", change)

    # -- delete and rename --

    def _delete(self, command: Mapping[str, Any]) -> Result:
        path = self._path(command["path"])
        if path.is_root:
            return render("delete_root")
        try:
            with self.store.locked():
                self._require_allowed_file(path)
                self.store.delete(path)  # and its access records (D-EXPIRY)
        except Missing:
            return render("delete_missing", path=path.canonical)
        except FsProblem as problem:
            return self._problem(problem, "delete", path)
        return render("delete_ok", path=path.canonical)

    def _rename(self, command: Mapping[str, Any]) -> Result:
        old = self._path(command["old_path"])
        new = self._path(command["new_path"])
        if old.is_root or new.is_root:
            return render("rename_root")
        names = {"old_path": old.canonical, "new_path": new.canonical}
        try:
            with self.store.locked():
                self._require_allowed_file(old)
                self._require_allowed_file(new)
                entry = self.store.entry(old)
                if entry is None:
                    return render("rename_missing", **names)
                if new.trailing_slash and entry.kind != DIR:
                    return self._file_slash(command["new_path"])
                if old.parts == new.parts:
                    return render("rename_exists", **names)
                if entry.kind == DIR:
                    if new.is_within(old):
                        return render("rename_into_self", **names)
                    self._require_within_limits(old, new, names)
                self.store.rename(old, new)  # with its access records (D-EXPIRY)
        except problems.Exists:
            return render("rename_exists", **names)
        except problems.ParentNotDir as problem:
            return render("rename_parent_not_dir", parent=VirtualPath(new.parts[: problem.depth]).canonical, **names)
        except Missing:
            return render("rename_missing", **names)
        except FsProblem as problem:
            return self._problem(problem, "rename", old)
        return render("rename_ok", **names)

    def _require_within_limits(self, old: VirtualPath, new: VirtualPath, names: Mapping[str, str]) -> None:
        """D-RENAME-LIMITS: a folder moved must not carry any path past the depth or length limits,
        which every other command enforces on the paths it is given (so no command could reach
        what lies below, and deep trees are a cost for every walk)."""
        limits = self.limits
        room_depth = limits.max_depth - len(new.parts)
        room_bytes = limits.max_path_bytes - len(new.canonical.rstrip("/").encode("utf-8"))
        depth, longest = self.store.extent(old, room_depth)
        if depth > room_depth or longest > room_bytes:
            raise EarlyResult(
                render("rename_too_deep", max_depth=limits.max_depth, max_bytes=limits.max_path_bytes, **names)
            )


def _replace_unique(
    path: VirtualPath, content: str, old_raw: str, new_raw: str, crlf: bool, limits: Limits
) -> Tuple[str, Result]:
    """str_replace: the new text and the result, or an EarlyResult (in a CRLF file `\r\n` in the
    parameters stands for the `\n` of `content`, D-STR-CRLF).

    Linear in the file whatever `old_str` is (text.locate), with a bounded list of line numbers
    (D-STR-LINES): this runs under the root's lock.
    """
    old, new = (old_raw.replace("\r\n", "\n"), new_raw.replace("\r\n", "\n")) if crlf else (old_raw, new_raw)
    found = text.locate(content, old, limits.max_listed_lines)
    echoed = clip(old_raw, limits.max_echo_chars)
    if found.first == -1:
        raise EarlyResult(render("str_replace_not_found", old_str=echoed, path=path.canonical))
    if not found.unique:
        lines = line_list(found.lines, found.more)
        raise EarlyResult(render("str_replace_multiple", old_str=echoed, line_numbers=lines))
    edit = text.replace_once(content, found.first, old, new)
    snippet = text.fit_numbered(
        text.snippet_lines(edit.text, edit.first_line, edit.last_line), limits.max_view_chars, True
    )
    head = render("str_replace_ok", path=path.canonical).output
    return edit.text, Result(head + ("\n" + snippet.body if snippet.body else ""), False)


_VERBS_AND_RUNS: Dict[str, Tuple[str, Callable[[MemoryHandler, Mapping[str, Any]], Result]]] = {
    "view": ("read", MemoryHandler._view),
    "create": ("create", MemoryHandler._create),
    "str_replace": ("write", MemoryHandler._str_replace),
    "insert": ("write", MemoryHandler._insert),
    "delete": ("delete", MemoryHandler._delete),
    "rename": ("rename", MemoryHandler._rename),
}
"""What the handler adds to each command of tool.COMMANDS: the verb of its D-IO message and its function."""


def _parameters(command: tool.Command) -> Tuple[Parameter, ...]:
    return tuple((p.name, p.kind, p.required, p.role.is_text) for p in command.parameters)


COMMANDS: Dict[str, Command] = {
    command.name: Command(_parameters(command), command.mutating, *_VERBS_AND_RUNS[command.name])
    for command in tool.COMMANDS
}


def _open_store(
    root: Union[str, os.PathLike[str], Store], tenant: Optional[str], portable_walk: bool, track_access: Optional[bool]
) -> Tuple[Store, bool]:
    """The store a handler serves, and whether the handler opened it (and so closes it)."""
    if isinstance(root, (str, os.PathLike)):
        return open_directory(root, tenant=tenant, portable=portable_walk, track_access=track_access), True
    if not isinstance(root, Store):
        raise TypeError("MemoryHandler serves a directory path or a refmem.store_protocol.Store")
    if tenant is None:
        return root, False
    if not isinstance(root, TenantStore):
        raise TypeError(TENANT_UNSUPPORTED)
    return root.for_tenant(tenant), True


def _content_policy(value: Union[ContentPolicy, str, None]) -> Optional[ContentPolicy]:
    """A policy callable from what the handler was given: a callable as it is, an action name as the built-in
    detectors with that action."""
    if isinstance(value, str):
        policy = required_module("policy", "a content policy named by its action")
        built: ContentPolicy = policy.ContentPolicy(value)
        return built
    return value


def _human_list(kinds: Sequence[str]) -> str:
    unique = list(dict.fromkeys(kinds))
    if len(unique) == 1:
        return unique[0]
    return ", ".join(unique[:-1]) + " and " + unique[-1]
