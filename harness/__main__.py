"""`python -m harness`: the same command line as `python -m faultline` and `faultline` (faultline/cli.py).

Nothing imports this module; the layer test counts it with the command line.
Must never: do anything but hand the arguments to `faultline.cli.main` and exit with its status.
"""

from __future__ import annotations

import sys

from faultline.cli import main

sys.exit(main())
