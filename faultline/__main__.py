"""`python -m faultline`: the command line (faultline/cli.py), exiting with its status.

Must never: do anything but hand the arguments to `faultline.cli.main`.
"""

from __future__ import annotations

import sys

from faultline.cli import main

sys.exit(main())
