"""The harness's one exception tree.

Every failure the harness itself can report is a `HarnessError`; the CLI turns
each into a one-line message and an exit status (DESIGN.md: 3 means the
harness failed or was given bad input). Third-party errors are mapped into
this tree with `raise ... from exc` where they cross a module boundary.
"""

from __future__ import annotations

# The one exit-status map is the checker's (0 valid, 1 invalid, 2 unknown, 3 failed); importing it
# pulls in no engine (see checkers/__init__.py).
from checkers.verdict import EXIT_FAILED


class HarnessError(Exception):
    """Base of every error the harness reports; `exit_status` is what the CLI exits with."""

    exit_status = EXIT_FAILED


class UsageError(HarnessError):
    """Bad command-line input: an unknown option, a bad value, a missing privilege."""


class SpecError(HarnessError):
    """A test spec that cannot run: unknown key, bad value, a combination Kafka refuses."""


class RuntimeFailure(HarnessError):
    """The runtime could not create, signal or remove a host, link or process."""


class ClusterBusy(HarnessError):
    """A cluster is already running; a second one is refused."""


class ClusterError(HarnessError):
    """Kafka or ZooKeeper did not reach or keep the state the harness waited for."""


class DistributionError(HarnessError):
    """The requested Kafka version is neither cached nor fetchable."""


class FaultError(HarnessError):
    """A fault could not be applied or undone."""


class WorkloadError(HarnessError):
    """A workload process died or misbehaved; the run cannot be trusted."""


def yaml_problem(path: object, exc: Exception) -> str:
    """A YAML parse error in one line: the file, the line where it broke (when known) and the problem."""
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    return f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}"
