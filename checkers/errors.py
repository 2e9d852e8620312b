"""The checker's exceptions.

`HistoryError` means the input cannot be read as spec/history.md describes
(exit status 3, no verdict). Anything else raised inside an engine becomes a
verdict of "unknown" with the reason; it never crashes the CLI and never
passes silently.
"""

from __future__ import annotations


class CheckerError(Exception):
    """Base of every error the checker raises on purpose."""


class TooLarge(CheckerError):
    """The history is larger than the engine asked for can judge on this machine (checkers.auto); exit
    status 3, nothing read or judged. ``str(exc)`` is one line: the history, its size, the memory, what to use."""


class HistoryError(CheckerError):
    """Unreadable or malformed history.

    ``str(exc)`` is one line naming the file, the line (JSONL) or column
    (Parquet), and the problem.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}".replace("\n", " "))
