"""Every documented command that needs root shows `sudo`, and none that needs no root does.

A command is a line of a code block in the Markdown files that starts with `python -m harness`,
`.venv/bin/python -m harness` or `faultline`, or is a make target that installs or runs a cluster (`make setup`,
`make test`, `make test-<scenario>`, `make nightly`; not `make test-fast`), or such a code span with arguments
after its subcommand (one to type; a span that only names the command, as in "`harness run` reads every file
first", is prose). The commands that make or touch a
cluster (`run`, `cluster`, `clean`, `recover`, `campaign` unless `--plan` or `merge`) refuse without root
(tests/test_root.py holds that); the ones that only read (`show`, `report`, `list`, `compose`, `campaign --plan`,
`campaign merge`, `--version`) must not be shown with sudo, so nobody runs them as root for nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docs.test_links import markdown_files

FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
COMMAND = re.compile(r"^(?P<sudo>sudo\s+)?(?:\S*python3?\s+-m\s+harness|faultline)\s+(?P<rest>.*)$")
# The make targets that install packages or run a cluster (every test target but test-fast, nightly).
MAKE = re.compile(r"^(?P<sudo>sudo\s+)?make\s+(?P<target>setup|test(?!-fast\b)(-[a-z0-9-]+)?|nightly|chaos-quick)(\s|$)")
COMMAND_WORDS = re.compile(r"^(sudo\s+)?(\S*python3?\s+-m\s+harness|faultline|make)\s+")
NEEDS_ROOT = ("run", "cluster", "clean", "recover", "campaign")


def needs_root(rest: str) -> bool | None:
    """Whether `harness REST` needs root; None when REST names no subcommand (prose about the CLI as a whole)."""
    words = rest.split()
    if not words or not re.fullmatch(r"[a-z-]+", words[0]):
        return None
    if words[0] == "campaign":
        return not ("--plan" in words or (len(words) > 1 and words[1] == "merge"))
    return words[0] in NEEDS_ROOT


def commands(markdown: str) -> list[str]:
    """Each code line of `markdown`, and each code span with arguments after its subcommand, as written."""
    found = [line.strip() for block in FENCE.findall(markdown) for line in block[1].splitlines()]
    prose = FENCE.sub("", markdown)
    spans = [span.strip() for span in CODE_SPAN.findall(prose)]
    found += [span for span in spans if len(COMMAND_WORDS.sub("", span).split()) > 1]
    return found


def wrong(markdown: str) -> list[str]:
    said = []
    for text in commands(markdown):
        if (make := MAKE.match(text)) is not None:
            if not make["sudo"]:
                said.append(f"{text}: needs root, shown without sudo")
            continue
        if (command := COMMAND.match(text)) is None:
            continue
        root = needs_root(command["rest"])
        if root and not command["sudo"]:
            said.append(f"{text}: needs root, shown without sudo")
        elif root is False and command["sudo"]:
            said.append(f"{text}: needs no root, shown with sudo")
    return said


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_documented_command_shows_sudo_where_it_needs_root(path: Path) -> None:
    assert wrong(path.read_text()) == []


def test_a_command_without_its_sudo_is_caught() -> None:
    text = ("Run `python -m harness run scenarios/smoke.yaml`, then `sudo python -m harness show results/x` and\n"
            "`make test` is long; `sudo make test-fast` needs none; `python -m harness run` reads every file first.\n"
            "```sh\nmake setup\nsudo .venv/bin/python -m harness campaign campaigns/quick.yaml\n"
            ".venv/bin/python -m harness campaign campaigns/quick.yaml --plan\n```\n")
    assert wrong(text) == ["make setup: needs root, shown without sudo",
                           "python -m harness run scenarios/smoke.yaml: needs root, shown without sudo",
                           "sudo python -m harness show results/x: needs no root, shown with sudo"]
