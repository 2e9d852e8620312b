"""The test bed: hosts (addressing, runtimes, the run's state file) and Kafka + ZooKeeper provisioned on them.

The floor of the project's layers: `nemesis/` and `workloads/` stand on it,
`harness/` (the CLI, runs, verdicts, reports) on all three. Must never import
from `harness/`, `nemesis/` or `workloads/`.
"""
