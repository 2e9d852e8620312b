"""Every Markdown file of the repository links only to what the repository holds.

A user's clone is all they have: a relative link must resolve to a file or folder of the
repository (and a `#anchor` into a Markdown file to one of its headings); a link that leaves
the repository (`../`, an absolute path, a URL) or names the development notes kept outside it
is refused.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

# Development notes that live outside the repository: naming them sends a user nowhere.
OUTSIDE_NOTES = re.compile(r"\b(DESIGN|SCENARIOS|STYLE|KAFKA-NOTES)\.md\b|\bshared/|\bspec/history\.md\b")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def markdown_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
                            cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return sorted(REPO / name for name in listed if (REPO / name).exists())


def prose(text: str) -> str:
    """The text without code blocks and code spans (a link shown as code is not a link)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", markdown), re.MULTILINE)
    return {slug(h) for h in headings}


def problems(path: Path, markdown: str | None = None) -> list[str]:
    """What is wrong with the links of `path` (whose text is `markdown`, if given, else the file's)."""
    markdown = path.read_text() if markdown is None else markdown
    text = prose(markdown)
    found = []
    for target in LINK.findall(text) + REFERENCE.findall(text):
        where, _, anchor = target.partition("#")
        if re.match(r"^[a-z][a-z0-9+.-]*:", where) or where.startswith("/"):
            found.append(f"{target}: leaves the repository")
            continue
        resolved = (path.parent / where).resolve() if where else path
        if not resolved.is_relative_to(REPO):
            found.append(f"{target}: leaves the repository")
        elif resolved != path and not resolved.exists():
            found.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(
                markdown if resolved == path else resolved.read_text()):
            found.append(f"{target}: no heading #{anchor} in {resolved.relative_to(REPO)}")
    # Named in prose or in code, a file outside the repository sends a user nowhere.
    found += [f"names {m.group(0)!r}, which is not in the repository" for m in OUTSIDE_NOTES.finditer(markdown)]
    return found


def test_the_repository_has_markdown_to_check() -> None:
    names = {p.relative_to(REPO).as_posix() for p in markdown_files()}
    assert {"README.md", "docs/history.md", "docs/scenarios.md", "docs/spec.md"} <= names


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_link_stays_inside_the_repository_and_resolves(path: Path) -> None:
    assert problems(path) == []


def test_the_checker_finds_what_it_must() -> None:
    page = "# Probe\n[a](history.md) [b](nothing.md) [c](../../outside.md) [d](https://example.org)\n" \
           "[e](history.md#no-such-heading) [f](history.md#the-verdict) [g](#probe) [g2](#nope) " \
           "see `shared/SCENARIOS.md`\n`[h](nothing.md)`\n```\n[i](nothing.md)\n```\n[r]: missing.md\n"
    assert problems(REPO / "docs" / "probe.md", page) == [
        "nothing.md: no such file", "../../outside.md: leaves the repository",
        "https://example.org: leaves the repository",
        "history.md#no-such-heading: no heading #no-such-heading in docs/history.md",
        "#nope: no heading #nope in docs/probe.md", "missing.md: no such file",
        "names 'shared/', which is not in the repository", "names 'SCENARIOS.md', which is not in the repository"]
