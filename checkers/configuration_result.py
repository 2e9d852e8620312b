"""One configuration's result: what a scenario expected of one of its configurations, what the run showed.

The one record of it. The scenario runner makes one per configuration it ran (`harness.scenario`),
`report` makes one from a run folder's verdict.json (`report.junit.case_from_run`), the
campaign one per case from its attempts (`campaign.outputs.junit_case`), and junit.xml is
written from these records only (`report.junit.junit_xml`), one <testcase> each.

It sits here, beside the verdict document it reads (`checkers.verdict`: the verdict, its
``expectation``, the exit statuses), because every layer that holds a configuration's result may
import the checker's package and nothing it imports: the run flow, the report and the campaign
reach it without an arrow towards each other. It is plain data and imports nothing of the project.
Must never: read a file or decide an outcome (its makers do; it only carries what they found).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from pathlib import Path


@dataclass(frozen=True)
class ConfigurationResult:
    """One scenario configuration's result, as junit.xml shows it (one <testcase>).

    ``passed`` is True (the run showed what was expected), False (it did not: a <failure>) or None
    (no verdict could be reached, the harness failed or the verdict is unknown: an <error>).
    ``inconclusive`` says why a run that did not pass is not a failure either: its expectation's
    precondition was never shown (a <skipped>); empty otherwise.
    ``expected`` and ``observed`` are one line each; ``details`` is any further text for the
    failure's body. ``run_dir`` is the configuration's run folder, where there is one;
    ``started_ns`` when its run began (a suite's timestamp is its earliest case's); ``status`` the
    exit status its run reached (`checkers.verdict`'s EXIT_*: 3 the harness failed), None where
    the record was not made by the run (read back from files, or a campaign's case).
    """

    scenario: str
    configuration: str
    expected: str
    observed: str
    passed: bool | None
    seconds: float
    _: KW_ONLY
    details: str = ""
    run_dir: Path | None = None
    started_ns: int | None = None
    status: int | None = None
    inconclusive: str = ""
