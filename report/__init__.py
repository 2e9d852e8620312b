"""The reports of a finished run: report.html, junit.xml and the text summary.

Reads only the files of a run folder (spec.yaml, history/, verdict.json);
never imports the workloads or the nemesis, and of the checker only the facts
it owns (the anomaly names, the verdict file, how a fault's start and stop
pair up), never its engines, so a run copied from anywhere can be reported on
again. The split brains it shows are checkers.facts', the ones a scenario's
expectation is held to.

- `render_report(run_dir)` writes run_dir/report.html (self-contained, deterministic).
- `render_junit(target, cases=None)` writes junit.xml: one case per scenario configuration
  (`checkers.configuration_result.ConfigurationResult`), or for a lone run folder one case judged by its verdict.
- `summary(run_dir)` is the text `show` prints.
"""

from __future__ import annotations

from report.errors import ReportError
from report.html import render_report
from report.junit import case_from_run, junit_xml, render_junit, render_junit_cases, with_run
from report.summary import summary

__all__ = ["ReportError", "case_from_run", "junit_xml", "render_junit", "render_junit_cases", "render_report",
           "summary", "with_run"]
