"""What a view shows: a file's numbered page or a folder's listing, built from what the store read. Pure.

One page builder (`file_page`) serves every file view: whole small files take a one-join fast path
(`text.number_whole`), a whole file in memory that overflows the page numbers only the head that can
reach it (`text.whole_page`), everything else a window of lines (`text.window_from_text` for bytes in
memory, `text.read_window` for a streamed large file) cut to the character budget.
"""

from __future__ import annotations

from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from . import _text as text
from .limits import Limits
from .messages import Result, render
from .problems import DIR
from .store_protocol import Listed

DIR_SIZE = "4.0K"  # D-VIEW-DIR-SIZE
ViewRange = Optional[Sequence[int]]


def _bounds(view_range: ViewRange) -> Tuple[int, int]:
    return (view_range[0], view_range[1]) if view_range is not None else (1, -1)


def file_page(canonical: str, content: str, view_range: ViewRange, limits: Limits) -> Result:
    """The page for a file whose text is in memory."""
    start, end = _bounds(view_range)
    if view_range is None:
        whole = text.number_whole(content, limits.max_view_chars)
        if whole is not None and whole[1] <= limits.max_lines:
            header = render("view_file_header", path=canonical).output
            return Result(header + "\n" + whole[0] if whole[1] else header, False)
        paged = text.whole_page(content, limits.max_view_chars)
        if paged is not None:
            n_lines, body = paged
            if n_lines > limits.max_lines:
                return render("view_too_many_lines", path=canonical)
            return numbered_page(canonical, body, n_lines, end)
    window = text.window_from_text(content, start, None if end == -1 else end, limits.max_view_chars)
    return window_page(canonical, window, view_range, limits)


def streamed_page(canonical: str, chunks: Iterable[bytes], view_range: ViewRange, limits: Limits) -> Result:
    """The page for a file too large to hold: its bytes are streamed through a bounded window."""
    start, end = _bounds(view_range)
    window = text.read_window(chunks, max(start, 1), None if end == -1 else end, limits.max_view_chars)
    return window_page(canonical, window, view_range, limits)


def window_page(canonical: str, window: text.WindowResult, view_range: ViewRange, limits: Limits) -> Result:
    start, end = _bounds(view_range)
    n_lines = window.n_lines
    if n_lines > limits.max_lines:
        return render("view_too_many_lines", path=canonical)
    if view_range is not None:
        shown_range = f"[{start}, {end}]"
        if not 1 <= start <= n_lines:
            return render("view_range_start", view_range=shown_range, start=start, n_lines=n_lines)
        if end > n_lines:
            return render("view_range_end_past", view_range=shown_range, end=end, n_lines=n_lines)
        if end != -1 and end < start:
            return render("view_range_end_before", view_range=shown_range, end=end, start=start)
    body = text.fit_numbered(window.lines, limits.max_view_chars, window.complete)
    return numbered_page(canonical, body, n_lines, end)


def numbered_page(canonical: str, body: text.NumberedBody, n_lines: int, end: int) -> Result:
    """The header, the numbered lines and the note that says how to see what the page left out."""
    parts = [render("view_file_header", path=canonical).output]
    if body.body:
        parts.append(body.body)
    last_requested = n_lines if end == -1 else end
    if body.cut_line is not None:
        number, length, shown = body.cut_line
        if number >= last_requested:
            parts.append(render("view_last_line_cut", n=number, length=length, shown=shown).output)
        else:
            parts.append(render("view_line_cut", n=number, length=length, shown=shown, next=number + 1, end=end).output)
    elif body.last_shown < last_requested and n_lines > 0:
        parts.append(
            render("view_truncated", last=body.last_shown, n_lines=n_lines, next=body.last_shown + 1, end=end).output
        )
    return Result("\n".join(parts), False)


def listing(
    canonical: str, found: List[Listed], truncated: bool, shown: Optional[Callable[[Tuple[str, ...]], bool]] = None
) -> Result:
    """A folder's listing: the folder, then its folders and files; `shown` filters files (allow-list)."""
    lines = [render("view_dir_header", path=canonical).output, f"{DIR_SIZE}\t{canonical}"]
    for item in found:
        relative = "/".join(item.parts)
        if item.kind == DIR:
            lines.append(f"{DIR_SIZE}\t{canonical}/{relative}/")
        elif shown is None or shown(item.parts):
            lines.append(f"{text.human_size(item.size)}\t{canonical}/{relative}")
    if truncated:
        lines.append(render("listing_truncated", n=len(found)).output)
    return Result("\n".join(lines), False)
