"""The top of faultline: the command line (`cli`, `python -m faultline`, the `faultline` script) and the
API an application team's own pytest suite uses (`testing.FaultlineCluster`).

Nothing in the project imports this package (only tests do): it sits over every layer
(docs/architecture.md). `python -m harness` is a thin entry point into `faultline.cli`.
Must never: hold logic a run, a campaign or a report needs; those live in their own layers.
"""
