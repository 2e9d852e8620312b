"""Where the harness keeps things on this machine: the repo, the Kafka cache, the active-cluster pointer."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(os.environ.get("FAULTLINE_RESULTS", REPO_ROOT / "results"))
CACHE_DIR = Path(os.environ.get("FAULTLINE_CACHE", Path.home() / ".cache" / "faultline"))
# One machine runs one cluster at a time; this file names it (run dir and prefix).
ACTIVE_FILE = Path(os.environ.get("FAULTLINE_ACTIVE", "/run/faultline/active.json"))
POM = REPO_ROOT / "build" / "pom.xml"
