"""Reading a campaign's outputs in tests: the links of index.html, the JUnit schema."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import xmlschema

JUNIT_SCHEMA = xmlschema.XMLSchema(Path(__file__).resolve().parent.parent / "report" / "JUnit.xsd")


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [value for name, value in attrs if name == "href" and value]


def links(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.hrefs


def text_of(page: Path) -> str:
    """The page's text with tags removed and white space collapsed, as a reader sees it."""
    class Text(HTMLParser):
        parts: list[str] = []
        hidden = 0

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.hidden += tag in ("style", "script", "title")

        def handle_endtag(self, tag: str) -> None:
            self.hidden -= tag in ("style", "script", "title")

        def handle_data(self, data: str) -> None:
            if not self.hidden:
                self.parts.append(data)
    parser = Text()
    parser.parts = []
    parser.feed(page.read_text(encoding="utf-8"))
    return " ".join(" ".join(parser.parts).split())
