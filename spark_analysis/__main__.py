"""`python -m spark_analysis`: see spark_analysis.cli."""

import sys

from spark_analysis.cli import main

sys.exit(main())
