"""The run manifest's format (`RUN_DIR/run.json`, docs/run-manifest.md): its schema version and its instants.

The manifest is written by the harness (harness.manifest, from the spec) and
read without it: the results lake, campaigns, synthetic runs for the lake's
tests and benchmarks. What writers and readers must agree on lives here, below
all of them; where the file is, is `RunFolder.manifest`.
Must never: import the spec or the harness (readers below the harness use it).
"""

from __future__ import annotations

import datetime as dt

# Changes with any change to docs/run-manifest.md.
SCHEMA_VERSION = 1


def iso_utc(epoch_s: float) -> str:
    """An instant as ISO 8601 UTC with milliseconds, e.g. 2026-11-23T16:40:01.123Z."""
    return dt.datetime.fromtimestamp(epoch_s, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
