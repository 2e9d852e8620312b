"""Entry point of ``python -m checkers``; see checkers.cli."""

from __future__ import annotations

import sys

from checkers.cli import main

if __name__ == "__main__":
    sys.exit(main())
