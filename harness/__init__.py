"""faultline's orchestration: one run from spec to verdict (spec, run, scenario, batch, recover, verdicts), and the CLI.

The command line (`cli`, `__main__`: `python -m harness`) sits above every room and hands each
subcommand to its owner: runs here, campaigns to `campaign/`, reports to `report/`, the Spark
daemons to `spark_analysis/`. The cluster runtimes and the Kafka lifecycle live in `testbed/`;
the layers and what each may import: docs/architecture.md.
"""
