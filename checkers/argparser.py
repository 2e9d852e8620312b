"""The project's one `argparse.ArgumentParser`: a usage error exits 3, not argparse's 2.

Every command line of the project (``python -m harness``, ``python -m checkers``,
the image builder, the benchmarks) parses with it, because in this project 2
means "unknown verdict" and 3 means "bad input or the harness failed"
(checkers.verdict's exit statuses). It lives beside those statuses, at the
bottom of the layers, so any command can import it. Must never: exit with any
status but EXIT_FAILED on bad usage, or print more than the usage and one line.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from checkers.verdict import EXIT_FAILED


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, exiting EXIT_FAILED (3) on a usage error; sub-parsers made from it do the same."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_FAILED, f"{self.prog}: error: {message}\n")
