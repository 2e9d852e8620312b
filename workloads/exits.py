"""Exit statuses of a workload process, as the harness reads them."""

from __future__ import annotations

DONE = 0  # ran until stopped (or, for a drain, read every partition to its high watermark)
FAILED = 1  # bad config, a fatal client error, or a bug: the run cannot trust this process
DRAIN_INCOMPLETE = 2  # the drain journaled what it read but did not reach every high watermark in time
USAGE = 3  # not one argument (a config file): the project's usage-error status, as every CLI of it
FENCED = 4  # a transactional producer with `fenced: exit`, fenced by a newer instance of its transactional.id
