"""Readable text from HTML with the stdlib parser: no lxml, no BeautifulSoup, bounded work."""

from __future__ import annotations

import re
from html.parser import HTMLParser

SKIPPED_TAGS = frozenset({"script", "style", "noscript", "head", "svg", "template", "iframe"})
BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
        "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table",
        "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
_SPACES = re.compile(r"[ \t\f\v\r\u00a0]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


class ReadableTextParser(HTMLParser):
    """Collects visible text; stops collecting once `budget` characters are gathered (`full`)."""

    def __init__(self, budget: int) -> None:
        super().__init__(convert_charrefs=True)
        self.budget = budget
        self.collected = 0
        self._parts: list[str] = []
        self._skipping: list[str] = []  # open skipped elements, innermost last
        self._pre_depth = 0  # inside <pre>, source line breaks are content

    @property
    def full(self) -> bool:
        return self.collected >= self.budget

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self._skipping.clear()  # <body> closes an unterminated <head>
            return
        if tag in SKIPPED_TAGS:
            self._skipping.append(tag)
            return
        if tag == "pre":
            self._pre_depth += 1
        if tag in BLOCK_TAGS:
            self._parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in BLOCK_TAGS:
            self._parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS:
            if tag in self._skipping:
                index = len(self._skipping) - 1 - self._skipping[::-1].index(tag)
                del self._skipping[index:]
            return
        if tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)
        if tag in BLOCK_TAGS:
            self._parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skipping or self.full:
            return
        data = data[: self.budget - self.collected]
        if not self._pre_depth:
            data = data.replace("\r", " ").replace("\n", " ")  # HTML line breaks are just spaces
        self._parts.append(data)
        self.collected += len(data)

    def text(self) -> str:
        """The collected text with whitespace collapsed and at most one blank line between blocks."""
        raw = "".join(self._parts)
        lines = [_SPACES.sub(" ", line).strip() for line in raw.split("\n")]
        joined = "\n".join(lines)
        return _BLANK_LINES.sub("\n\n", joined).strip()


def html_to_text(html: str, budget: int) -> str:
    """Extract readable text from a whole HTML string (convenience for tests and small pages)."""
    parser = ReadableTextParser(budget)
    parser.feed(html)
    parser.close()
    return parser.text()
