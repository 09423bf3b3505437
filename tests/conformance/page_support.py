"""An HTML page read back with html.parser: table rows and cell classes, anchors, links, and anything that fetches."""

from __future__ import annotations

import pathlib
from html.parser import HTMLParser
from typing import Any, Dict, List, Optional, Tuple


class Page(HTMLParser):
    """Rows of every table by the id of their table or row (texts, and the class of each cell), the ids on the
    page, its in-page links, the ids of failure details, and anything that could fetch or run."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.failures: List[str] = []
        self.pre: List[str] = []
        self.rows: Dict[str, List[str]] = {}
        self.row_classes: Dict[str, List[str]] = {}
        self.table_rows: Dict[str, List[List[str]]] = {}
        self.fetching: List[Tuple[str, Any]] = []
        self.ids: List[str] = []
        self.links: List[str] = []
        self.details: List[str] = []
        self.meta: List[Dict[str, Optional[str]]] = []
        self.text: List[str] = []
        self._table: Optional[str] = None
        self._row: Optional[List[str]] = None
        self._classes: Optional[List[str]] = None
        self._row_id: Optional[str] = None
        self._cell: Optional[List[str]] = None
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        found = dict(attrs)
        if "id" in found:
            self.ids.append(str(found["id"]))
        link = found.get("href")
        if link is not None and link.startswith("#") and tag == "a":
            self.links.append(link[1:])
        elif tag in ("script", "link", "img", "iframe", "object", "embed") or any(
            name in ("src", "href", "srcset", "action") or name.startswith("on") for name in found
        ):
            self.fetching.append((tag, found))
        if tag == "meta":
            self.meta.append(found)
        if tag == "details":
            self.details.append(str(found.get("id", "")))
            if found.get("class") == "failure":
                self.failures.append(str(found["id"])[len("case-") :])
        if tag == "table":
            self._table = found.get("id")
        if tag == "tr":
            self._row, self._classes, self._row_id = [], [], found.get("id")
        if tag in ("td", "th"):
            self._cell = []
            if self._classes is not None:
                self._classes.append(found.get("class") or "")
        if tag == "pre":
            self._in_pre = True
            self.pre.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "tr" and self._row is not None:
            if self._row_id:
                self.rows[self._row_id] = self._row
                self.row_classes[self._row_id] = self._classes or []
            self.table_rows.setdefault(self._table or "", []).append(self._row)
            self._row = None
        if tag == "pre":
            self._in_pre = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._in_pre:
            self.pre[-1] += data


def read(path: pathlib.Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page
